// The `changeDigest` format (docs/cli-json.md: "`sha256:` and 43 base64url
// characters", the one `--plan-file` records; equal digests, equal changes): the
// SHA-256 of the change set's canonical JSON (keys sorted, no undefined), pinned by
// a known answer, so that a plan file written by one version is read by the next.
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { changesDigest, type PlannedChange } from "../../provider/cli/reviewed-plan";

const create: PlannedChange = { resourceName: "default.initech", change: "create", declared: { name: "Initech", userGroupId: "initech" } };

describe("changeDigest", () => {
  it("is `sha256:` and 43 base64url characters, as docs/cli-json.md says, and never token-shaped (64 hex)", () => {
    const digest = changesDigest("prod", [create]);
    expect(digest).toMatch(/^sha256:[A-Za-z0-9_-]{43}$/);
    expect(digest).not.toMatch(/\b[0-9a-f]{64}\b/);
    const docs = readFileSync(path.join(__dirname, "../../docs/cli-json.md"), "utf8");
    expect(docs).toMatch(/\| `changeDigest` \|[^\n]*`sha256:` and 43 base64url characters/);
  });

  it("is the SHA-256 of the canonical JSON of { stack, changes } (a known answer: plan files stay readable across versions)", () => {
    const canonical = '{"changes":[{"change":"create","declared":{"name":"Initech","userGroupId":"initech"},"resourceName":"default.initech"}],"stack":"prod"}';
    expect(changesDigest("prod", [create])).toBe(`sha256:${createHash("sha256").update(canonical).digest("base64url")}`);
    // The value itself, pinned: a change to the canonical form (or the encoding) fails here, not in a reader's plan file.
    expect(changesDigest("prod", [create])).toBe("sha256:X06RUn5cbA1vFv0AUYu1XC1TXon1yLOqzJ81dm-c108");
    // Keys in another order, an undefined member: the same change set, the same digest.
    const reordered = { declared: { userGroupId: "initech", name: "Initech", properties: undefined }, change: "create", resourceName: "default.initech" } as unknown as PlannedChange;
    expect(changesDigest("prod", [reordered])).toBe(changesDigest("prod", [create]));
    // Another stack, another value: another digest.
    expect(changesDigest("staging", [create])).not.toBe(changesDigest("prod", [create]));
    expect(changesDigest("prod", [{ ...create, declared: { name: "Initech Corp", userGroupId: "initech" } }])).not.toBe(changesDigest("prod", [create]));
  });
});
