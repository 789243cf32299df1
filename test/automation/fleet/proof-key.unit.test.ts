// The key of the run record's proofs (lease/created-proof.ts) does not follow the
// checkpoint's salt. Replicas of one fleet each have a workspace, and a run from
// one whose stack config holds another `encryptionsalt` rewrites the checkpoint's
// passphrase secrets manager state (Pulumi decrypts with the old one, encrypts
// with its own). A proof keyed from the salted key then failed under the next
// checkpoint: the file backend's fault history with r1 killed right after its
// ensure saw the next holder refuse every entry r1 had proven
// ("[run_record_entry_unproven] ... its proof does not match it"), and the groups
// r1 had answered were in no state at the end.
import { createCipheriv, pbkdf2Sync, randomBytes } from "node:crypto";
import { tmpdir } from "node:os";
import type { Deployment, Stack } from "@pulumi/pulumi/automation";
import { describe, expect, it } from "vitest";
import { passphraseProofSecret, proofKeyOf } from "../../../provider/automation/engine";
import { provenEntry, unprovenWhy } from "../../../provider/automation/lease";

const PASSPHRASE = "proof-key-unit";

/** A checkpoint as Pulumi writes it for a passphrase stack whose secrets manager state has this salt (and its check value). */
function checkpointWithFreshSalt(): Deployment {
  const salt = randomBytes(8);
  const key = pbkdf2Sync(PASSPHRASE, salt, 1_000_000, 32, "sha256");
  const nonce = randomBytes(12);
  const cipher = createCipheriv("aes-256-gcm", key, nonce);
  const sealed = Buffer.concat([cipher.update("pulumi", "utf8"), cipher.final(), cipher.getAuthTag()]);
  return {
    version: 3,
    deployment: { manifest: {}, secrets_providers: { type: "passphrase", state: { salt: `v1:${salt.toString("base64")}:v1:${nonce.toString("base64")}:${sealed.toString("base64")}` } }, resources: [] },
  } as unknown as Deployment;
}

const stack = { name: "tenants", workspace: { envVars: { PULUMI_CONFIG_PASSPHRASE: PASSPHRASE }, workDir: tmpdir() } } as unknown as Stack;

describe("the proof key of a fleet's record entries", () => {
  it("is the same under a checkpoint rewritten with another salt (another replica's run): an entry proven before is proven after", async () => {
    const rewritten = checkpointWithFreshSalt();
    const before = await proofKeyOf(stack, checkpointWithFreshSalt(), "tenants");
    const after = await proofKeyOf(stack, rewritten, "tenants");
    expect(before).toBeDefined();
    const entry = provenEntry(before!, { resourceName: "default.acme", inputs: { name: "Acme", userGroupId: "acme" } });
    expect(unprovenWhy(after, entry)).toBeUndefined();
    // Still the stack's own: another stack's key refuses it, and a wrong passphrase gets no key at all.
    expect(unprovenWhy(await proofKeyOf(stack, rewritten, "tenants.shard-1"), entry)).toMatch(/does not match/);
    const wrong = { name: "tenants", workspace: { envVars: { PULUMI_CONFIG_PASSPHRASE: "not-it" }, workDir: tmpdir() } } as unknown as Stack;
    await expect(proofKeyOf(wrong, rewritten, "tenants")).rejects.toMatchObject({ code: "wrong_passphrase" });
  }, 60_000);

  it("is derived with the stack's name in PBKDF2's salt: one passphrase gives each stack its own secret (no table made once serves every stack)", async () => {
    const other = { ...stack, name: "tenants.shard-1" } as unknown as Stack;
    const mine = await passphraseProofSecret(stack);
    const theirs = await passphraseProofSecret(other);
    expect(mine).toBeDefined();
    expect(theirs).toBeDefined();
    expect(mine!.equals(theirs!)).toBe(false);
    expect(mine!.equals(pbkdf2Sync(PASSPHRASE, "pulumi-user-groups run record proofs\u0000tenants", 1_000_000, 32, "sha256"))).toBe(true);
  }, 60_000);
});
