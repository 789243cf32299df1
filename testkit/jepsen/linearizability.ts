// The second checker of every fault history (issue 42 item 5): porcupine
// (github.com/anishathalye/porcupine v1.3.1, the linearizability checker
// Jepsen-style Go projects use), run as testkit/linearizability's porcupine-check
// (built and cached by scripts/ensure-linearizability), checks the history per
// group id against a model of ensure/remove/list (testkit/linearizability/model.go):
// ensure leaves the group there and hands out its token, the same token while it
// stays; remove leaves it absent; list shows it with its token exactly when it is
// there. Our own checker (checker.ts) replays the history against the end; this
// one asks whether one order of the calls, each placed between its invocation
// and its completion, explains every answer (no stale read, no token that
// changed without a remove, no ensure undone without one).
//
// Indeterminate calls as Jepsen has them: a call that never answered ("info")
// and, here, a failed one ("fail": a fleet call that failed may still have
// taken effect, as checker.ts assumes too: an engine run that created the group
// and then lost its lease) are passed as indeterminate: no return (the end of
// the history), no known result. Tokens are passed as tags (a short hash), never
// in the clear.
import { spawnSync } from "node:child_process";
import path from "node:path";
import { tokenTag } from "./checker";
import type { Op } from "./history";

const REPO_ROOT = path.resolve(__dirname, __dirname.includes(`${path.sep}build${path.sep}`) ? "../../.." : "../..");

/** porcupine-check's input (see testkit/linearizability/main.go). */
export interface PorcupineOperation {
  readonly index: number;
  readonly client: string;
  readonly f: "ensure" | "remove" | "list";
  readonly id?: string;
  readonly call: number;
  readonly return: number | null;
  readonly outcome: "ok" | "fail" | "info";
  readonly token?: string;
  readonly groups?: ReadonlyArray<{ readonly id: string; readonly token: string }>;
}

export interface PorcupineHistory {
  readonly timeoutMs?: number;
  readonly ids?: readonly string[];
  readonly operations: readonly PorcupineOperation[];
}

export interface LinearizabilityVerdict {
  readonly valid: boolean;
  /** One entry per id porcupine found not linearizable (or could not decide), with its explanation. */
  readonly problems: readonly string[];
  /** porcupine-check's whole report (a line per id). */
  readonly report: string;
}

let checkerPath: string | undefined;

/** porcupine-check's path (built on first use: scripts/ensure-linearizability; cached after). */
export function porcupineCheckPath(): string {
  if (checkerPath !== undefined) return checkerPath;
  const result = spawnSync(path.join(REPO_ROOT, "scripts", "ensure-linearizability"), { encoding: "utf8", stdio: ["ignore", "pipe", "inherit"] });
  const found = result.stdout?.trim().split("\n").at(-1);
  if (result.status !== 0 || !found) throw new Error(`scripts/ensure-linearizability failed (exit ${result.status ?? result.signal}): see its output above`);
  checkerPath = found;
  return found;
}

/**
 * Our history as porcupine-check reads it. `finalRead`: the groups every shard's
 * state holds at the end (read once every call was done), passed as one last
 * list, so that what the history leaves behind is explained by it too.
 */
export function toPorcupineHistory(ops: readonly Op[], options: { ids?: ReadonlySet<string>; finalRead?: ReadonlyArray<{ readonly userGroupId: string; readonly token: string }>; timeoutMs?: number } = {}): PorcupineHistory {
  const operations: PorcupineOperation[] = ops.map((op) => {
    const ok = op.outcome === "ok" && op.completedAt !== undefined;
    return {
      index: op.index,
      client: op.process,
      f: op.f,
      ...(op.id !== undefined ? { id: op.id } : {}),
      call: Math.round(op.invokedAt),
      return: ok ? Math.round(op.completedAt!) : null,
      outcome: ok ? "ok" : "info",
      ...(ok && op.f === "ensure" && op.value?.token !== undefined ? { token: tokenTag(op.value.token) } : {}),
      ...(ok && op.f === "list" ? { groups: (op.value?.groups ?? []).map((g) => ({ id: g.userGroupId, token: tokenTag(g.token) })) } : {}),
    };
  });
  if (options.finalRead !== undefined) {
    const end = Math.max(0, ...ops.map((op) => Math.max(op.invokedAt, op.completedAt ?? 0))) + 1;
    operations.push({ index: ops.length, client: "final-read", f: "list", call: Math.round(end), return: Math.round(end), outcome: "ok", groups: options.finalRead.map((g) => ({ id: g.userGroupId, token: tokenTag(g.token) })) });
  }
  return {
    ...(options.timeoutMs !== undefined ? { timeoutMs: options.timeoutMs } : {}),
    ...(options.ids !== undefined ? { ids: [...options.ids].sort() } : {}),
    operations,
  };
}

/** Runs porcupine-check on a history (ours, converted, or one made by hand). */
export function checkPorcupineHistory(history: PorcupineHistory): LinearizabilityVerdict {
  const result = spawnSync(porcupineCheckPath(), [], { input: JSON.stringify(history), encoding: "utf8", maxBuffer: 64 << 20, timeout: 300_000 });
  const report = result.stdout ?? "";
  if (result.status === 0) return { valid: true, problems: [], report };
  if (result.status !== 1 && result.status !== 3) {
    throw new Error(`porcupine-check failed (exit ${result.status ?? result.signal}): ${(result.stderr ?? "").slice(0, 2_000)}`);
  }
  // One block per id: its first line is not indented, its explanation is.
  const blocks: string[] = [];
  for (const line of report.split("\n")) {
    if (line === "") continue;
    if (/^\s/.test(line) && blocks.length > 0) blocks[blocks.length - 1] += `\n${line}`;
    else blocks.push(line);
  }
  const problems = blocks.filter((block) => !/^[^\n]*: linearizable \(/.test(block)).map((block) => `linearizability (porcupine): ${block}`);
  return { valid: false, problems, report };
}

/** Checks a history of the fleet's calls for linearizability per group id (porcupine). */
export function checkLinearizable(ops: readonly Op[], options: { ids?: ReadonlySet<string>; finalRead?: ReadonlyArray<{ readonly userGroupId: string; readonly token: string }>; timeoutMs?: number } = {}): LinearizabilityVerdict {
  return checkPorcupineHistory(toPorcupineHistory(ops, options));
}
