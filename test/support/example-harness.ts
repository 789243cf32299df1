// Drives an example (a real on-disk Pulumi program under examples/) through
// the Automation API against a fake server started for it, on a temporary file
// backend, asserting Pulumi's program-test invariants: preview -> up -> preview
// with no changes -> refresh with no changes -> edit steps with the expected
// actions -> export/import round-trip -> destroy -> server empty.
import { type ConfigMap, LocalWorkspace, type OutputMap, type Stack } from "@pulumi/pulumi/automation";
import { cpSync } from "node:fs";
import path from "node:path";
import { expect } from "vitest";
import { type FakeServer, startFakeServer } from "../../fake-server";
import type { ApiKeyConfig } from "../../fake-server";
import { createPulumiTestEnv, REPO_ROOT } from "./pulumi-env";

export interface ChangeCounts {
  create?: number;
  update?: number;
  replace?: number;
  delete?: number;
  same?: number;
}

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

const GROUP_TYPE_SUFFIX = ":UserGroup";

/** Counts per operation of the groups (not the root stack or the default provider). */
function groupCounts(ops: Map<string, string>): ChangeCounts {
  const counts: Record<string, number> = {};
  for (const op of ops.values()) counts[op] = (counts[op] ?? 0) + 1;
  return counts;
}

/** Follows the engine's events: the operation of each group. */
function trackOps() {
  const ops = new Map<string, string>();
  const onEvent = (event: import("@pulumi/pulumi/automation").EngineEvent) => {
    const meta = event.resourcePreEvent?.metadata;
    if (!meta || !meta.type.endsWith(GROUP_TYPE_SUFFIX)) return;
    const op = meta.op === "create-replacement" || meta.op === "delete-replaced" ? "replace" : meta.op;
    if (ops.get(meta.urn) !== "replace") ops.set(meta.urn, op);
  };
  return { ops, onEvent };
}

function expectCounts(actual: ChangeCounts, expected: ChangeCounts, what: string): void {
  const pick = (c: ChangeCounts) =>
    Object.fromEntries((["create", "update", "replace", "delete"] as const).map((k) => [k, c[k] ?? 0]));
  expect(pick(actual), what).toEqual(pick(expected));
}

/** Runs the whole lifecycle of one example; resolves when the server is empty again. */
export async function runExampleLifecycle(spec: ExampleSpec): Promise<void> {
  const server = await startFakeServer({ apiKeys: spec.apiKeys });
  const env = createPulumiTestEnv(`example-${spec.example}`);
  try {
    // A copy under the repository: the program resolves @pulumi/pulumi and
    // pulumi-user-groups from the repository's node_modules, as after `npm install`.
    cpSync(path.join(REPO_ROOT, "examples", spec.example), env.workDir, {
      recursive: true,
      filter: (source) => !source.includes(`${path.sep}node_modules`),
    });
    await spec.setup?.(server);
    const stack = await LocalWorkspace.createOrSelectStack(
      { stackName: "test", workDir: env.workDir },
      // Type-checking the examples is `npm run typecheck`'s job; here ts-node only transpiles.
      { envVars: { ...env.envVars, PULUMI_NODEJS_TRANSPILE_ONLY: "true", ...(spec.envVars?.(server) ?? {}) } },
    );
    await stack.setAllConfig(spec.config(server), true);
    const context: ExampleContext = { server, stack, outputs: () => stack.outputs() };

    const preview = trackOps();
    const before = server.groups();
    await stack.preview({ onEvent: preview.onEvent });
    expectCounts(groupCounts(preview.ops), { create: spec.creates }, "first preview");
    expect(server.groups(), "a preview changes nothing on the server").toEqual(before);

    const up = trackOps();
    await stack.up({ onEvent: up.onEvent });
    expectCounts(groupCounts(up.ops), { create: spec.creates }, "first up");
    await spec.verifyUp?.(context);

    await stack.preview({ expectNoChanges: true });
    await stack.refresh({ expectNoChanges: true });

    for (const edit of spec.edits ?? []) {
      await stack.setAllConfig(edit.config, true);
      const editPreview = trackOps();
      await stack.preview({ onEvent: editPreview.onEvent });
      expectCounts(groupCounts(editPreview.ops), edit.expect, `preview of "${edit.description}"`);
      const editUp = trackOps();
      await stack.up({ onEvent: editUp.onEvent });
      expectCounts(groupCounts(editUp.ops), edit.expect, `up of "${edit.description}"`);
      await edit.verify?.(context);
      await stack.preview({ expectNoChanges: true });
    }

    // The state survives an export/import round-trip unchanged in meaning.
    const exported = await stack.exportStack();
    await stack.importStack(exported);
    await stack.preview({ expectNoChanges: true });

    await stack.destroy();
    expect(server.groups(), "destroy leaves the server empty").toEqual([]);
    await stack.workspace.removeStack("test");
  } finally {
    await server.close();
    env.cleanup();
  }
}
