// Issue #39 item 3: every write to a shared backend is fenced, the recovery's
// import included. Before, `recover --rewrite-providers` imported the state
// before its run was marked, so the import's PostgreSQL session carried no epoch
// and the fence on Pulumi's table let it through: a recovery paused while another
// replica took the lease and created a group, then resumed, wrote its stale
// document over that group (the service kept it; the next `up` failed with
// "already exists"). Here recovery A (the CLI, its own process group) is paused
// (SIGSTOP) the moment its `pulumi stack import` starts; replica B takes the
// stack over (A's lease expires by the database's clock) and creates a group;
// A resumes: its write is refused with the lost lease's code, B's group is still
// in the state and in the service, and the next `up` changes nothing.
import { spawn } from "node:child_process";
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FakeServer, startFakeServer } from "../../../fake-server";
import { provisionUserGroups, type RunOptions } from "../../../provider/automation";
import { selectStack } from "../../../provider/automation/engine/open-stack";
import { KNOWN_PROVIDER_TEXTS } from "../../../provider/automation/engine/state";
import { exportState, importState } from "../../../provider/automation/engine/state";
import { USER_GROUP_TYPE } from "../../../provider/resource/user-group";
import { startPostgres, type PostgresServer } from "../../../testkit/postgres";
import { commandLine, descendantsOf } from "../../../testkit/kill-tree";
import { createPulumiTestEnv, type PulumiTestEnv } from "../../support/pulumi-env";
import { USER_GROUPS_CLI } from "../../support/user-groups-cli";

const KEY = "recover-fence-key-000001";
const PASSPHRASE = "recover-fence";
const STACK = "fenced";
let server: FakeServer;
let env: PulumiTestEnv;
let postgres: PostgresServer;

beforeAll(async () => {
  server = await startFakeServer({ apiKeys: [{ key: KEY, environment: "Customer" }] });
  env = createPulumiTestEnv("recover-fence");
  postgres = await startPostgres();
});
afterAll(async () => {
  postgres?.stop();
  await server?.close();
  env?.cleanup();
});

function optionsOf(replica: string): RunOptions {
  return {
    stack: STACK,
    backendUrl: postgres.backendUrl,
    workDir: path.join(env.workDir, replica),
    passphrase: PASSPHRASE,
    envVars: { ...env.envVars, PULUMI_BACKEND_URL: postgres.backendUrl, USER_GROUPS_BASE_URL: server.url, USER_GROUPS_API_KEY: KEY },
  };
}

/** The state's resources as the backend holds them. */
async function stateOf(options: RunOptions): Promise<Array<{ urn: string; type: string; inputs?: Record<string, unknown>; outputs?: Record<string, unknown> }>> {
  const selected = await selectStack(options, async () => ({}), { mustExist: true });
  try {
    return ((await exportState(selected.stack)).deployment as { resources: never[] }).resources;
  } finally {
    selected.dispose();
  }
}

