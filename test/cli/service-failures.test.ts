// Issue #33 item 6: errors at the engine's edge a pipeline can act on. When
// every group of a run fails for one reason the service gave (a rejected key,
// nothing answering, a timeout), the run says so once, with a stable code and
// what to do, instead of one line per group. Tried with a rotated key, a port
// nothing listens on, and a listener that never answers.
import { writeFileSync } from "node:fs";
import net from "node:net";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ChangeTracker, serviceFailure } from "../../provider/automation/engine/change-tracker";
import { useStackFixture } from "../support/stack-fixture";
import { type CliRun, runUserGroupsCli } from "../support/user-groups-cli";

const fixture = useStackFixture({ label: "service-failures" });
let silent: net.Server;
const held = new Set<net.Socket>();
let silentUrl = "";
let closedUrl = "";

function cli(extra: Record<string, string>, ...args: string[]): Promise<CliRun> {
  return runUserGroupsCli(args, { cwd: fixture.env.workDir, env: { ...process.env, ...fixture.envVars({ PULUMI_BACKEND_URL: "", ...extra }) } });
}

function trackerWith(lines: Record<string, string>): ChangeTracker {
  const tracker = new ChangeTracker();
  for (const [name, text] of Object.entries(lines)) tracker.diagnostics.set(name, text);
  return tracker;
}

beforeAll(async () => {
  // Accepts connections and never answers (its sockets are ended in afterAll).
  silent = net.createServer((socket) => {
    held.add(socket);
    socket.on("close", () => held.delete(socket));
  });
  await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve));
  silentUrl = `http://127.0.0.1:${(silent.address() as net.AddressInfo).port}`;
  // A port nothing listens on: taken, then released.
  const probe = net.createServer();
  await new Promise<void>((resolve) => probe.listen(0, "127.0.0.1", resolve));
  closedUrl = `http://127.0.0.1:${(probe.address() as net.AddressInfo).port}`;
  await new Promise((resolve) => probe.close(resolve));
  writeFileSync(path.join(fixture.env.workDir, "groups.yaml"), "groups:\n  - name: Acme Corp\n    userGroupId: acme\n  - name: Globex\n    userGroupId: globex\n");
  const up = await cli({}, "up", "--file", "groups.yaml", "--stack", "prod", "--yes");
  expect(up.code, up.stderr).toBe(0);
});
afterAll(async () => {
  for (const socket of held) socket.destroy();
  await new Promise((resolve) => silent?.close(resolve));
});

describe("a run every group of which failed for one reason of the service's", () => {
  it("is one error with its code when every group says the same; a mix stays per group", () => {
    const reject = (id: string) => `Read user group (PUT https://s.example/api/user) for user_group_id "${id}" failed after 1 attempt: HTTP 401 unauthorized: no such key`;
    const refused = (id: string) => `Read user group (PUT https://s.example/api/user) for user_group_id "${id}" failed after 4 attempts: no answer from https://s.example (ECONNREFUSED)`;
    const timedOut = (id: string) => `Read user group (PUT https://s.example/api/user) for user_group_id "${id}" failed after 4 attempts: no answer from https://s.example (UND_ERR_HEADERS_TIMEOUT)`;
    expect(serviceFailure(trackerWith({ a: reject("a"), b: reject("b") }), "prod")?.code).toBe("api_key_rejected");
    expect(serviceFailure(trackerWith({ a: refused("a"), b: refused("b") }), "prod")?.code).toBe("service_unreachable");
    expect(serviceFailure(trackerWith({ a: timedOut("a") }), "prod")?.code).toBe("service_timeout");
    expect(serviceFailure(trackerWith({ a: reject("a"), b: refused("b") }), "prod")).toBeUndefined();
    expect(serviceFailure(trackerWith({ a: reject("a"), b: "already exists" }), "prod")).toBeUndefined();
    expect(serviceFailure(trackerWith({}), "prod")).toBeUndefined();
    expect(serviceFailure(trackerWith({ a: reject("a"), b: reject("b") }), "prod")?.message).toMatch(/each of its 2 groups because https:\/\/s\.example rejected the API key \(HTTP 401\)/);
  });

  it("a rotated key: refresh, drift and up --refresh exit 1 with api_key_rejected, said once", async () => {
    for (const args of [["refresh", "--stack", "prod", "--json"], ["drift", "--stack", "prod", "--json"], ["up", "--file", "groups.yaml", "--stack", "prod", "--yes", "--refresh", "--json"]]) {
      const run = await cli({ USER_GROUPS_API_KEY: "rotated-key-000000000000" }, ...args);
      expect(run.code, `${args[0]}: ${run.stderr}`).toBe(1);
      const error = (JSON.parse(run.stdout) as { error: { code: string; message: string } }).error;
      expect(error.code, args[0]).toBe("api_key_rejected");
      expect(error.message.match(/HTTP 401/g), args[0]).toHaveLength(1);
      expect(error.message).toContain("USER_GROUPS_API_KEY");
      expect(error.message).not.toContain("rotated-key-000000000000");
    }
  });

  it("nothing listening: service_unreachable; no answer in time: service_timeout", async () => {
    const quick = { USER_GROUPS_MAX_ATTEMPTS: "1", USER_GROUPS_HTTP_TIMEOUT_MS: "1000", USER_GROUPS_RATE_LIMIT: "off" };
    const down = await cli({ ...quick, USER_GROUPS_BASE_URL: closedUrl }, "refresh", "--stack", "prod", "--json");
    expect(down.code, down.stderr).toBe(1);
    expect((JSON.parse(down.stdout) as { error: { code: string } }).error.code).toBe("service_unreachable");
    const hung = await cli({ ...quick, USER_GROUPS_BASE_URL: silentUrl }, "drift", "--stack", "prod", "--json");
    expect(hung.code, hung.stderr).toBe(1);
    expect((JSON.parse(hung.stdout) as { error: { code: string } }).error.code).toBe("service_timeout");
  });
});
