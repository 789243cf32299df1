// Drives an example (a real on-disk Pulumi program under examples/) through
// the Automation API against a fake server started for it, on a temporary file
// backend, asserting Pulumi's program-test invariants: preview -> up -> preview
// with no changes -> refresh with no changes -> edit steps with the expected
// actions -> export/import round-trip -> destroy -> server and state empty.
// A preview with no changes follows every up once, before the next change: the
// one after the last up is the preview after the export/import round-trip (with
// nothing changed in between, it shows the same: a diff there fails it just the
// same), so it runs once there rather than twice in a row.
// The stack is the testing entry's (createTestStack with the example's directory,
// as a user tests their own project); the example's config names the server.
// The outputs a verify reads are the last up's (its result holds them); refresh and destroy skip the
// history read, as a TestStack's do.
import type { ConfigMap, OutputMap, Stack } from "@pulumi/pulumi/automation";
import path from "node:path";
import { expect, inject } from "vitest";
import { type ApiKeyConfig, type ChangeCounts, createTestStack, type FakeServer, startEmulator, trackChanges } from "../../testing";
import { REPO_ROOT } from "./pulumi-env";
import { readStoredState } from "./user-group-stack";

export type { ChangeCounts };

export interface ExampleContext {
  readonly server: FakeServer;
  readonly stack: Stack;
  outputs(): Promise<OutputMap>;
}

export interface EditStep {
  readonly description: string;
  /** Config to set (path syntax allowed) before the step. */
  readonly config: ConfigMap;
  /** What the preview and the up of this step must do to the groups. */
  readonly expect: ChangeCounts;
  readonly verify?: (context: ExampleContext) => Promise<void>;
}

export interface ExampleSpec {
  /** Folder name under examples/. */
  readonly example: string;
  readonly apiKeys: ApiKeyConfig[];
  /** Stack config for the first up, given the server's URL. Keys may use path syntax (`a.b`). */
  readonly config: (server: FakeServer) => ConfigMap;
  readonly envVars?: (server: FakeServer) => Record<string, string>;
  /** Runs against the server before anything else (e.g. groups to adopt). */
  readonly setup?: (server: FakeServer) => Promise<void>;
  /** Groups the first up creates. */
  readonly creates: number;
  readonly verifyUp?: (context: ExampleContext) => Promise<void>;
  readonly edits?: readonly EditStep[];
}

function expectCounts(actual: ChangeCounts, expected: ChangeCounts, what: string): void {
  const pick = (c: ChangeCounts) =>
    Object.fromEntries((["create", "update", "replace", "delete"] as const).map((k) => [k, c[k] ?? 0]));
  expect(pick(actual), what).toEqual(pick(expected));
}

/** Runs the whole lifecycle of one example; resolves when the server is empty again. */
export async function runExampleLifecycle(spec: ExampleSpec): Promise<void> {
  const emulator = await startEmulator({ reuse: false, server: { apiKeys: spec.apiKeys } });
  const server = emulator.server!;
  try {
    await spec.setup?.(server);
    // A copy under the repository: the program resolves @pulumi/pulumi and
    // pulumi-user-groups from the repository's node_modules, as after `npm install`.
    // Type-checking the examples is `npm run typecheck`'s job; here ts-node only transpiles (createTestStack's default).
    await using testStack = await createTestStack({
      projectDir: path.join(REPO_ROOT, "examples", spec.example),
      stackName: "test",
      emulator,
      credentials: "none",
      config: spec.config(server),
      envVars: spec.envVars?.(server) ?? {},
      workRoot: path.join(REPO_ROOT, ".work"),
      pulumiBinDir: inject("pulumiBinDir"),
      isolatedPulumiHome: true,
      passphrase: "test-passphrase",
    });
    const { stack } = testStack;
    // The outputs as the last up left them: its result holds them (read by the up itself), so asking the stack again
    // (two CLI processes, one decrypting) would only read the same. Nothing runs between an up and its verify.
    let outputs: OutputMap = {};
    const context: ExampleContext = { server, stack, outputs: () => Promise.resolve(outputs) };
    // Refresh and destroy as the TestStack runs them: no read of the last history entry once the engine has ended
    // (its summary is not used here; one CLI process less each).
    const quiet = Object.create(stack, { info: { value: () => Promise.resolve(undefined) } }) as Stack;

    // Previews through the Stack itself (a TestStack's preview would also read the outputs: one more engine command).
    const before = server.groups();
    const preview = trackChanges();
    await stack.preview({ onEvent: preview.onEvent });
    expectCounts(preview.counts(), { create: spec.creates }, "first preview");
    expect(server.groups(), "a preview changes nothing on the server").toEqual(before);

    const up = await testStack.up();
    outputs = up.outputs;
    expectCounts(up.changes, { create: spec.creates }, "first up");
    await spec.verifyUp?.(context);

    const edits = spec.edits ?? [];
    // Before a change only: after the last up, the round-trip's preview below is this one.
    if (edits.length > 0) await stack.preview({ expectNoChanges: true });
    await quiet.refresh({ expectNoChanges: true });

    for (const [index, edit] of edits.entries()) {
      await stack.setAllConfig(edit.config, true);
      const editPreview = trackChanges();
      await stack.preview({ onEvent: editPreview.onEvent });
      expectCounts(editPreview.counts(), edit.expect, `preview of "${edit.description}"`);
      const editUp = await testStack.up();
      outputs = editUp.outputs;
      expectCounts(editUp.changes, edit.expect, `up of "${edit.description}"`);
      await edit.verify?.(context);
      if (index < edits.length - 1) await stack.preview({ expectNoChanges: true });
    }

    // The state survives an export/import round-trip unchanged in meaning.
    const exported = await stack.exportStack();
    await stack.importStack(exported);
    // No changes after the round-trip, and so none after the last up (nothing changed since).
    await stack.preview({ expectNoChanges: true });

    await quiet.destroy();
    expect(server.groups(), "destroy leaves the server empty").toEqual([]);
    // ...and the state empty, read as the backend stores it (a `stack rm` would refuse a stack with resources left,
    // one more engine process; the stack's directory goes with the TestStack).
    const stored = JSON.parse(readStoredState(testStack)) as { checkpoint: { latest?: { resources?: unknown[] } } };
    expect(stored.checkpoint.latest, "destroy leaves a state").toBeDefined();
    expect(stored.checkpoint.latest?.resources ?? [], "destroy leaves the state empty").toEqual([]);
  } finally {
    await emulator.close();
  }
}
