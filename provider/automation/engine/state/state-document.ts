// A stack's state as a document: the only place this package exports a state or
// imports one (test/architecture/state-document.test.ts keeps it so). Issue #39:
// the Automation API's `exportStack()` runs `pulumi stack export --show-secrets`,
// and its `importStack()` writes the document to `os.tmpdir()/automation-NNNNNN`
// (mode 0644, left behind by a kill): every token in plaintext, readable by
// anyone on the machine. Here instead:
//
// - exportState: `pulumi stack export` without `--show-secrets`, through the
//   stack's own workspace (its command, run directory, environment and
//   backend): every secret stays ciphertext; on a file backend the same
//   document is read from the stack's file, with no CLI process
//   (backends/file/stack-file.ts). A passphrase stack's passphrase is
//   checked against the state's own check value, so that a wrong one fails here
//   as it would in the engine (WrongPassphraseError), before anything runs.
// - readStateWithSecrets: the same export with each secret decrypted in this
//   process's memory (AES-256-GCM, key from the passphrase and the state's salt,
//   as Pulumi's passphrase secrets manager does), for the few readers that need
//   a token (the fleet's "already held" answer, drift's "rotated out of band").
//   Only passphrase stacks; the engine's other secrets managers (Pulumi Cloud's,
//   a KMS) cannot be read without `--show-secrets`, which this package never
//   runs: SecretsNotReadableError names it.
// - importState: the (encrypted) document written to a file created exclusively
//   (O_EXCL, no symlink followed, mode 0600) inside the run's private directory
//   (mkdtemp, 0700: workspace.ts), then `pulumi stack import --file`; the file
//   is removed on every way out: the import's end, a throw, the process's exit,
//   and SIGINT/SIGTERM/SIGHUP while it exists. A SIGKILL leaves it in the 0700
//   directory, holding ciphertext only.
//
// Reads ride out a checkpoint another run is rewriting (file backends, see
// readStateRetrying), in their span `user_groups.state.read`.
import type { Deployment, Stack, Workspace } from "@pulumi/pulumi/automation";
import { createDecipheriv, createHash, pbkdf2, randomBytes } from "node:crypto";
import { closeSync, constants, lstatSync, openSync, readFileSync, rmSync, writeSync } from "node:fs";
import path from "node:path";
import { promisify } from "node:util";
import { type Clock, systemClock } from "../../../clock";
import { UserGroupsError } from "../../../wire/errors";
import { readStoredDeployment, StackLockedError } from "../../backend";
import { inSpan } from "../../telemetry";
import { pulumiErrorLines, WrongPassphraseError } from "../pulumi-cli";

/** Pulumi's key of a secret envelope, and its value for a secret (sdk/go/common/resource/sig). */
const SIG_KEY = "4dabf18193072939515e22adb298388d";
const SECRET_SIG = "1b47061264138c4ac30d75fd1eb44270";

/** PulumiCommand's runner (not in its typings): what LocalWorkspace runs every command with; its failures are CommandErrors. */
type CommandRunner = { run(args: string[], cwd: string, env: Record<string, string>): Promise<{ stdout: string }> };

/** A command on the stack through its own workspace: its CLI, run directory and environment, as LocalWorkspace runs one. */
async function runPulumi(stack: Stack, args: string[]): Promise<string> {
  const workspace = stack.workspace;
  const env: Record<string, string> = { ...(workspace.pulumiHome ? { PULUMI_HOME: workspace.pulumiHome } : {}), ...workspace.envVars };
  const command = workspace.pulumiCommand as unknown as Partial<CommandRunner>;
  if (typeof command.run !== "function") throw new UserGroupsError("pulumi_command_failed", "This @pulumi/pulumi's PulumiCommand has no run(): a version this package does not support.");
  const result = await (command as CommandRunner).run([...args, "--stack", stack.name], workspace.workDir, env);
  return result.stdout;
}

// ---- reading -------------------------------------------------------------

const PROJECT_NAME = /^[A-Za-z0-9_.-]{1,100}$/;

/** Each workspace's project name, from its project settings (read once: a workspace's project never changes its name). */
const projectNames = new WeakMap<Workspace, Promise<string | undefined>>();

