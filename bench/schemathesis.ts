// Schemathesis's full run against the fake server: test/fake-server/schemathesis.toml as it
// stands (300 cases per operation and phase: about 2,000 cases, every check and phase, seeded),
// where `npm test` (test/fake-server/schemathesis.test.ts) runs the same config at a smaller bound.
//   npm run bench:schemathesis
// Exits non-zero when Schemathesis finds a failure. Needs scripts/ensure-schemathesis's virtualenv.
import { execFileSync, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { startFakeServer } from "../fake-server/index.js";

const ROOT = path.resolve(__dirname, "../..");
const KEY = "bench-schemathesis-key-000001";

async function main(): Promise<number> {
  const st = execFileSync(path.join(ROOT, "scripts", "ensure-schemathesis"), { encoding: "utf8", stdio: ["ignore", "pipe", "inherit"] }).trim().split("\n").at(-1)!;
  const server = await startFakeServer({ apiKeys: [{ key: KEY, environment: "Customer" }], journalSize: 100_000 });
  const dir = mkdtempSync(path.join(tmpdir(), "schemathesis-bench-"));
  try {
    const config = path.join(ROOT, "test", "fake-server", "schemathesis.toml");
    // The key travels in the environment (the config reads it), never on the command line.
    // Spawned, not spawnSync: the server answers from this process's event loop.
    return await new Promise<number>((resolve, reject) => {
      const child = spawn(st, ["--config-file", config, "run", "--report", "json", "--report-dir", dir, `${server.url}/openapi.json`], {
        cwd: dir,
        env: { ...process.env, USER_GROUPS_SCHEMATHESIS_API_KEY: KEY },
        stdio: "inherit",
      });
      child.on("error", reject);
      child.on("close", (code) => resolve(code ?? 1));
    });
  } finally {
    await server.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
