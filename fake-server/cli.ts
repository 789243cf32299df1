#!/usr/bin/env node
// user-groups-fake-server: run the fake /api/user service from a shell.
import { randomBytes } from "node:crypto";
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import type { ApiKeyConfig } from "./auth.js";
import { ENV_ADMIN_TOKEN, parseCli, USAGE, type CliConfig } from "./cli-args.js";
import { ENV_API_KEYS, parseApiKeyList, readApiKeysFile } from "./key-sources.js";
import { startFakeServer, type FakeServer } from "./server.js";

function usageError(message: string): never {
  process.stderr.write(`user-groups-fake-server: ${message}\n\n${USAGE}\n`);
  process.exit(2);
}

/** Adds the keys of --api-keys-file and USER_GROUPS_FAKE_API_KEYS to those of --api-key; a key given twice is an error. */
function collectKeys(config: CliConfig, env: NodeJS.ProcessEnv): string | undefined {
  const sources: Array<ApiKeyConfig[] | string> = [];
  if (config.apiKeysFile !== undefined) {
    let text: string;
    try {
      text = readApiKeysFile(config.apiKeysFile, (file) => readFileSync(file, "utf8"));
    } catch (error) {
      return (error as Error).message;
    }
    sources.push(parseApiKeyList(text, `--api-keys-file ${config.apiKeysFile}`, false));
  }
  const fromEnv = env[ENV_API_KEYS];
  if (fromEnv !== undefined && fromEnv.trim() !== "") sources.push(parseApiKeyList(fromEnv, ENV_API_KEYS, true));
  for (const keys of sources) {
    if (typeof keys === "string") return keys;
    for (const key of keys) {
      if (config.apiKeys.some((k) => k.key === key.key)) return "a key is given twice (across --api-key, --api-keys-file and the environment)";
      config.apiKeys.push(key);
    }
  }
  return undefined;
}

async function main(): Promise<void> {
  const parsed = parseCli(process.argv.slice(2));
  if (parsed.kind === "help") {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  if (parsed.kind === "error") usageError(parsed.message);
  const config = parsed.config;
  const keyProblem = collectKeys(config, process.env);
  if (keyProblem !== undefined) usageError(keyProblem);
  const adminToken = process.env[ENV_ADMIN_TOKEN];
  if (config.adminToken === undefined && adminToken !== undefined && adminToken !== "") config.adminToken = adminToken;
  if (config.apiKeys.length === 0) {
    const key = randomBytes(24).toString("base64url");
    config.apiKeys.push({ key, environment: "Customer", readOnly: false });
    // Printed once, to stderr, so stdout stays the single "listening on" line.
    process.stderr.write(`no --api-key given; generated a Customer read-write API key: ${key}\n`);
  }

  const { pidFile, ...serverConfig } = config;
  let server: FakeServer;
  try {
    server = await startFakeServer(serverConfig);
  } catch (error) {
    process.stderr.write(`user-groups-fake-server: ${error instanceof Error ? error.message : String(error)}\n`);
    // Bad configuration (non-loopback without admin token, unreadable data file) is a usage error.
    process.exit(2);
  }
  if (pidFile !== undefined) {
    try {
      // Before "listening on": a script that waits for that line finds the file.
      writeFileSync(pidFile, `${process.pid}\n`, { mode: 0o644 });
    } catch (error) {
      process.stderr.write(`user-groups-fake-server: cannot write --pid-file ${pidFile}: ${(error as Error).message}\n`);
      await server.close();
      process.exit(2);
    }
  }
  process.stdout.write(`listening on ${server.url}\n`);

  let stopping = false;
  const stop = (signal: string): void => {
    if (stopping) {
      // A second signal means "now".
      process.exit(1);
    }
    stopping = true;
    if (pidFile !== undefined) rmSync(pidFile, { force: true });
    server.close().then(
      () => process.exit(0),
      (error: unknown) => {
        process.stderr.write(`user-groups-fake-server: error while stopping on ${signal}: ${String(error)}\n`);
        process.exit(1);
      },
    );
  };
  process.on("SIGTERM", () => stop("SIGTERM"));
  process.on("SIGINT", () => stop("SIGINT"));
}

main().catch((error: unknown) => {
  process.stderr.write(`user-groups-fake-server: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
