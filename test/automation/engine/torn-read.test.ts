// Issue 32 (found by the fault histories, testkit/jepsen/fault-kinds.ts
// AWAITING_TORN_READ_FIX): on a file backend the engine rewrites the stack's
// `<stack>.json.attrs` in place, so a replica that reads the state without the
// lock (`stack export`, as the fleet's list() and its "already held?" check do)
// while the holder writes a checkpoint got `failed to load checkpoint: EOF` as
// `pulumi_command_failed`, a code that does not say "ask again". Such a read is
// now retried (bounded, on the injected clock); one still torn after that fails
// `stack_locked`, which is retryable. A real torn file against the real engine.
import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CommandError } from "@pulumi/pulumi/automation";
import { translateEngineError } from "../../../provider/automation/engine/pulumi-cli";
import { exportIfExists, selectStack } from "../../../provider/automation/engine/open-stack";
import { exportState, isTornRead, readStateRetrying } from "../../../provider/automation/engine/state";
import { clockWith } from "../../../provider/clock";
import { isRetryableError } from "../../../testkit/jepsen/retryable";
import { createPulumiTestEnv, type PulumiTestEnv } from "../../support/pulumi-env";

let env: PulumiTestEnv;
beforeAll(() => {
  env = createPulumiTestEnv("torn-read");
});
afterAll(() => env?.cleanup());

function optionsOf(stack: string) {
  return { stack, workDir: env.workDir, backendUrl: `file://${env.backendDir}`, passphrase: "torn-read", envVars: env.envVars };
}

/** The stack's checkpoint sidecar, as the engine leaves it between writes. */
function attrsOf(stack: string): string {
  return path.join(env.backendDir, ".pulumi", "stacks", "user-groups", `${stack}.json.attrs`);
}

/** A stack with a checkpoint (an up of an empty program), selected for reading as a replica without the lock would. */
async function stackWithState(stack: string) {
  const selected = await selectStack(optionsOf(stack), async () => ({ marker: true }));
  await selected.stack.up();
  return selected;
}

describe("reading a state another run is rewriting (file backend)", () => {
  it("a sidecar half written, completed 1 s later: the read waits it out and returns the state", async () => {
    const selected = await stackWithState("torn-brief");
    try {
      const whole = readFileSync(attrsOf("torn-brief"), "utf8");
      expect(whole.length).toBeGreaterThan(2);
      // The holder's engine in the middle of its write: the sidecar truncated to half, the rest written shortly after.
      writeFileSync(attrsOf("torn-brief"), whole.slice(0, Math.floor(whole.length / 2)));
      let whenWhole: "before the read returned" | undefined;
      const completed = new Promise<void>((resolve) =>
        setTimeout(() => {
          writeFileSync(attrsOf("torn-brief"), whole);
          whenWhole = "before the read returned";
          resolve();
        }, 1_000),
      );
      const state = await exportState(selected.stack);
      // The order of events, not the clock: the read returned only after the sidecar was whole again.
      expect(whenWhole).toBe("before the read returned");
      await completed;
      expect(JSON.stringify(state.deployment)).toContain("marker");
      // Selection by a replica that starts meanwhile rides it out too (exportIfExists selects, then reads).
      writeFileSync(attrsOf("torn-brief"), "");
      setTimeout(() => writeFileSync(attrsOf("torn-brief"), whole), 700);
      expect(JSON.stringify((await exportIfExists(optionsOf("torn-brief")))?.deployment)).toContain("marker");
    } finally {
      selected.dispose();
    }
  }, 120_000);

  it("a sidecar that stays torn (a write stalled on a slow disk): after the bounded retries, stack_locked, retryable", async () => {
    const selected = await stackWithState("torn-stalled");
    try {
      const whole = readFileSync(attrsOf("torn-stalled"), "utf8");
      writeFileSync(attrsOf("torn-stalled"), whole.slice(0, 5));
      const slept: number[] = [];
      // The retries' waits on an injected clock: recorded, not slept (the engine's reads themselves are real).
      const clock = clockWith({ sleep: async (ms) => void slept.push(ms) });
      let reads = 0;
      const error = await readStateRetrying(
        async () => {
          reads += 1;
          // The workspace's own export: the engine's read as it is, without the stack's retries on the real clock.
          return selected.stack.workspace.exportStack("torn-stalled");
        },
        "torn-stalled",
        clock,
        [10, 20, 40],
      ).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(reads).toBe(4);
      expect(slept).toEqual([10, 20, 40]);
      expect(error).toMatchObject({ code: "stack_locked" });
      expect(isRetryableError(error as { code: string })).toBe(true);
      expect(String((error as Error & { cause?: Error }).cause?.message)).toMatch(/being rewritten by another run .*failed to load checkpoint/);
      writeFileSync(attrsOf("torn-stalled"), whole);
    } finally {
      selected.dispose();
    }
  }, 120_000);

  it("any other failure of the read is not retried", async () => {
    let reads = 0;
    const error = await readStateRetrying(
      async () => {
        reads += 1;
        throw new Error("incorrect passphrase");
      },
      "other",
      clockWith({ sleep: async () => undefined }),
    ).catch((e: unknown) => e);
    expect(reads).toBe(1);
    expect(String((error as Error).message)).toBe("incorrect passphrase");
  });
});

