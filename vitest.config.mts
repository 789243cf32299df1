import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    globalSetup: ["test/support/global-setup.ts"],
    // Pulumi engine runs take seconds each; unit tests stay fast regardless.
    testTimeout: 120_000,
    hookTimeout: 120_000,
    pool: "forks",
    // Most files wait on engine subprocesses and servers, not the CPU: run
    // several at once (vitest's default is one worker per core minus one).
    maxWorkers: 3,
  },
});
