// The conformance kit (provider/conformance, `user-groups conformance`): the
// contract's checks agree with the emulator, each emulator changed in one
// behaviour is reported, and its safety rules hold (the switch, Customer keys,
// the prefix, the pace, clean-up, --sweep, the read-only subset, no secret in
// any output). Record and compare: a fixture of facts, no token or key in it.
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFakeServer, type FakeServer, type FakeServerNamespace } from "../../fake-server/index.js";
import { CHECKS, runConformance, sweepConformance, type ConformanceOptions } from "../../provider/conformance/index.js";
import { main } from "../../provider/cli/user-groups.js";
import type { CliIo } from "../../provider/cli/io.js";
import { MUTATIONS, startMutantProxy } from "../support/mutant-proxy.js";

let server: FakeServer;
const dir = mkdtempSync(path.join(os.tmpdir(), "conformance-"));
let ledgers = 0;
const ledger = (): string => path.join(dir, `ledger-${ledgers++}.json`);

beforeAll(async () => {
  server = await startFakeServer({ apiKeys: [{ key: "conformance-own-key-0001", environment: "Customer" }] });
});
afterAll(async () => {
  await server.close();
  rmSync(dir, { recursive: true, force: true });
});

/** A Testing read-write key (index 2 of a namespace's default keys), and the rest. */
const testingKey = (ns: FakeServerNamespace): string => ns.apiKeys[2]!.key;
const run = (ns: FakeServerNamespace, extra: Partial<ConformanceOptions> = {}) =>
  runConformance({ baseUrl: server.url, apiKey: testingKey(ns), pace: "off", ledger: ledger(), ...extra });

describe("against the emulator", () => {
  it("a read-write key: every check agrees, and the run leaves no group and no ledger entry behind", async () => {
    using ns = server.namespace();
    const file = ledger();
    const report = await run(ns, { ledger: file });
    expect(report.disagreements).toEqual([]);
    expect(report.readOnly).toBe(false);
    expect(report.environment).toBe("Testing");
    expect(report.results.length).toBe(CHECKS.filter((c) => c.mode !== "read-only").length);
    expect(report.results.length).toBeGreaterThanOrEqual(45);
    expect(ns.groups()).toEqual([]);
    expect(report.leftovers).toEqual([]);
    expect(JSON.parse(readFileSync(file, "utf8"))).toEqual({ version: 1, ids: {} });
    // Every id it created had the prefix and the run id.
    const ids = ns.journal().flatMap((e) => (e.method === "GET" && e.status === 200 && e.userGroupId !== undefined ? [e.userGroupId] : []));
    expect(ids.length).toBeGreaterThan(5);
    for (const id of ids) expect(id.toLowerCase().startsWith(`ugconf-${report.runId}-`)).toBe(true);
  });

  it("a read-only key gets the read-only subset, changes nothing, and agrees", async () => {
    using ns = server.namespace();
    const report = await run(ns, { apiKey: ns.apiKeys[3]!.key });
    expect(report.readOnly).toBe(true);
    expect(report.disagreements).toEqual([]);
    expect(report.results.map((r) => r.id).sort()).toEqual(CHECKS.filter((c) => c.mode !== "write").map((c) => c.id).sort());
    expect(ns.journal().every((e) => e.status !== 200)).toBe(true);
  });

  it("keeps a pace: 20 requests at 1200 a minute take at least ~0.9 s", async () => {
    using ns = server.namespace();
    const started = Date.now();
    const report = await run(ns, { pace: { requests: 1200, windowSeconds: 60 }, only: ["auth-missing", "auth-bearer", "auth-unknown-key", "media-text", "body-array", "body-not-json", "path-other", "method-other", "name-blank", "id-empty", "mapping-array", "properties-array", "name-missing", "id-missing", "name-number", "body-string"] });
    expect(report.requests).toBeGreaterThanOrEqual(19);
    expect(Date.now() - started).toBeGreaterThanOrEqual(((report.requests - 1) * 50) - 20);
  });
});

describe("against emulators each changed in one behaviour", () => {
  expect(MUTATIONS.length).toBeGreaterThanOrEqual(10);
  it.each(MUTATIONS.map((m) => [m.name, m] as const))("%s: reported", async (_name, mutation) => {
    using ns = server.namespace();
    const proxy = await startMutantProxy(server.url, mutation);
    try {
      const report = await runConformance({ baseUrl: proxy.url, apiKey: testingKey(ns), pace: "off", ledger: ledger() });
      expect(report.disagreements.map((d) => d.check)).toContain(mutation.reportedBy);
      // Clean-up still reaches the emulator through the mutant.
      expect(ns.groups()).toEqual([]);
    } finally {
      await proxy.close();
    }
  });
});