describe.skipIf(process.platform !== "linux")("a recovery paused across another replica's takeover (PostgreSQL)", () => {
  it("resumed, its import is refused; the other replica's group stays in the state and the service; the next up changes nothing", async () => {
    const b = optionsOf("b");
    await provisionUserGroups({ ...b, groups: [{ name: "First", userGroupId: "first" }] });
    // An older version's provider text in the state: `recover --rewrite-providers` has something to write back.
    const selected = await selectStack(b, async () => ({}), { mustExist: true });
    try {
      const state = await exportState(selected.stack);
      for (const resource of (state.deployment as { resources: Array<{ type: string; inputs: Record<string, unknown>; outputs: Record<string, unknown> }> }).resources) {
        if (resource.type !== USER_GROUP_TYPE) continue;
        resource.inputs.__provider = KNOWN_PROVIDER_TEXTS[1];
        resource.outputs.__provider = KNOWN_PROVIDER_TEXTS[1];
      }
      await importState(selected.stack, state);
    } finally {
      selected.dispose();
    }

    // Recovery A: the CLI, its own process group, paused when its `pulumi stack import` starts.
    const aDir = path.join(env.workDir, "a");
    const aTmp = path.join(env.workDir, "a-tmp");
    mkdirSync(aDir, { recursive: true });
    mkdirSync(aTmp);
    chmodSync(aTmp, 0o700);
    writeFileSync(path.join(aDir, "groups.yaml"), "groups:\n  - name: First\n    userGroupId: first\n");
    const a = spawn(process.execPath, [USER_GROUPS_CLI, "recover", "--file", "groups.yaml", "--stack", STACK, "--rewrite-providers", "--yes", "--json"], {
      cwd: aDir,
      env: { ...process.env, ...optionsOf("a").envVars, PULUMI_CONFIG_PASSPHRASE: PASSPHRASE, TMPDIR: aTmp },
      detached: true,
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    a.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
    a.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    const exited = new Promise<number | null>((resolve) => a.on("close", (code) => resolve(code)));
    let importing: number | undefined;
    for (const started = Date.now(); importing === undefined && Date.now() - started < 120_000; ) {
      importing = descendantsOf(a.pid!).find((pid) => / stack import --file /.test(commandLine(pid)));
      if (importing === undefined) await new Promise((resolve) => setTimeout(resolve, 3));
    }
    expect(importing, `recovery A never reached its import: ${stderr}`).toBeDefined();
    process.kill(-a.pid!, "SIGSTOP");
    // The import runs in a session that names A's epoch (what the fence on Pulumi's table checks).
    const importLine = commandLine(importing!);
    expect(importLine).toContain("stack import");
    const environ = readFileSync(`/proc/${importing}/environ`, "utf8").split("\0");
    expect(environ.find((line) => line.startsWith("PULUMI_BACKEND_URL="))).toMatch(/application_name=ug-run:[0-9a-f]{16}:[0-9]+/);

    // Replica B: waits for A's lease to expire (by the database's clock), takes the stack over, creates a group.
    const second = await provisionUserGroups({ ...b, lockTimeoutMs: 90_000, groups: [{ name: "First", userGroupId: "first" }, { name: "Second", userGroupId: "second" }] });
    expect(second.groups.find((g) => g.resourceName === "default.second")?.change).toBe("create");
    const secondOnServer = server.groups().find((g) => g.user_group_id === "second");
    expect(secondOnServer).toBeDefined();

    // A resumes: its stale document (without "second") must not land.
    process.kill(-a.pid!, "SIGCONT");
    const code = await exited;
    expect(code, `${stdout}\n${stderr}`).toBe(1);
    const error = (JSON.parse(stdout) as { error: { code: string; message: string } }).error;
    console.log(`recover-fence: A after resuming: ${error.code}: ${error.message.slice(0, 300)}`);
    expect(["run_lease_lost", "run_fenced"], error.message).toContain(error.code);
    // The fence on Pulumi's table refused A's write (a statement from A's engine session, after B's epoch began).
    const refused = readFileSync(postgres.logFile, "utf8").split("\n").filter((line) => /ERROR: +run_fenced/.test(line));
    console.log(`recover-fence: refused by the fence: ${refused.map((line) => line.slice(0, 200)).join(" | ")}`);
    expect(refused.length, "no write of A's reached the fence").toBeGreaterThan(0);

    // Nothing lost: B's group is in the state and in the service; the next up finds nothing to do.
    const urns = (await stateOf(b)).filter((r) => r.type === USER_GROUP_TYPE).map((r) => r.urn.split("::").at(-1));
    expect(urns.sort()).toEqual(["default.first", "default.second"]);
    expect(server.groups().find((g) => g.user_group_id === "second")).toEqual(secondOnServer);
    const next = await provisionUserGroups({ ...b, groups: [{ name: "First", userGroupId: "first" }, { name: "Second", userGroupId: "second" }] });
    expect(next.changed).toBe(false);
  }, 300_000);
});
