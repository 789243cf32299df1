#!/usr/bin/env node
// user-groups-fake-server: run the fake /api/user service from a shell.
import { randomBytes } from "node:crypto";
import { parseCli, USAGE } from "./cli-args.js";
import { startFakeServer, type FakeServer } from "./server.js";

async function main(): Promise<void> {
  const parsed = parseCli(process.argv.slice(2));
  if (parsed.kind === "help") {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  if (parsed.kind === "error") {
    process.stderr.write(`user-groups-fake-server: ${parsed.message}\n\n${USAGE}\n`);
    process.exit(2);
  }
  const config = parsed.config;
  if (config.apiKeys.length === 0) {
    const key = randomBytes(24).toString("base64url");
    config.apiKeys.push({ key, environment: "Customer", readOnly: false });
    // Printed once, to stderr, so stdout stays the single "listening on" line.
    process.stderr.write(`no --api-key given; generated a Customer read-write API key: ${key}\n`);
  }

  let server: FakeServer;
  try {
    server = await startFakeServer(config);
  } catch (error) {
    process.stderr.write(`user-groups-fake-server: ${error instanceof Error ? error.message : String(error)}\n`);
    // Bad configuration (non-loopback without admin token, unreadable data file) is a usage error.
    process.exit(2);
  }
  process.stdout.write(`listening on ${server.url}\n`);

  let stopping = false;
  const stop = (signal: string): void => {
    if (stopping) {
      // A second signal means "now".
      process.exit(1);
    }
    stopping = true;
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
