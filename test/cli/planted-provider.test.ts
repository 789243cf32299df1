// Issue #33 item 1: provider code comes from the installed package only. A pull
// request that edits a group's `__provider` in a committed file backend (the
// default `.user-groups/state/`) would have the engine run that code, with the
// API key in its environment, on drift, refresh, destroy and `up --refresh`.
// Drift, destroy and `up --refresh` are tried with the planted code writing a
// marker file (refresh and the rest run the same check: the F10 matrix below):
// the marker never appears, the run exits 2 naming the group, and
// `recover --rewrite-providers` (after review) puts the package's own text back.
//
// Issue #39 item 1 (CONTRACT F10): the rest of the state is data too. Each kind
// of field the engine acts on (a provider's `__internal` with a plugin download
// URL, a version, checksums, parameterization; a group served by a foreign
// provider; a field this package never writes) is planted in the committed stack
// file, as a pull request plants it, with the would-be plugin served from
// 127.0.0.1 (it would leave a marker, with the key in its environment): each
// kind on one command at least, each command on one kind at least, exits 2 (`untrusted_state`) naming the resource
// and the field, nothing is downloaded, no process leaves the marker, no request
// reaches the service. Between kinds the file a real up wrote is copied back
// (no engine run needed to undo a plant).
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { type FakeServer, startFakeServer } from "../../fake-server";
import { type PlantedPlugin, servePlantedPlugin } from "../support/planted-plugin";
import { createPulumiTestEnv, type PulumiTestEnv } from "../support/pulumi-env";
import { type CliRun, runUserGroupsCli } from "../support/user-groups-cli";

const KEY = "planted-provider-key-00001";
let server: FakeServer;
let env: PulumiTestEnv;
let marker: string;
/** The stack file the first up wrote: a real up's state, copied back where a test needs one. */
let pristine: string;

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
  pristine = readFileSync(stackFile(), "utf8");
});
afterAll(async () => {
  await server?.close();
  env?.cleanup();
});