/** The workspace's project name; undefined when its settings cannot be read (the CLI answers then). */
function projectNameOf(workspace: Workspace): Promise<string | undefined> {
  let name = projectNames.get(workspace);
  if (name === undefined) {
    name = Promise.resolve()
      .then(() => workspace.projectSettings())
      .then(
        // It becomes a folder of the backend's path: only a name Pulumi takes (letters, digits, _ . -; at most 100)
        // and never "." or ".."; anything else is the CLI's to read.
        (settings) => (typeof settings?.name === "string" && PROJECT_NAME.test(settings.name) && !/^\.{1,2}$/.test(settings.name) ? settings.name : undefined),
        () => undefined,
      );
    projectNames.set(workspace, name);
  }
  return name;
}

/**
 * On a file backend (the one the stack's commands are given: the workspace's
 * PULUMI_BACKEND_URL), the deployment `pulumi stack export` would print, read
 * from the stack's file in this process: one CLI process less per read
 * (backends/file/stack-file.ts). The stack's project is the workspace's own (this
 * package's stacks are "user-groups", another program's its own). Undefined where
 * the CLI must answer.
 */
async function storedDeployment(stack: Stack): Promise<Deployment | undefined> {
  const backendUrl = stack.workspace.envVars?.PULUMI_BACKEND_URL;
  if (!backendUrl) return undefined;
  const project = await projectNameOf(stack.workspace);
  return project !== undefined ? (readStoredDeployment(backendUrl, project, stack.name) as Deployment | undefined) : undefined;
}

/**
 * The stack's state as the backend holds it (`pulumi stack export`): secrets as
 * ciphertext. A passphrase stack's passphrase is checked (WrongPassphraseError).
 */
export function exportState(stack: Stack, tornReadWaitsMs: readonly number[] = TORN_READ_WAITS_MS): Promise<Deployment> {
  return inSpan("user_groups.state.read", { "user_groups.stack": stack.name }, async () => {
    const deployment = await readStateRetrying(async () => (await storedDeployment(stack)) ?? (JSON.parse(await runPulumi(stack, ["stack", "export"])) as Deployment), stack.name, systemClock, tornReadWaitsMs);
    await secretsKeyOf(stack, deployment);
    return deployment;
  });
}

/** exportState with every secret decrypted in this process's memory, as `{ <sig>: <secret sig>, plaintext: "<JSON>" }`. */
export async function readStateWithSecrets(stack: Stack): Promise<Deployment> {
  const deployment = await exportState(stack);
  if (!holdsSecrets(deployment.deployment)) return deployment;
  const key = await secretsKeyOf(stack, deployment);
  if (key === undefined) throw new SecretsNotReadableError(stack.name, secretsProviderOf(deployment)?.type);
  return { ...deployment, deployment: revealed(deployment.deployment, key, stack.name) };
}

/** A stack whose secrets this package cannot decrypt without `--show-secrets` (a secrets manager other than the passphrase). */
export class SecretsNotReadableError extends UserGroupsError {
  constructor(
    readonly stackName: string,
    provider: unknown,
  ) {
    super(
      "secrets_not_readable",
      `The secrets of stack "${stackName}" are kept by the ${typeof provider === "string" ? JSON.stringify(provider.slice(0, 40)) : "unknown"} secrets manager: ` +
        "this package decrypts only passphrase stacks' secrets itself and never exports a state with its secrets shown (they would pass through the Pulumi CLI in plaintext). " +
        "Nothing was changed. Use a stack with the passphrase secrets manager (`pulumi stack init --secrets-provider passphrase`, or `pulumi stack change-secrets-provider passphrase`).",
    );
    this.name = "SecretsNotReadableError";
  }
}

interface SecretsProvider {
  readonly type?: unknown;
  readonly state?: { readonly salt?: unknown } | null;
}

function secretsProviderOf(deployment: Deployment): SecretsProvider | undefined {
  const provider = (deployment.deployment as { secrets_providers?: unknown } | undefined)?.secrets_providers;
  return provider !== null && typeof provider === "object" ? (provider as SecretsProvider) : undefined;
}

function isEnvelope(value: object): value is Record<string, unknown> {
  return (value as Record<string, unknown>)[SIG_KEY] === SECRET_SIG;
}

function holdsSecrets(value: unknown): boolean {
  if (value === null || typeof value !== "object") return false;
  if (Array.isArray(value)) return value.some(holdsSecrets);
  if (isEnvelope(value)) return true;
  return Object.values(value).some(holdsSecrets);
}

