// A stack's checkpoint read from a file backend's files (provider/backends/file/
// stack-file.ts) in place of `pulumi stack select` and `pulumi stack export`:
// only where the layout is Pulumi's project layout and the file plain JSON of
// this stack; anything else is left to the CLI ("unknown", undefined). That the
// document equals the CLI's export on real stacks: test/automation/engine/state-document.test.ts.
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { readStoredDeployment, stackFilePresence, TornCheckpointError, writeStoredDeployment } from "../../provider/backends/file";
import { isTornRead } from "../../provider/automation/engine/state";

const root = mkdtempSync(path.join(os.tmpdir(), "stack-file-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const LATEST = { manifest: { version: "v3.259.0" }, secrets_providers: { type: "passphrase" }, resources: [{ urn: "urn:pulumi:s::user-groups::pulumi:pulumi:Stack::user-groups-s" }] };
const ATTRS = '{"user.content_type":"text/plain; charset=utf-8","md5":"x"}';

/** A backend directory as Pulumi's project layout leaves it, with stack `s` of project user-groups (`stack: null`: none). */
function backend(name: string, { meta = "version: 1\n", stack = { version: 3, checkpoint: { stack: "organization/user-groups/s", latest: LATEST } } as unknown, attrs = ATTRS } = {}) {
  const dir = path.join(root, name);
  const stacks = path.join(dir, ".pulumi", "stacks", "user-groups");
  mkdirSync(stacks, { recursive: true });
  if (meta !== "") writeFileSync(path.join(dir, ".pulumi", "meta.yaml"), meta);
  if (stack !== null) {
    writeFileSync(path.join(stacks, "s.json"), JSON.stringify(stack));
    writeFileSync(path.join(stacks, "s.json.attrs"), attrs);
  }
  return { url: `file://${dir}`, stacks };
}

describe("a stack's presence from a file backend's files", () => {
  it("present with its file and a whole sidecar, under any of its names; absent without it, or in an empty backend", () => {
    const { url } = backend("present");
    for (const name of ["s", "organization/s", "organization/user-groups/s"]) expect(stackFilePresence(url, "user-groups", name), name).toBe("present");
    expect(stackFilePresence(url, "user-groups", "other")).toBe("absent");
    const empty = path.join(root, "empty");
    mkdirSync(empty);
    expect(stackFilePresence(`file://${empty}`, "user-groups", "s")).toBe("absent");
  });

  it("unknown (the CLI answers) for a torn sidecar, a gzipped twin, another layout or org, a missing directory, another backend", () => {
    expect(stackFilePresence(backend("torn", { attrs: '{"user.content' }).url, "user-groups", "s")).toBe("unknown");
    expect(stackFilePresence(backend("torn-empty", { attrs: "" }).url, "user-groups", "s")).toBe("unknown");
    const gz = backend("gz");
    writeFileSync(path.join(gz.stacks, "s.json.gz"), "");
    expect(stackFilePresence(gz.url, "user-groups", "s")).toBe("unknown");
    // No meta.yaml in a backend that holds files: Pulumi's legacy layout may apply.
    expect(stackFilePresence(backend("legacy", { meta: "" }).url, "user-groups", "s")).toBe("unknown");
    expect(stackFilePresence(backend("legacy-absent", { meta: "", stack: null }).url, "user-groups", "s")).toBe("unknown");
    expect(stackFilePresence(backend("org").url, "user-groups", "acme/s")).toBe("unknown");
    expect(stackFilePresence(`file://${path.join(root, "no-such-dir")}`, "user-groups", "s")).toBe("unknown");
    expect(stackFilePresence("postgres://localhost/db", "user-groups", "s")).toBe("unknown");
    expect(stackFilePresence(backend("bad-name").url, "user-groups", "../s")).toBe("unknown");
  });
});

describe("a stack's deployment from a file backend's files", () => {
  it("is `{ version: 3, deployment: <the checkpoint's latest> }`, as `pulumi stack export` prints it", () => {
    expect(readStoredDeployment(backend("read").url, "user-groups", "organization/user-groups/s")).toEqual({ version: 3, deployment: LATEST });
  });

  it("is left to the CLI for a missing stack, a checkpoint of another version or stack, a new stack with no deployment, a file that is not JSON", () => {
    expect(readStoredDeployment(backend("missing", { stack: null }).url, "user-groups", "s")).toBeUndefined();
    expect(readStoredDeployment(backend("v2", { stack: { version: 2, checkpoint: { stack: "organization/user-groups/s", latest: LATEST } } }).url, "user-groups", "s")).toBeUndefined();
    expect(readStoredDeployment(backend("other-stack", { stack: { version: 3, checkpoint: { stack: "organization/user-groups/t", latest: LATEST } } }).url, "user-groups", "s")).toBeUndefined();
    expect(readStoredDeployment(backend("new", { stack: { version: 3, checkpoint: { stack: "organization/user-groups/s", latest: null } } }).url, "user-groups", "s")).toBeUndefined();
    const garbled = backend("garbled");
    writeFileSync(path.join(garbled.stacks, "s.json"), '{"version":3,"checkpoint":');
    expect(readStoredDeployment(garbled.url, "user-groups", "s")).toBeUndefined();
  });

  it("with a torn sidecar is a torn read, which the state's readers wait out as they do the CLI's", () => {
    const { url } = backend("torn-read", { attrs: "" });
    let error: unknown;
    try {
      readStoredDeployment(url, "user-groups", "s");
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(TornCheckpointError);
    expect(isTornRead(error)).toBe(true);
  });
});

describe("a stack's deployment written to a file backend's files (a run's private copy: no `pulumi stack import`)", () => {
  it("is read back as written, the checkpoint's other fields kept, the sidecar's MD5 that of the new bytes, both files 0600", () => {
    const { url, stacks } = backend("write", { stack: { version: 3, checkpoint: { stack: "organization/user-groups/s", config: { a: "b" }, latest: LATEST } } });
    const next = { ...LATEST, pending_operations: [{ type: "updating" }] };
    expect(writeStoredDeployment(url, "user-groups", "s", { version: 3, deployment: next })).toBe(true);
    expect(readStoredDeployment(url, "user-groups", "s")).toEqual({ version: 3, deployment: next });
    const bytes = readFileSync(path.join(stacks, "s.json"));
    expect((JSON.parse(bytes.toString("utf8")) as { checkpoint: { config: unknown } }).checkpoint.config).toEqual({ a: "b" });
    const attrs = JSON.parse(readFileSync(path.join(stacks, "s.json.attrs"), "utf8")) as Record<string, string>;
    expect(attrs["md5"]).toBe(createHash("md5").update(bytes).digest("base64"));
    expect(attrs["user.content_type"]).toBe("text/plain; charset=utf-8");
    for (const file of ["s.json", "s.json.attrs"]) expect(statSync(path.join(stacks, file)).mode & 0o777).toBe(0o600);
  });

  it("a checkpoint without a sidecar (a private copy's, as the store gave it) is written without one", () => {
    const { url, stacks } = backend("write-bare");
    rmSync(path.join(stacks, "s.json.attrs"));
    const next = { ...LATEST, resources: [] };
    expect(writeStoredDeployment(url, "user-groups", "s", { version: 3, deployment: next })).toBe(true);
    expect(readStoredDeployment(url, "user-groups", "s")).toEqual({ version: 3, deployment: next });
    expect(existsSync(path.join(stacks, "s.json.attrs"))).toBe(false);
  });

  it("answers false and writes nothing where it could not read the stack (the CLI writes there): another stack's file, a gzipped twin, a torn sidecar", () => {
    for (const [name, options] of [
      ["write-other", { stack: { version: 3, checkpoint: { stack: "organization/user-groups/t", latest: LATEST } } }],
      ["write-missing", { stack: null }],
    ] as const) {
      const { url, stacks } = backend(name, options);
      const before = name === "write-missing" ? undefined : readFileSync(path.join(stacks, "s.json"), "utf8");
      expect(writeStoredDeployment(url, "user-groups", "s", { version: 3, deployment: LATEST })).toBe(false);
      if (before !== undefined) expect(readFileSync(path.join(stacks, "s.json"), "utf8")).toBe(before);
    }
    const gz = backend("write-gz");
    writeFileSync(path.join(gz.stacks, "s.json.gz"), "");
    expect(writeStoredDeployment(gz.url, "user-groups", "s", { version: 3, deployment: LATEST })).toBe(false);
    const torn = backend("write-torn", { attrs: '{"user.content_type":' });
    expect(() => writeStoredDeployment(torn.url, "user-groups", "s", { version: 3, deployment: LATEST })).toThrow(TornCheckpointError);
  });
});
