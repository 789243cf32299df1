// A takeover's last step on an object store (provider/automation/engine/clear-pending.ts):
// the run's engine works on a private copy of the stack (a file backend no other
// process writes while the run holds the lease), so the pending creates are cleared
// in that copy by this process: no `pulumi stack import` (a CLI process on the path
// from a dead holder's lease to the waiter's answer). The stack here has no CLI at
// all: a fallback to the import would fail the test.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import type { Stack } from "@pulumi/pulumi/automation";
import { afterAll, describe, expect, it } from "vitest";
import { OBJECT_COPY_ENV } from "../../provider/backends";
import { clearPendingCreates } from "../../provider/automation/engine/clear-pending";
import type { RunLease } from "../../provider/automation/lease";
import { PROVIDER_MODULE_TEXT } from "../../provider/resource/provider-shell";
import { USER_GROUP_TYPE } from "../../provider/resource/user-group";

const root = mkdtempSync(path.join(os.tmpdir(), "clear-pending-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const STACK = "dev";
const stackUrn = `urn:pulumi:${STACK}::user-groups::pulumi:pulumi:Stack::user-groups-${STACK}`;
const groupUrn = (name: string) => `urn:pulumi:${STACK}::user-groups::${USER_GROUP_TYPE}::${name}`;
/** A pending operation on group `id` as the engine records one (the inputs this package declares). */
const pendingOp = (type: string, id: string) => ({
  type,
  resource: { urn: groupUrn(`default.${id}`), custom: true, type: USER_GROUP_TYPE, inputs: { name: `Group ${id}`, userGroupId: id, mapping: { sales: "warehouse" }, adoptExisting: false, __provider: PROVIDER_MODULE_TEXT } },
});

function copyWith(pending: unknown[]) {
  const dir = path.join(root, `copy-${Math.random().toString(36).slice(2)}`);
  const stacks = path.join(dir, "backend", ".pulumi", "stacks", "user-groups");
  mkdirSync(stacks, { recursive: true, mode: 0o700 });
  writeFileSync(path.join(dir, "backend", ".pulumi", "meta.yaml"), "version: 1\n");
  const latest = { manifest: { time: "2026-11-28T00:00:00Z", magic: "", version: "v3.259.0" }, resources: [{ urn: stackUrn, custom: false, type: "pulumi:pulumi:Stack" }], pending_operations: pending };
  writeFileSync(path.join(stacks, `${STACK}.json`), JSON.stringify({ version: 3, checkpoint: { stack: `organization/user-groups/${STACK}`, latest } }));
  // The workspace as the state read asks it: its directory, environment and project settings (the project's name).
  const workspace = { workDir: dir, envVars: { PULUMI_BACKEND_URL: `file://${path.join(dir, "backend")}`, [OBJECT_COPY_ENV]: dir }, projectSettings: async () => ({ name: "user-groups", runtime: "nodejs" }) };
  const stack = { name: STACK, workspace } as unknown as Stack;
  return { stack, file: path.join(stacks, `${STACK}.json`) };
}

describe("clearing a takeover's pending creates in an object store run's private copy", () => {
  it("writes the copy's checkpoint without them, in this process, the lease confirmed first; other pending operations stay", async () => {
    const { stack, file } = copyWith([pendingOp("creating", "a"), pendingOp("deleting", "b")]);
    const confirmed: unknown[] = [];
    const lease = { lost: false, update: async (patch: unknown) => void confirmed.push(patch) } as unknown as RunLease;
    await clearPendingCreates(stack, STACK, lease);
    const written = JSON.parse(readFileSync(file, "utf8")) as { checkpoint: { stack: string; latest: { pending_operations?: Array<{ type: string }>; resources: unknown[] } } };
    expect(written.checkpoint.stack).toBe(`organization/user-groups/${STACK}`);
    expect(written.checkpoint.latest.pending_operations?.map((op) => op.type)).toEqual(["deleting"]);
    expect(written.checkpoint.latest.resources).toHaveLength(1);
    expect(confirmed).toEqual([{}]);
  });

  it("a lease lost meanwhile: nothing written", async () => {
    const { stack, file } = copyWith([pendingOp("creating", "a")]);
    const before = readFileSync(file, "utf8");
    const reason = new Error("lease lost");
    const lease = { lost: true, signal: { reason }, update: async () => undefined } as unknown as RunLease;
    await expect(clearPendingCreates(stack, STACK, lease)).rejects.toBe(reason);
    expect(readFileSync(file, "utf8")).toBe(before);
  });
});
