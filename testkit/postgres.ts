// A throwaway PostgreSQL server for tests of a shared state backend (Pulumi's
// diy `postgres://` backend): the machine's own binaries, a data directory in
// a fresh temp dir, 127.0.0.1 and a free port, stopped and removed after.
// initdb refuses to run as root, so as root it runs as an unprivileged user.
// With `password`, TCP connections must log in with it (SCRAM); local socket
// connections stay trusted.
import { execFileSync } from "node:child_process";
import { chmodSync, chownSync, existsSync, mkdtempSync, readdirSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { freePort } from "./free-port";

export interface PostgresOptions {
  /** The password of user "postgres" over TCP (else any connection is trusted). Not in backendUrl: the caller puts it where it wants. */
  readonly password?: string;
}

export interface PostgresServer {
  /** A Pulumi backend URL for this server (its own database), without a password. */
  readonly backendUrl: string;
  readonly port: number;
  /** The server's log (errors a statement raised, e.g. a write the run fence refused); gone after stop(). */
  readonly logFile: string;
  /**
   * Restarts the server (pg_ctl stop -m fast, then start on the same port):
   * every session ends, advisory locks with them. `downMs`: how long it stays
   * down between the two. Resolves once it accepts connections again.
   */
  restart(options?: { readonly downMs?: number; readonly mode?: "fast" | "immediate" }): Promise<void>;
  stop(): void;
}

const INSTALL_HINT =
  "PostgreSQL's server binaries are needed for the shared-backend tests: install them with `apt-get install postgresql` " +
  "(Debian; .ci/run does this when they are missing). They are looked for in /usr/lib/postgresql/*/bin.";

/** The newest installed server's bin directory. */
function postgresBinDir(): string {
  const root = "/usr/lib/postgresql";
  const versions = existsSync(root)
    ? readdirSync(root)
        .filter((v) => existsSync(path.join(root, v, "bin", "initdb")) && existsSync(path.join(root, v, "bin", "pg_ctl")))
        .sort((a, b) => Number(b) - Number(a))
    : [];
  if (versions.length === 0) throw new Error(INSTALL_HINT);
  return path.join(root, versions[0]!, "bin");
}

/** The unprivileged user to run the server as when we are root ("postgres" from the Debian package, else one we make). */
function serverUser(): { name: string; uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const lookup = (name: string) => {
    try {
      const id = (flag: string) => Number(execFileSync("id", [flag, name], { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }));
      return { name, uid: id("-u"), gid: id("-g") };
    } catch {
      return undefined; // no such user
    }
  };
  const existing = lookup("postgres") ?? lookup("ug-postgres");
  if (existing) return existing;
  execFileSync("useradd", ["--system", "--no-create-home", "--shell", "/usr/sbin/nologin", "ug-postgres"]);
  return lookup("ug-postgres");
}

/**
 * A trusted cluster's data directory, initdb'd once per machine, server version and user and copied for each
 * server (initdb takes seconds of a test file's time; a copy, a fraction of one). Made in a directory of its own
 * and renamed into place, so that test files starting at once never see half of one.
 */
function copyTemplate(bin: string, user: { name: string; uid: number; gid: number } | undefined, run: (tool: string, args: string[]) => void, data: string): void {
  const template = path.join(tmpdir(), `user-groups-pg-template-${path.basename(path.dirname(bin))}-${process.getuid?.() ?? 0}`);
  if (!existsSync(path.join(template, "data", "PG_VERSION"))) {
    const making = mkdtempSync(`${template}-making-`);
    chmodSync(making, 0o700);
    if (user) chownSync(making, user.uid, user.gid);
    try {
      execFileSync(user ? "runuser" : path.join(bin, "initdb"), [...(user ? ["-u", user.name, "--", path.join(bin, "initdb")] : []), "-D", path.join(making, "data"), "-U", "postgres", "-A", "trust", "-E", "UTF8", "--no-sync", "--no-instructions"], { stdio: ["ignore", "pipe", "pipe"] });
      renameSync(making, template);
    } catch {
      // Another file made it meanwhile (the rename finds it there), or initdb failed: run it in place, as before.
      rmSync(making, { recursive: true, force: true });
      if (!existsSync(path.join(template, "data", "PG_VERSION"))) {
        run("initdb", ["-D", data, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--no-sync", "--no-instructions"]);
        return;
      }
    }
  }
  // -a keeps the owner (the server's user, when we are root) and the modes (0700: PostgreSQL refuses others).
  execFileSync("cp", ["-a", path.join(template, "data"), data], { stdio: ["ignore", "pipe", "pipe"] });
}

export async function startPostgres(options: PostgresOptions = {}): Promise<PostgresServer> {
  const bin = postgresBinDir();
  const dir = mkdtempSync(path.join(tmpdir(), "user-groups-pg-"));
  chmodSync(dir, 0o700);
  const user = serverUser();
  if (user) chownSync(dir, user.uid, user.gid);
  const run = (tool: string, args: string[]) => {
    const command = user ? "runuser" : path.join(bin, tool);
    const argv = user ? ["-u", user.name, "--", path.join(bin, tool), ...args] : args;
    try {
      execFileSync(command, argv, { cwd: dir, stdio: ["ignore", "pipe", "pipe"], encoding: "utf8" });
    } catch (error) {
      const output = error as { stdout?: string; stderr?: string };
      throw new Error(`${tool} failed: ${output.stderr ?? ""}${output.stdout ?? ""}\n${INSTALL_HINT}`);
    }
  };
  const data = path.join(dir, "data");
  const auth = ["-A", "trust"];
  if (options.password !== undefined) {
    const pwfile = path.join(dir, "pwfile");
    writeFileSync(pwfile, `${options.password}\n`, { mode: 0o600 });
    if (user) chownSync(pwfile, user.uid, user.gid);
    auth.splice(0, 2, "--auth-local=trust", "--auth-host=scram-sha-256", `--pwfile=${pwfile}`);
  }
  if (options.password === undefined) copyTemplate(bin, user, run, data);
  else run("initdb", ["-D", data, "-U", "postgres", ...auth, "-E", "UTF8", "--no-sync", "--no-instructions"]);
  let port = 0;
  const startArgs = () => [
    "-D", data, "-l", path.join(dir, "server.log"), "-w", "-t", "60",
    "-o", `-c listen_addresses=127.0.0.1 -p ${port} -k ${dir} -c fsync=off -c synchronous_commit=off -c full_page_writes=off`,
    "start",
  ];
  // Another process may take the free port between our probe and the server's bind: try a few.
  for (let attempt = 1; ; attempt++) {
    port = await freePort();
    try {
      run("pg_ctl", startArgs());
      break;
    } catch (error) {
      if (attempt >= 3) {
        rmSync(dir, { recursive: true, force: true });
        throw error;
      }
    }
  }
  let stopped = false;
  return {
    port,
    logFile: path.join(dir, "server.log"),
    backendUrl: `postgres://postgres@127.0.0.1:${port}/postgres?sslmode=disable`,
    restart: async ({ downMs = 0, mode = "fast" } = {}) => {
      if (stopped) throw new Error("this PostgreSQL server was stopped for good");
      run("pg_ctl", ["-D", data, "-m", mode, "-w", "stop"]);
      if (downMs > 0) await new Promise((resolve) => setTimeout(resolve, downMs));
      run("pg_ctl", startArgs());
    },
    stop: () => {
      if (stopped) return;
      stopped = true;
      try {
        run("pg_ctl", ["-D", data, "-m", "immediate", "-w", "stop"]);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
  };
}