describe("safety", () => {
  it("refuses a Customer key unless allowed; the probe group is deleted; with --allow-customer it runs", async () => {
    using ns = server.namespace();
    await expect(run(ns, { apiKey: ns.key })).rejects.toMatchObject({ code: "conformance_refused", message: expect.stringMatching(/Customer environment.*--allow-customer/) });
    expect(ns.groups()).toEqual([]);
    const report = await run(ns, { apiKey: ns.key, allowCustomer: true, only: ["get-creates"] });
    expect(report.environment).toBe("Customer");
    expect(report.disagreements).toEqual([]);
  });

  it("a key declared Customer is refused before any request", async () => {
    using ns = server.namespace();
    await expect(run(ns, { environment: "Customer" })).rejects.toMatchObject({ code: "conformance_refused" });
    expect(ns.journal()).toEqual([]);
  });

  it.each([["ab"], ["AB-C"], ["-abc"], ["a".repeat(33)], ["ab/c"]])("refuses the prefix %j before any request", async (prefix) => {
    using ns = server.namespace();
    await expect(run(ns, { prefix })).rejects.toMatchObject({ code: "conformance_refused", message: expect.stringMatching(/--prefix/) });
    expect(ns.journal()).toEqual([]);
  });

  it("refuses plain http to a host that is not loopback, and a pace above the documented limit (or off) for one", async () => {
    using ns = server.namespace();
    await expect(run(ns, { baseUrl: "http://service.example" })).rejects.toThrow(/https/);
    await expect(run(ns, { baseUrl: "https://service.example", pace: { requests: 200, windowSeconds: 60 } })).rejects.toThrow(/documented rate limit \(180\/60\)/);
    await expect(run(ns, { baseUrl: "https://service.example", pace: "off" })).rejects.toThrow(/documented rate limit/);
    await expect(run(ns, { baseUrl: "https://user:pw@service.example" })).rejects.toThrow(/credentials/);
  });

  it("--sweep deletes the ledger's leftovers of this prefix only, and strikes them off", async () => {
    using ns = server.namespace();
    const file = ledger();
    const key = testingKey(ns);
    ns.seed([
      { environment: "Testing", user_group_id: "sweepme-1a2b3c4d-left", name: "Left" },
      { environment: "Testing", user_group_id: "other-1a2b3c4d-kept", name: "Kept" },
    ]);
    writeFileSync(file, JSON.stringify({ version: 1, ids: { sweepme: ["sweepme-1a2b3c4d-left", "sweepme-1a2b3c4d-gone"], other: ["other-1a2b3c4d-kept"] } }));
    const swept = await sweepConformance({ baseUrl: server.url, apiKey: key, prefix: "sweepme", pace: "off", ledger: file });
    expect(swept).toEqual({ swept: 2, left: [] });
    expect(ns.groups().map((g) => g.user_group_id)).toEqual(["other-1a2b3c4d-kept"]);
    expect(JSON.parse(readFileSync(file, "utf8"))).toEqual({ version: 1, ids: { other: ["other-1a2b3c4d-kept"] } });
  });
});

/** `user-groups ...` in process. */
async function cli(argv: string[], env: Record<string, string>): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = "";
  let stderr = "";
  const io: CliIo = { stdout: (t) => void (stdout += t), stderr: (t) => void (stderr += t), isTty: false, progressIsTty: false, confirm: async () => false, env };
  const code = await main(argv, io);
  return { code, stdout, stderr };
}