/** Every secret envelope's ciphertext decrypted (`plaintext`), the secrets manager's own state left as it is. */
function revealed(value: unknown, key: Buffer, stackName: string): unknown {
  if (value === null || typeof value !== "object") return value;
  if (Array.isArray(value)) return value.map((item) => revealed(item, key, stackName));
  if (isEnvelope(value)) {
    const { ciphertext, ...rest } = value;
    if (typeof ciphertext !== "string") return value;
    return { ...rest, plaintext: decrypt(ciphertext, key, stackName) };
  }
  return Object.fromEntries(Object.entries(value).map(([name, inner]) => [name, name === "secrets_providers" ? inner : revealed(inner, key, stackName)]));
}

/** Pulumi's symmetric crypter's value: `v1:<nonce, base64>:<ciphertext and tag, base64>`, AES-256-GCM. */
function decrypt(value: string, key: Buffer, stackName: string): string {
  const parts = value.split(":");
  const nonce = parts.length === 3 && parts[0] === "v1" ? Buffer.from(parts[1]!, "base64") : undefined;
  const sealed = parts.length === 3 ? Buffer.from(parts[2]!, "base64") : undefined;
  if (nonce === undefined || sealed === undefined || nonce.length !== 12 || sealed.length < 16) {
    throw new UserGroupsError("secrets_not_readable", `A secret in the state of stack "${stackName}" is not in the passphrase secrets manager's form: refusing to read the state.`);
  }
  try {
    const decipher = createDecipheriv("aes-256-gcm", key, nonce);
    decipher.setAuthTag(sealed.subarray(sealed.length - 16));
    return Buffer.concat([decipher.update(sealed.subarray(0, sealed.length - 16)), decipher.final()]).toString("utf8");
  } catch {
    throw new WrongPassphraseError(stackName);
  }
}

const pbkdf2Async = promisify(pbkdf2);

/** Keys derived this process, by salt state and passphrase digest: 1,000,000 rounds of PBKDF2 once per stack, not per read. */
const derivedKeys = new Map<string, Promise<Buffer>>();

/**
 * The passphrase stack's key, checked against the state's check value (the
 * state's `v1:<salt>:<"pulumi" encrypted>`); undefined for a state without a
 * passphrase secrets manager (a new stack, or another manager).
 */
async function secretsKeyOf(stack: Stack, deployment: Deployment): Promise<Buffer | undefined> {
  const provider = secretsProviderOf(deployment);
  const salt = provider?.state?.salt;
  if (provider?.type !== "passphrase" || typeof salt !== "string") return undefined;
  const parts = salt.split(":");
  if (parts.length !== 5 || parts[0] !== "v1") throw new UserGroupsError("secrets_not_readable", `The passphrase secrets manager's state of stack "${stack.name}" is not in a form Pulumi writes: refusing to read the state.`);
  const passphrase = passphraseOf(stack);
  if (passphrase === undefined) return undefined; // the engine will say so in its own words (missing passphrase)
  const id = `${salt}\u0000${createHash("sha256").update(passphrase).digest("hex")}`;
  let derived = derivedKeys.get(id);
  if (derived === undefined) {
    derived = pbkdf2Async(passphrase, Buffer.from(parts[1]!, "base64"), 1_000_000, 32, "sha256");
    derivedKeys.set(id, derived);
    derived.catch(() => derivedKeys.delete(id));
  }
  const key = await derived;
  if (decrypt(parts.slice(2).join(":"), key, stack.name) !== "pulumi") throw new WrongPassphraseError(stack.name);
  checkedKeys.set(stackKeyId(stack, passphrase), key);
  return key;
}

/**
 * The secret the run record's proofs are keyed from (lease/created-proof.ts): PBKDF2 of the stack's passphrase with a
 * salt of this package and the stack's name, as costly as Pulumi's own key, derived once per passphrase, stack and
 * process. The stack's name is in the salt so that no table made once for this package's salt tests a passphrase against
 * every user's records at once (a fixed salt would let it). Not the passphrase
 * secrets manager's key: that one follows the salt of the checkpoint, which a run from another workspace (a replica whose
 * stack config holds another `encryptionsalt`) rewrites, so a proof made under one checkpoint's salt failed under the
 * next one's (the file backend's fault history, a replica killed right after its ensure: every entry refused). Undefined
 * without a passphrase. Only called once a state read checked the passphrase (proofKeyOf, or knownSecretsKey).
 */
