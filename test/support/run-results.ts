// What an engine run did and what the stack then holds, read without the
// Automation API's three CLI processes after each run (two `pulumi stack
// output`, each decrypting with the passphrase, and a `pulumi stack history`):
// - the change counts from the engine's own summary event of the run (the same
//   counts the history entry records), heard while the run lasts;
// - the stack's outputs from its state, read as the product reads it
//   (readStateWithSecrets: one `pulumi stack export`, secrets decrypted in this
//   process), a secret output marked as the Automation API marks it.
// The runs themselves are the same commands (engine/pulumi-cli/run-only.ts).
import type { DestroyOptions, EngineEvent, OutputMap, RefreshOptions, Stack, UpOptions } from "@pulumi/pulumi/automation";
import { runOnly } from "../../provider/automation/engine/pulumi-cli";
import { readStateWithSecrets } from "../../provider/automation/engine/state";

/** Pulumi's key of a secret envelope, and its value for a secret (sdk/go/common/resource/sig). */
const SIG_KEY = "4dabf18193072939515e22adb298388d";
const SECRET_SIG = "1b47061264138c4ac30d75fd1eb44270";

export interface RunChanges {
  readonly summary: { readonly resourceChanges: Record<string, number> };
}

type Run<O> = (stack: Pick<Stack, "up" | "refresh" | "destroy">, options: O) => Promise<unknown>;

async function withChanges<O extends { onEvent?: (event: EngineEvent) => void }>(stack: Stack, options: O, run: Run<O>): Promise<RunChanges> {
  let changes: Record<string, number> | undefined;
  await run(runOnly(stack), {
    ...options,
    onEvent: (event: EngineEvent) => {
      options.onEvent?.(event);
      if (event.summaryEvent) changes = { ...event.summaryEvent.resourceChanges } as Record<string, number>;
    },
  });
  if (changes === undefined) throw new Error("the engine ended without its summary event");
  return { summary: { resourceChanges: changes } };
}

/** `stack.up(options)`, its change counts from the engine's summary event. */
export function upChanges(stack: Stack, options: UpOptions = {}): Promise<RunChanges> {
  return withChanges(stack, options, (s, o) => s.up(o));
}

/** `stack.refresh(options)`, its change counts from the engine's summary event. */
export function refreshChanges(stack: Stack, options: RefreshOptions = {}): Promise<RunChanges> {
  return withChanges(stack, options, (s, o) => s.refresh(o));
}

/** `stack.destroy(options)`, its change counts from the engine's summary event. */
export function destroyChanges(stack: Stack, options: DestroyOptions = {}): Promise<RunChanges> {
  return withChanges(stack, options, (s, o) => s.destroy(o));
}

/** The stack's outputs as `stack.outputs()` gives them (value, and whether it is a secret), from its state. */
export async function stackOutputs(stack: Stack): Promise<OutputMap> {
  const { deployment } = await readStateWithSecrets(stack);
  const resources = (deployment as { resources?: Array<{ type: string; outputs?: Record<string, unknown> }> }).resources ?? [];
  const root = resources.find((resource) => resource.type === "pulumi:pulumi:Stack");
  const outputs: OutputMap = {};
  for (const [key, value] of Object.entries(root?.outputs ?? {})) {
    const envelope = value as Record<string, unknown> | null;
    const secret = envelope !== null && typeof envelope === "object" && envelope[SIG_KEY] === SECRET_SIG;
    outputs[key] = secret ? { value: JSON.parse(String(envelope.plaintext)) as unknown, secret: true } : { value, secret: false };
  }
  return outputs;
}

/** `stack.up(options)` as the Automation API returns it: change counts and the stack's outputs after it. */
export async function upWithOutputs(stack: Stack, options: UpOptions = {}): Promise<RunChanges & { readonly outputs: OutputMap }> {
  const changes = await upChanges(stack, options);
  return { ...changes, outputs: await stackOutputs(stack) };
}