describe("a state whose provider code this package did not write", () => {
  // Each test starts from the state the first up wrote (no test builds on another's leftovers).
  beforeEach(() => {
    writeFileSync(stackFile(), pristine);
    rmSync(marker, { force: true });
  });

  const plantOnAcme = () =>
    editState((resources) => {
      const acme = resources.find((r) => r.urn.endsWith("::default.acme"))!;
      acme.inputs!.__provider = plantedCode();
      acme.outputs!.__provider = plantedCode();
    });

  // One read-only command and the two that change the service (each a CLI run of seconds): the check is one
  // function every command calls before the engine (the F10 matrix below shows each command refusing), and
  // test/automation/engine/state-data.test.ts holds which problems are `untrusted_provider_code`.
  it("runs nothing on drift, up --refresh and destroy: exit 2 naming the group, no marker, no request", async () => {
    plantOnAcme();
    for (const args of [
      ["drift", "--stack", "prod", "--json"],
      ["up", "--file", "groups.yaml", "--stack", "prod", "--yes", "--refresh", "--json"],
      ["destroy", "--stack", "prod", "--yes", "--json"],
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
  }, 300_000); // three CLI runs: seconds each, more on a loaded machine

  it("recover --rewrite-providers writes the package's own text back; then drift finds nothing", async () => {
    plantOnAcme();
    expect(readFileSync(stackFile(), "utf8")).toContain("writeFileSync");
    const recovered = await cli("recover", "--file", "groups.yaml", "--stack", "prod", "--rewrite-providers", "--yes");
    expect(recovered.code, recovered.stderr).toBe(0);
    expect(existsSync(marker)).toBe(false);
    const stored = readFileSync(stackFile(), "utf8");
    expect(stored).not.toContain("writeFileSync");
    const drift = await cli("drift", "--stack", "prod");
    expect(drift.code, drift.stderr).toBe(0);
    expect(existsSync(marker)).toBe(false);
  }, 300_000); // a recover (an engine run) and a drift: over 120 s once under load 26

  it("refuses a resource of a type this package never makes, which --rewrite-providers leaves for a person", async () => {
    editState((resources) => {
      resources.push({ urn: "urn:pulumi:prod::user-groups::pulumi-nodejs:dynamic:Resource::planted", type: "pulumi-nodejs:dynamic:Resource", inputs: { __provider: plantedCode() }, outputs: { __provider: plantedCode() } });
    });
    // recover --rewrite-providers, the command that mends provider text, still refuses it (the matrix below has each other command refuse).
    {
      const run = await cli("recover", "--file", "groups.yaml", "--stack", "prod", "--rewrite-providers", "--yes", "--json");
      expect(run.code, run.stderr).toBe(2);
      // More than provider code: a resource this package never makes (F10), which --rewrite-providers cannot mend.
      const error = (JSON.parse(run.stdout) as { error: { code: string; message: string } }).error;
      expect(error.code).toBe("untrusted_state");
      expect(error.message).toContain('"planted" ("pulumi-nodejs:dynamic:Resource") type: is not a type this package makes');
      expect(error.message).toContain("pulumi state delete");
      expect(existsSync(marker)).toBe(false);
    }
  });
});

describe("a state with fields the engine acts on (F10)", () => {
  const PROVIDER_URN = "urn:pulumi:prod::user-groups::pulumi:providers:pulumi-nodejs::default";
  let pluginHost: PlantedPlugin;
  let scratch: string;

  type Resource = Record<string, unknown> & { urn: string; type: string; inputs?: Record<string, unknown>; outputs?: Record<string, unknown> };
  type Planting = (resources: Resource[], url: string) => void;

  const providerOf = (resources: Resource[]) => resources.find((r) => r.urn === PROVIDER_URN)!;
  const acmeOf = (resources: Resource[]) => resources.find((r) => r.urn.endsWith("::default.acme"))!;
  const onProvider = (props: Record<string, unknown>): Planting => (resources) => {
    providerOf(resources).inputs = props;
    providerOf(resources).outputs = props;
  };

  /** Each kind of field, and what the refusal must name: the resource and the field. */
  const KINDS: Array<[string, Planting, string]> = [
    ["__internal with a plugin download URL and a version on the default provider (the review's finding)", (rs, url) => onProvider({ __internal: { name: "evilplug", pluginDownloadURL: url }, version: "1.0.0" })(rs, url), '"default" ("pulumi:providers:pulumi-nodejs") inputs.__internal'],
    ["a plugin download URL and checksums", (rs, url) => onProvider({ pluginDownloadURL: url, version: "1.0.0", __internal: { pluginChecksums: { "linux-amd64": "00" } } })(rs, url), '"default" ("pulumi:providers:pulumi-nodejs") inputs.pluginDownloadURL'],
    ["parameterization", (rs, url) => onProvider({ __internal: { pluginDownloadURL: url, parameterization: { name: "evilplug", version: "1.0.0", value: "ZXZpbA==" } }, version: "1.0.0" })(rs, url), '"default" ("pulumi:providers:pulumi-nodejs") inputs.__internal'],
    ["a version other than the one written", onProvider({ version: "1.0.0" }), '"default" ("pulumi:providers:pulumi-nodejs") inputs.version'],
    [
      "a group served by a foreign provider",
      (rs, url) => {
        const urn = "urn:pulumi:prod::user-groups::pulumi:providers:evilplug::planted";
        const props = { __internal: { pluginDownloadURL: url }, version: "1.0.0" };
        rs.splice(1, 0, { urn, custom: true, id: "planted-id", type: "pulumi:providers:evilplug", inputs: props, outputs: props });
        acmeOf(rs).provider = `${urn}::planted-id`;
      },
      '"default.acme" ("pulumi-nodejs:dynamic/pulumi-user-groups:UserGroup") provider: is not this stack\'s default provider',
    ],
    [
      "a field this package never writes",
      (rs, url) => {
        acmeOf(rs).inputs!.pluginDownloadURL = url;
        acmeOf(rs).outputs!.pluginDownloadURL = url;
      },
      '"default.acme" ("pulumi-nodejs:dynamic/pulumi-user-groups:UserGroup") inputs.pluginDownloadURL: is a field this package never writes',
    ],
  ];

  const READERS: string[][] = [
    ["preview", "--file", "groups.yaml", "--stack", "prod", "--json"],
    ["up", "--file", "groups.yaml", "--stack", "prod", "--yes", "--json"],
    ["up", "--file", "groups.yaml", "--stack", "prod", "--yes", "--refresh", "--json"],
    ["refresh", "--stack", "prod", "--json"],
    ["drift", "--stack", "prod", "--json"],
    ["destroy", "--stack", "prod", "--yes", "--json"],
    ["recover", "--file", "groups.yaml", "--stack", "prod", "--yes", "--json"],
  ];

  beforeAll(async () => {
    scratch = mkdtempSync(path.join(env.workDir, "..", "scratch-"));
    pluginHost = await servePlantedPlugin(scratch);
    // The state the first up wrote (whatever the tests above left), as the groups on the service still are.
    writeFileSync(stackFile(), pristine);
  });
  afterAll(async () => {
    await pluginHost?.close();
  });

  it("the state a real up leaves is data this package writes: every command runs on it", async () => {
    const drift = await cli("drift", "--stack", "prod", "--json");
    expect(drift.code, drift.stderr).toBe(0);
    // Both groups checked against the service, which still holds them as that up left them.
    expect(JSON.parse(drift.stdout)).toMatchObject({ checked: 2, inSync: true, drift: [] });
  });

  // Each kind refused by one command at least, and each command shown refusing one kind at least: kind i on command
  // i, and the review's finding on the command left over too (seven CLI runs of seconds each; the same check runs
  // before each command: test/automation/engine/state-data.test.ts tries every kind on the judgement itself).
  const commandsFor = (index: number): string[][] =>
    READERS.filter((_, command) => command === index || (index === 0 && command >= KINDS.length));
  it("the matrix covers every kind and every command", () => {
    const covered = KINDS.flatMap((_, index) => commandsFor(index));
    expect(new Set(covered)).toEqual(new Set(READERS));
    for (const index of KINDS.keys()) expect(commandsFor(index).length).toBeGreaterThan(0);
  });
  for (const [index, [kind, plant, named]] of KINDS.entries()) {
    const commands = commandsFor(index);
    it(`refuses ${kind} on ${commands.map((c) => `${c[0]}${c.includes("--refresh") ? " --refresh" : ""}`).join(", ")}: exit 2, untrusted_state naming it, no download, no process, no request`, async () => {
      const planted = JSON.parse(pristine) as { checkpoint: { latest: { resources: Resource[] } } };
      plant(planted.checkpoint.latest.resources, pluginHost.url);
      writeFileSync(stackFile(), JSON.stringify(planted, null, 4));
      for (const args of commands) {
        const before = server.journal().length;
        const result = await cli(...args);
        const what = `${args.join(" ")}: ${result.stderr}`;
        expect(result.code, what).toBe(2);
        const error = (JSON.parse(result.stdout) as { error: { code: string; message: string } }).error;
        expect(error.code, what).toBe("untrusted_state");
        expect(error.message, what).toContain(named);
        expect(error.message).not.toContain(KEY);
        expect(pluginHost.requests, `${what}: asked for a plugin`).toEqual([]);
        expect(pluginHost.ran(), `${what}: started the planted plugin`).toBe(false);
        expect(server.journal().length, `${what}: sent a request`).toBe(before);
      }
      writeFileSync(stackFile(), pristine);
    }, 300_000); // one or two CLI runs, seconds each (more under load)
  }
});