export function passphraseProofSecret(stack: Stack): Promise<Buffer | undefined> {
  const passphrase = passphraseOf(stack);
  if (passphrase === undefined) return Promise.resolve(undefined);
  const salt = `pulumi-user-groups run record proofs\u0000${stack.name}`;
  const id = createHash("sha256").update(passphrase).update("\u0000").update(salt).digest("hex");
  let derived = proofSecrets.get(id);
  if (derived === undefined) {
    derived = pbkdf2Async(passphrase, salt, 1_000_000, 32, "sha256");
    proofSecrets.set(id, derived);
    derived.catch(() => proofSecrets.delete(id));
  }
  return derived;
}

const proofSecrets = new Map<string, Promise<Buffer>>();

/** Keys checked against a stack's state this process, by backend, stack and passphrase digest (knownSecretsKey). */
const checkedKeys = new Map<string, Buffer>();

function stackKeyId(stack: Stack, passphrase: string): string {
  const backend = stack.workspace.envVars.PULUMI_BACKEND_URL ?? process.env.PULUMI_BACKEND_URL ?? "";
  return `${backend}\u0000${stack.name}\u0000${createHash("sha256").update(passphrase).digest("hex")}`;
}

/**
 * The passphrase stack's secrets key, checked against this state's check value
 * (WrongPassphraseError otherwise); undefined when the state has no passphrase
 * secrets manager (a new stack, or another manager). The run record's proofs are
 * keyed from it (automation/lease/created-proof.ts).
 */
export function stackSecretsKey(stack: Stack, deployment: Deployment): Promise<Buffer | undefined> {
  return secretsKeyOf(stack, deployment);
}

/** The key a read of this stack's state (exportState, readStateWithSecrets) checked this process, if any: no read needed. */
export function knownSecretsKey(stack: Stack): Buffer | undefined {
  const passphrase = passphraseOf(stack);
  return passphrase === undefined ? undefined : checkedKeys.get(stackKeyId(stack, passphrase));
}

/** The passphrase the engine would use: PULUMI_CONFIG_PASSPHRASE, else the file PULUMI_CONFIG_PASSPHRASE_FILE names (trimmed), as Pulumi reads them. */
function passphraseOf(stack: Stack): string | undefined {
  const env = stack.workspace.envVars;
  const direct = env.PULUMI_CONFIG_PASSPHRASE ?? process.env.PULUMI_CONFIG_PASSPHRASE;
  if (direct !== undefined) return direct;
  const file = env.PULUMI_CONFIG_PASSPHRASE_FILE || process.env.PULUMI_CONFIG_PASSPHRASE_FILE;
  if (!file) return undefined;
  // Resolved as the engine resolves it: from its working directory, the run directory.
  return readFileSync(path.resolve(stack.workspace.workDir, file), "utf8").trim();
}

// ---- writing -------------------------------------------------------------

/** Import files not yet removed: removed when the process exits or is told to stop. */
const liveImportFiles = new Set<string>();
const STOP_SIGNALS = ["SIGINT", "SIGTERM", "SIGHUP"] as const;

function removeLiveImportFiles(): void {
  for (const file of liveImportFiles) rmSync(file, { force: true });
  liveImportFiles.clear();
}

/** Removes the import files, then lets the signal do what it would have done without this listener. */
function onStopSignal(signal: NodeJS.Signals): void {
  removeLiveImportFiles();
  unwatchSignals();
  if (process.listenerCount(signal) === 0) process.kill(process.pid, signal);
}

function watchSignals(): void {
  for (const signal of STOP_SIGNALS) process.on(signal, onStopSignal);
  process.on("exit", removeLiveImportFiles);
}

function unwatchSignals(): void {
  for (const signal of STOP_SIGNALS) process.off(signal, onStopSignal);
  process.off("exit", removeLiveImportFiles);
}

/** The run directory must be this process's own: a directory (not a symlink), ours, closed to everyone else. */
function assertPrivateDir(dir: string): void {
  const stats = lstatSync(dir);
  const mine = typeof process.getuid !== "function" || stats.uid === process.getuid();
  if (!stats.isDirectory() || !mine || (stats.mode & 0o077) !== 0) {
    throw new UserGroupsError("file_refused", `${dir} is not a private directory of this process (0700, its own): refusing to write a state document there.`);
  }
}