describe("user-groups conformance", () => {
  it("runs only with USER_GROUPS_CONFORMANCE=1 (exit 2), and sends nothing otherwise", async () => {
    using ns = server.namespace();
    const off = await cli(["conformance", "--base-url", server.url, "--json"], { USER_GROUPS_API_KEY: testingKey(ns) });
    expect(off.code).toBe(2);
    expect(JSON.parse(off.stdout).error.code).toBe("conformance_not_enabled");
    expect(ns.journal()).toEqual([]);
  });

  it("against the emulator: all agree, exit 0; against a mutant: the table names each disagreement, exit 1; no key or token in any output", async () => {
    using ns = server.namespace();
    const env = { USER_GROUPS_CONFORMANCE: "1", USER_GROUPS_API_KEY: testingKey(ns) };
    const ok = await cli(["conformance", "--base-url", server.url, "--rate-limit", "off", "--ledger", ledger()], env);
    expect(ok.stderr).toBe("");
    expect(ok.stdout).toMatch(/^\d+ checks against http:\/\/127\.0\.0\.1:\d+ \(read-write key, Testing\), run [0-9a-f]{8}, \d+ requests: all agree\.\n$/);
    expect(ok.code).toBe(0);
    const proxy = await startMutantProxy(server.url, MUTATIONS.find((m) => m.reportedBy === "put-unknown")!);
    try {
      const bad = await cli(["conformance", "--base-url", proxy.url, "--rate-limit", "off", "--ledger", ledger()], env);
      expect(bad.code).toBe(1);
      expect(bad.stdout).toContain("| check ");
      expect(bad.stdout).toMatch(/\| put-unknown +\| W6 +\| code +\| "user_group_not_found" +\| "not_found" +\|/);
      for (const text of [ok.stdout, bad.stdout, bad.stderr]) {
        expect(text).not.toContain(testingKey(ns));
        expect(text).not.toMatch(/[0-9a-f]{64}/);
      }
    } finally {
      await proxy.close();
    }
  });

  it("refuses a Customer key without --allow-customer: exit 2, conformance_refused", async () => {
    using ns = server.namespace();
    const refused = await cli(["conformance", "--base-url", server.url, "--rate-limit", "off", "--ledger", ledger(), "--json"], { USER_GROUPS_CONFORMANCE: "1", USER_GROUPS_API_KEY: ns.key });
    expect(refused.code).toBe(2);
    expect(JSON.parse(refused.stdout).error.code).toBe("conformance_refused");
    expect(refused.stdout + refused.stderr).not.toContain(ns.key);
  });

  it("--record writes the facts (0600, no token, no key); --compare holds the emulator to them and reports a changed fact", async () => {
    using ns = server.namespace();
    const env = { USER_GROUPS_CONFORMANCE: "1", USER_GROUPS_API_KEY: testingKey(ns) };
    const fixture = path.join(dir, "service.json");
    const recorded = await cli(["conformance", "--base-url", server.url, "--rate-limit", "off", "--ledger", ledger(), "--record", fixture], env);
    expect(recorded.code).toBe(0);
    expect(statSync(fixture).mode & 0o777).toBe(0o600);
    const text = readFileSync(fixture, "utf8");
    expect(text).not.toMatch(/[0-9a-f]{64}/);
    expect(text).not.toContain(testingKey(ns));
    const facts = JSON.parse(text) as { checks: Record<string, Record<string, unknown>> };
    expect(facts.checks["put-unknown"]).toEqual({ status: 404, code: "user_group_not_found", "W3 error body": true });

    const same = await cli(["conformance", "--base-url", server.url, "--rate-limit", "off", "--ledger", ledger(), "--compare", fixture], env);
    expect(same.stdout).toMatch(/all agree/);
    expect(same.code).toBe(0);

    // The service, say, answers 410 for an unknown id: recorded once, the emulator's 404 is now a reported difference.
    facts.checks["put-unknown"] = { status: 410, code: "user_group_not_found", "W3 error body": true };
    writeFileSync(fixture, JSON.stringify({ ...JSON.parse(text), checks: facts.checks }));
    const differs = await cli(["conformance", "--base-url", server.url, "--rate-limit", "off", "--ledger", ledger(), "--compare", fixture], env);
    expect(differs.code).toBe(1);
    expect(differs.stdout).toMatch(/\| put-unknown +\| W6 +\| status +\| 410 +\| 404 +\|/);
  });

  it("a fixture that is not one is refused (exit 2, invalid_fixture)", async () => {
    using ns = server.namespace();
    const bad = path.join(dir, "bad.json");
    writeFileSync(bad, JSON.stringify({ version: 1, checks: { x: { fact: { nested: true } } } }));
    const result = await cli(["conformance", "--base-url", server.url, "--compare", bad, "--json"], { USER_GROUPS_CONFORMANCE: "1", USER_GROUPS_API_KEY: testingKey(ns) });
    expect(result.code).toBe(2);
    expect(JSON.parse(result.stdout).error.code).toBe("invalid_fixture");
  });
});