describe("what counts as a torn read", () => {
  it("a half-written checkpoint does; a wrong passphrase or a cut database connection does not (they are not asked again as stack_locked)", () => {
    for (const torn of [
      "error: failed to load checkpoint: EOF",
      'error: failed to load checkpoint: blob (key ".pulumi/stacks/user-groups/x.json") (code=Unknown): unexpected EOF',
      "error: could not deserialize deployment: unexpected end of JSON input",
    ]) expect(isTornRead(new Error(torn)), torn).toBe(true);
    for (const whole of [
      "error: could not deserialize deployment: get stack secrets manager: incorrect passphrase",
      "error: failed to load checkpoint: incorrect passphrase",
      "error: failed to load checkpoint: write tcp 127.0.0.1:40000->127.0.0.1:5432: write: connection reset by peer",
      "error: failed to load checkpoint: FATAL: terminating connection due to administrator command (SQLSTATE 57P01)",
      "error: no stack named 'x' found",
    ]) expect(isTornRead(new Error(whole)), whole).toBe(false);
  });
});

describe("the engine's own session with a PostgreSQL backend cut under it", () => {
  /** A CommandError as the Automation API throws it, with Pulumi's stderr. */
  const failed = (stderr: string) => new (CommandError as unknown as new (result: unknown) => CommandError)({ stdout: "", stderr, code: 255, err: undefined, toString: () => stderr });

  it("is backend_unreachable (retryable), whatever words the server or Go's driver used; a torn read or a provider's failure is not", () => {
    for (const stderr of [
      "error: failed to save checkpoint: FATAL: terminating connection due to administrator command (SQLSTATE 57P01)",
      "error: could not write snapshot: the database system is shutting down (SQLSTATE 57P03)",
      "error: failed to load checkpoint: write tcp 127.0.0.1:40000->127.0.0.1:5432: write: connection reset by peer",
      "error: failed to save checkpoint: driver: bad connection",
    ]) {
      const error = translateEngineError(failed(stderr), "prod");
      expect(error, stderr).toMatchObject({ code: "backend_unreachable" });
      expect(isRetryableError(error as { code: string }), stderr).toBe(true);
    }
    expect(translateEngineError(failed('error: failed to load checkpoint: blob (key ".pulumi/stacks/user-groups/x.json") (code=Unknown): unexpected EOF'), "prod")).toMatchObject({ code: "pulumi_command_failed" });
    expect(translateEngineError(failed("error: default.acme: read ECONNRESET"), "prod")).toMatchObject({ code: "pulumi_command_failed" });
  });
});
