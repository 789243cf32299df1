// `npm start`: the quickstart example (the repository's root Pulumi.yaml), run
// with `up` through the Automation API against an embedded fake server whose
// data persists in .demo/, on a file backend in .demo/state. Run it twice: the
// second run changes nothing. `npm run demo:down` destroys it all.
// With USER_GROUPS_BASE_URL and USER_GROUPS_API_KEY set, it targets that API.
// In a terminal the embedded server stays up after the summary, so its dashboard
// can be looked at, until Ctrl-C (USER_GROUPS_DEMO_SERVE=1 or 0 decides instead).
import { LocalWorkspace, PulumiCommand, type Stack } from "@pulumi/pulumi/automation";
import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { chmodSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { type FakeServer, startFakeServer } from "../fake-server";

// Compiled to build/scripts/ (tsconfig.tools.json); run from source, scripts/ is one level down.
const ROOT = path.resolve(__dirname, path.basename(path.dirname(__dirname)) === "build" ? "../.." : "..");
const DEMO_DIR = path.join(ROOT, ".demo");
const STATE_DIR = path.join(DEMO_DIR, "state");
const DATA_FILE = path.join(DEMO_DIR, "fake-server.json");
const KEY_FILE = path.join(DEMO_DIR, "api-key");
const STACK = "demo";
const DEMO_PASSPHRASE = "pulumi-user-groups-demo";

/** Real credentials target a real API: their stack's secrets must not hang on a passphrase printed in the README. */
function passphraseFor(external: boolean): string {
  const given = process.env.PULUMI_CONFIG_PASSPHRASE;
  if (given !== undefined && given !== "") return given;
  if (external) {
    throw new Error(
      "USER_GROUPS_BASE_URL and USER_GROUPS_API_KEY point the demo at a real API: set PULUMI_CONFIG_PASSPHRASE to a passphrase of your own " +
        `(the public demo passphrase is only used with the embedded fake server). Nothing was changed.`,
    );
  }
  return DEMO_PASSPHRASE;
}

function isExternal(): boolean {
  return Boolean(process.env.USER_GROUPS_BASE_URL && process.env.USER_GROUPS_API_KEY);
}

/** Whether `up` keeps the embedded server (and its dashboard) running until a signal. */
function keepServing(): boolean {
  const choice = process.env.USER_GROUPS_DEMO_SERVE;
  if (choice === "1" || choice === "0") return choice === "1";
  return process.stdin.isTTY === true && process.stdout.isTTY === true;
}

function untilSignal(): Promise<void> {
  return new Promise((resolve) => {
    process.once("SIGINT", () => resolve());
    process.once("SIGTERM", () => resolve());
  });
}

/** The engine: a pulumi on PATH or the one ensure-pulumi builds (see README). */
function pulumiBinDir(): string {
  const out = execFileSync(path.join(ROOT, "scripts/ensure-pulumi"), { encoding: "utf8", stdio: ["ignore", "pipe", "inherit"] });
  return out.trim().split("\n").at(-1) ?? "";
}

/** One demo key, kept with the data file so that a second run finds its groups. */
function demoApiKey(): string {
  if (existsSync(KEY_FILE)) return readFileSync(KEY_FILE, "utf8").trim();
  const key = `demo-${randomBytes(16).toString("hex")}`;
  writeFileSync(KEY_FILE, `${key}\n`, { mode: 0o600 });
  return key;
}

interface Target {
  readonly server?: FakeServer;
  readonly description: string;
}

async function openStack(binDir: string): Promise<{ stack: Stack; target: Target }> {
  const external = isExternal();
  const passphrase = passphraseFor(external);
  // The demo's state, data file (tokens in plain text) and key: the user's alone.
  mkdirSync(STATE_DIR, { recursive: true, mode: 0o700 });
  chmodSync(DEMO_DIR, 0o700);
  chmodSync(STATE_DIR, 0o700);
  let server: FakeServer | undefined;
  if (!external) {
    server = await startFakeServer({ apiKeys: [{ key: demoApiKey(), environment: "Customer" }], dataFile: DATA_FILE });
  }
  const pulumiCommand = await PulumiCommand.get({ root: path.dirname(binDir) });
  // Credentials travel in the environment, never in stack config: Pulumi records
  // stack config in the state (as the default provider's inputs) and a destroy
  // would use the recorded base URL, while the embedded server gets a new port
  // each run.
  const credentials: Record<string, string> = server ? { USER_GROUPS_BASE_URL: server.url, USER_GROUPS_API_KEY: demoApiKey() } : {};
  const stack = await LocalWorkspace.createOrSelectStack(
    { stackName: STACK, workDir: ROOT },
    {
      pulumiCommand,
      envVars: {
        PULUMI_BACKEND_URL: `file://${STATE_DIR}`,
        PULUMI_CONFIG_PASSPHRASE: passphrase,
        PULUMI_SKIP_UPDATE_CHECK: "true",
        PATH: `${binDir}${path.delimiter}${process.env.PATH ?? ""}`,
        ...credentials,
      },
    },
  );
  // Config would win over the environment: drop any left from a hand-made run.
  await stack.removeAllConfig(["user-groups:baseUrl", "user-groups:apiKey"]);
  const description = server
    ? `the embedded fake server at ${server.url} (data: ${path.relative(ROOT, DATA_FILE)})`
    : `${process.env.USER_GROUPS_BASE_URL} (USER_GROUPS_BASE_URL)`;
  return { stack, target: { ...(server ? { server } : {}), description } };
}

async function up(): Promise<void> {
  passphraseFor(isExternal()); // before anything is built or written
  const binDir = pulumiBinDir();
  const { stack, target } = await openStack(binDir);
  try {
    console.log(`Running the quickstart example (Pulumi.yaml -> examples/quickstart) against ${target.description}\n`);
    const result = await stack.up({ onOutput: (text) => process.stdout.write(text) });
    const changes = Object.entries(result.summary.resourceChanges ?? {})
      .filter(([op]) => op !== "same")
      .map(([op, n]) => `${n} ${op}`);
    const groups = target.server?.groups() ?? [];
    const serve = target.server !== undefined && keepServing();
    const env = `PULUMI_BACKEND_URL=file://${STATE_DIR} PULUMI_CONFIG_PASSPHRASE=${process.env.PULUMI_CONFIG_PASSPHRASE ? '"$PULUMI_CONFIG_PASSPHRASE"' : DEMO_PASSPHRASE}`;
    console.log(
      [
        "",
        "Summary",
        `  resources:    ${changes.length > 0 ? changes.join(", ") : "none (everything was already up to date)"}`,
        `  groups:       ${target.server ? `${groups.length} on the server: ${groups.map((g) => `${g.user_group_id} (${g.environment}, team ${g.team_id})`).join(", ")}` : "see the outputs above"}`,
        `  environment:  ${String(result.outputs.environment?.value ?? "unknown")}`,
        `  state:        ${path.relative(ROOT, STATE_DIR)}/ (stack "${STACK}", file backend)`,
        ...(target.server ? [`  server data:  ${path.relative(ROOT, DATA_FILE)}`] : []),
        ...(target.server ? [`  dashboard:    ${target.server.url}/__admin/${serve ? "" : " (up while this ran; in a terminal it stays up until Ctrl-C)"}`] : []),
        `  the token:    ${env} \\`,
        `                  ${path.join(binDir, "pulumi")} stack output token --show-secrets --stack ${STACK}`,
        "  tear down:    npm run demo:down",
      ].join("\n"),
    );
    if (serve) {
      console.log("\nThe fake server keeps running so you can open its dashboard; Ctrl-C stops it.");
      await untilSignal();
    }
  } finally {
    await target.server?.close();
  }
}

async function down(): Promise<void> {
  if (!existsSync(STATE_DIR)) {
    console.log("Nothing to tear down: no .demo/ state.");
    return;
  }
  passphraseFor(isExternal());
  const binDir = pulumiBinDir();
  const { stack, target } = await openStack(binDir);
  try {
    await stack.destroy({ onOutput: (text) => process.stdout.write(text) });
    await stack.workspace.removeStack(STACK);
  } finally {
    await target.server?.close();
  }
  rmSync(DEMO_DIR, { recursive: true, force: true });
  rmSync(path.join(ROOT, `Pulumi.${STACK}.yaml`), { force: true });
  console.log("\nDestroyed the demo stack and removed .demo/.");
}

const command = process.argv[2] ?? "up";
(command === "down" ? down() : up()).catch((error: unknown) => {
  console.error(`demo ${command} failed: ${error instanceof Error ? error.message : String(error)}`);
  process.exitCode = 1;
});