/** Writes `text` to a new file in `dir` (O_EXCL, O_NOFOLLOW, 0600), registered for removal at exit and on a stop signal. */
function writeImportFile(dir: string, text: string): string {
  assertPrivateDir(dir);
  const file = path.join(dir, `state-import-${randomBytes(8).toString("hex")}.json`);
  const fd = openSync(file, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);
  if (liveImportFiles.size === 0) watchSignals();
  liveImportFiles.add(file);
  try {
    const bytes = Buffer.from(text, "utf8");
    for (let written = 0; written < bytes.length; ) written += writeSync(fd, bytes, written, bytes.length - written);
  } catch (error) {
    removeImportFile(file);
    throw error;
  } finally {
    closeSync(fd);
  }
  return file;
}

function removeImportFile(file: string): void {
  rmSync(file, { force: true });
  liveImportFiles.delete(file);
  if (liveImportFiles.size === 0) unwatchSignals();
}

export interface ImportStateOptions {
  /** Called right before the engine writes the state (after the document is ready): throws to write nothing (a lost run lease). */
  readonly beforeWrite?: () => Promise<void>;
}

/**
 * Writes `deployment` (as exportState gave it: secrets still ciphertext) as the
 * stack's state: `pulumi stack import --file` of a file only this process can
 * read, in the run's private directory, removed on every way out.
 */
export async function importState(stack: Stack, deployment: Deployment, options: ImportStateOptions = {}): Promise<void> {
  if (holdsPlaintextSecrets(deployment.deployment)) throw new UserGroupsError("invalid_option", `A state document with its secrets decrypted is never written (stack "${stack.name}"): import what exportState read.`);
  return inSpan("user_groups.state.write", { "user_groups.stack": stack.name }, async () => {
    const file = writeImportFile(stack.workspace.workDir, JSON.stringify(deployment));
    try {
      await options.beforeWrite?.();
      await runPulumi(stack, ["stack", "import", "--file", file]);
    } finally {
      removeImportFile(file);
    }
  });
}

function holdsPlaintextSecrets(value: unknown): boolean {
  if (value === null || typeof value !== "object") return false;
  if (Array.isArray(value)) return value.some(holdsPlaintextSecrets);
  if (isEnvelope(value) && "plaintext" in value) return true;
  return Object.values(value).some(holdsPlaintextSecrets);
}

// ---- torn reads ----------------------------------------------------------

/**
 * A read of the state that met a checkpoint half rewritten: a file backend's
 * engine truncates and rewrites `<stack>.json.attrs` in place (gocloud's
 * fileblob), so a reader without the lock (`stack export`, `stack select`) may
 * find it empty ("failed to load checkpoint: EOF") for the moment of the write,
 * or for as long as a slow disk stalls it.
 */
export function isTornRead(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  // A wrong passphrase or a cut database connection also fails "to load checkpoint": those are not torn files,
  // and asking again would only hide them (as stack_locked) behind seconds of waiting.
  if (/passphrase|secrets manager|decrypt|SQLSTATE|connection|driver: bad/i.test(error.message)) return false;
  return /(failed to load checkpoint|could not deserialize deployment)[^\n]*(EOF|unexpected end|invalid character|unmarshal)|unexpected end of JSON input/i.test(error.message);
}

/**
 * A state still torn after the bounded retries: another run is rewriting it
 * (its writer holds the stack's lock), so "the stack is locked, ask again"
 * (StackLockedError, `stack_locked`, retryable) is what the caller is told,
 * with Pulumi's words in its cause.
 */
export function tornStateError(stackName: string, cause: unknown): StackLockedError {
  const said = cause instanceof Error ? pulumiErrorLines(cause.message).join("; ").slice(0, 300) : "failed to load checkpoint";
  return new StackLockedError(stackName, { cause: new UserGroupsError("stack_locked", `The state of stack "${stackName}" was being rewritten by another run while it was read (${said}).`) });
}

/** Waits between reads of a torn state: about 3 s in all, longer than a checkpoint write takes unless its disk stalls. */
export const TORN_READ_WAITS_MS: readonly number[] = [100, 200, 400, 800, 1_600];

/**
 * Reads the state (`read`: one `stack export`), again after a torn read
 * (isTornRead) while TORN_READ_WAITS_MS lasts; then tornStateError (retryable).
 * Any other error is thrown at once, as it is.
 */
export async function readStateRetrying<T>(read: () => Promise<T>, stackName: string, clock: Clock = systemClock, waits: readonly number[] = TORN_READ_WAITS_MS): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await read();
    } catch (error) {
      if (!isTornRead(error)) throw error;
      const wait = waits[attempt];
      if (wait === undefined) throw tornStateError(stackName, error);
      await clock.sleep(wait);
    }
  }
}
