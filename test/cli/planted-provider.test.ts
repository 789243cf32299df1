// Issue #33 item 1: provider code comes from the installed package only. A pull
// request that edits a group's `__provider` in a committed file backend (the
// default `.user-groups/state/`) would have the engine run that code, with the
// API key in its environment, on drift, refresh, destroy and `up --refresh`.
// Each is tried with the planted code writing a marker file: the marker never
// appears, the run exits 2 naming the group, and `recover --rewrite-providers`
// (after review) puts the package's own text back.
import { existsSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FakeServer, startFakeServer } from "../../fake-server";
import { createPulumiTestEnv, type PulumiTestEnv } from "../support/pulumi-env";
import { type CliRun, runUserGroupsCli } from "../support/user-groups-cli";

const KEY = "planted-provider-key-00001";
let server: FakeServer;
let env: PulumiTestEnv;
let marker: string;

function cli(...args: string[]): Promise<CliRun> {
  return runUserGroupsCli(args, {
    cwd: env.workDir,
    env: { ...process.env, ...env.envVars, PULUMI_BACKEND_URL: "", USER_GROUPS_BASE_URL: server.url, USER_GROUPS_API_KEY: KEY },
  });
}

/** The stack file of the default backend, as a repository holds it. */
function stackFile(): string {
  return path.join(env.workDir, ".user-groups", "state", ".pulumi", "stacks", "user-groups", "prod.json");
}

interface StoredResource {
  urn: string;
  type: string;
  inputs?: Record<string, unknown>;
  outputs?: Record<string, unknown>;
}

function editState(edit: (resources: StoredResource[]) => void): void {
  const stored = JSON.parse(readFileSync(stackFile(), "utf8")) as { checkpoint: { latest: { resources: StoredResource[] } } };
  edit(stored.checkpoint.latest.resources);
  writeFileSync(stackFile(), JSON.stringify(stored, null, 4));
}

/** What an attacker commits: code that leaves a marker (and would read the key) when the engine loads it. */
function plantedCode(): string {
  return `exports.handler=()=>{require("fs").writeFileSync(${JSON.stringify(marker)},"ran with key "+(process.env.USER_GROUPS_API_KEY?"present":"absent"));return require("node:module").createRequire(process.cwd()+"/_.js")("pulumi-user-groups/provider-runtime").userGroupProvider;};`;
}

beforeAll(async () => {
  server = await startFakeServer({ apiKeys: [{ key: KEY, environment: "Customer" }] });
  env = createPulumiTestEnv("planted-provider");
  marker = path.join(env.workDir, "planted-code-ran");
  writeFileSync(path.join(env.workDir, "groups.yaml"), "groups:\n  - name: Acme Corp\n    userGroupId: acme\n  - name: Globex\n    userGroupId: globex\n");
  const up = await cli("up", "--file", "groups.yaml", "--stack", "prod", "--yes");
  expect(up.code, up.stderr).toBe(0);
});
afterAll(async () => {
  await server?.close();
  env?.cleanup();
});

describe("a state whose provider code this package did not write", () => {
  it("runs nothing on drift, refresh, up --refresh and destroy: exit 2 naming the group, no marker, no request", async () => {
    editState((resources) => {
      const acme = resources.find((r) => r.urn.endsWith("::default.acme"))!;
      acme.inputs!.__provider = plantedCode();
      acme.outputs!.__provider = plantedCode();
    });
    for (const args of [
      ["drift", "--stack", "prod", "--json"],
      ["refresh", "--stack", "prod", "--json"],
      ["up", "--file", "groups.yaml", "--stack", "prod", "--yes", "--refresh", "--json"],
      ["destroy", "--stack", "prod", "--yes", "--json"],
      ["preview", "--file", "groups.yaml", "--stack", "prod", "--json"],
    ]) {
      const before = server.journal().length;
      const run = await cli(...args);
      expect(run.code, `${args[0]}: ${run.stderr}`).toBe(2);
      const error = (JSON.parse(run.stdout) as { error: { code: string; message: string } }).error;
      expect(error.code).toBe("untrusted_provider_code");
      expect(error.message).toContain('"default.acme"');
      expect(error.message).toContain("--rewrite-providers");
      expect(error.message).not.toContain(KEY);
      expect(existsSync(marker), `${args[0]} ran the planted code`).toBe(false);
      expect(server.journal().length, `${args[0]} sent a request`).toBe(before);
    }
  });

  it("recover --rewrite-providers writes the package's own text back; then drift finds nothing", async () => {
    const recovered = await cli("recover", "--file", "groups.yaml", "--stack", "prod", "--rewrite-providers", "--yes");
    expect(recovered.code, recovered.stderr).toBe(0);
    expect(existsSync(marker)).toBe(false);
    const stored = readFileSync(stackFile(), "utf8");
    expect(stored).not.toContain("writeFileSync");
    const drift = await cli("drift", "--stack", "prod");
    expect(drift.code, drift.stderr).toBe(0);
    expect(existsSync(marker)).toBe(false);
  });

  it("refuses a resource of a type this package never makes, which --rewrite-providers leaves for a person", async () => {
    editState((resources) => {
      resources.push({ urn: "urn:pulumi:prod::user-groups::pulumi-nodejs:dynamic:Resource::planted", type: "pulumi-nodejs:dynamic:Resource", inputs: { __provider: plantedCode() }, outputs: { __provider: plantedCode() } });
    });
    for (const args of [["refresh", "--stack", "prod", "--json"], ["recover", "--file", "groups.yaml", "--stack", "prod", "--rewrite-providers", "--yes", "--json"]]) {
      const run = await cli(...args);
      expect(run.code, run.stderr).toBe(2);
      expect(run.stdout).toContain("untrusted_provider_code");
      expect(run.stdout).toContain("pulumi state delete");
      expect(existsSync(marker)).toBe(false);
    }
    rmSync(marker, { force: true });
  });
});
