// CONTRACT F6: values Pulumi reserves cannot travel as plain data. Each is tried
// as an attack: refused with a GroupsValidationError naming the path and saying
// why, before any engine run, by validateGroups, the fleet, provisionUserGroups
// and the groups file (validate, preview, up). The asset attack points at an
// HTTP listener of the test's own: without the refusal the engine fetches it.
import { writeFileSync } from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { GroupsValidationError, provisionUserGroups, UserGroupFleet, UserGroupsError, validateGroups } from "../../../provider/automation";
import { SIGNATURE_KEY, UNKNOWN_VALUE } from "../../../provider/logic/reserved-values";
import { useStackFixture } from "../../support/stack-fixture";
import { runUserGroupsCli } from "../../support/user-groups-cli";

/** Pulumi's signature values of its special objects (sdk/nodejs/runtime/rpc.ts). */
const SIG = {
  asset: "c44067f5952c0a294b673a41bacd8c17",
  archive: "0def7320c3a5731c473e5ecbe6d01bc7",
  secret: "1b47061264138c4ac30d75fd1eb44270",
  resource: "5cf8f73096256a8f31e491e813e4eb8e",
};

const { server, env, envVars, runOptions } = useStackFixture({ label: "reserved", apiKeys: ["reserved-values-key-0001"], passphrase: "reserved-test" });
let listener: http.Server;
/** Requests that reached the test's listener: the asset's uri points here. */
const fetched: string[] = [];
let ssrfUri: string;

beforeAll(async () => {
  listener = http.createServer((request, response) => {
    fetched.push(request.url ?? "");
    response.end("fetched by the engine");
  });
  await new Promise<void>((resolve) => listener.listen(0, "127.0.0.1", resolve));
  ssrfUri = `http://127.0.0.1:${(listener.address() as AddressInfo).port}/`;
});
afterAll(async () => {
  await new Promise((resolve) => listener?.close(resolve));
});

function problemsOf(entry: unknown): string {
  try {
    validateGroups([entry]);
  } catch (error) {
    expect(error).toBeInstanceOf(GroupsValidationError);
    return (error as Error).message;
  }
  throw new Error("expected the entry to be refused");
}

const REFERENCE = `would read this object as an asset, archive, secret or resource reference, not as data`;
const UNKNOWN = `is Pulumi's unknown-value marker "${UNKNOWN_VALUE}": Pulumi would read it as a value not known yet, not as data`;

describe("validateGroups refuses what Pulumi reserves, naming the path and why", () => {
  it.each([
    ["a remote asset (the engine fetches its uri)", { properties: { x: { [SIGNATURE_KEY]: SIG.asset, uri: "http://127.0.0.1:9/" } } }, `properties.x holds the key "${SIGNATURE_KEY}", which Pulumi reserves: it ${REFERENCE}`],
    ["a file asset deep in an array (the engine hashes the file)", { properties: { a: { b: [0, 1, { f: { [SIGNATURE_KEY]: SIG.asset, path: "/etc/shadow" } }] } } }, `properties.a.b[2].f holds the key`],
    ["an archive as a mapping value", { mapping: { sales: { [SIGNATURE_KEY]: SIG.archive, assets: {} } } }, `mapping.sales holds the key "${SIGNATURE_KEY}"`],
    ["a secret envelope", { properties: { s: { [SIGNATURE_KEY]: SIG.secret, value: "rewritten" } } }, `properties.s holds the key`],
    ["a resource reference", { properties: { r: { [SIGNATURE_KEY]: SIG.resource, urn: "urn:pulumi:prod::p::t::n", id: "x" } } }, `properties.r holds the key`],
    ["the signature key on mapping itself", { mapping: { [SIGNATURE_KEY]: SIG.asset } }, `mapping holds the key "${SIGNATURE_KEY}"`],
    ["the unknown marker as userGroupId", { userGroupId: UNKNOWN_VALUE }, `userGroupId ${UNKNOWN}`],
    ["the unknown marker as name", { name: UNKNOWN_VALUE }, `name ${UNKNOWN}`],
    ["the unknown marker as rotationTrigger", { rotationTrigger: UNKNOWN_VALUE }, `rotationTrigger ${UNKNOWN}`],
    ["the unknown marker deep in properties", { properties: { a: { b: ["x", null, UNKNOWN_VALUE] } } }, `properties.a.b[2] ${UNKNOWN}`],
    ["the unknown marker as a mapping value", { mapping: { sales: UNKNOWN_VALUE } }, `mapping.sales ${UNKNOWN}`],
    ["the unknown marker as a mapping key", { mapping: { [UNKNOWN_VALUE]: "x" } }, `mapping holds the key "${UNKNOWN_VALUE}", Pulumi's unknown-value marker`],
    ["a __proto__ key in mapping", { mapping: JSON.parse('{"__proto__": "x"}') }, `mapping.__proto__ is not allowed`],
    ["a __proto__ key in properties", { properties: JSON.parse('{"a": [{"__proto__": {"admin": true}}]}') }, `properties.a[0].__proto__ is not allowed`],
    ["a lone surrogate in the id (Pulumi would store another id)", { userGroupId: "a\ud800b" }, `userGroupId is not Unicode text (it holds a lone surrogate)`],
  ])("%s", (_what, fields, expected) => {
    const message = problemsOf({ name: "Tenant", userGroupId: "tenant", ...fields });
    expect(message).toContain(expected);
    expect(message).toMatch(/^1 problem in the groups, nothing was changed:\n {2}- groups\[0\]/);
  });

  it("refuses properties nested 100000 deep with a message, not a stack overflow", () => {
    let deep: unknown = "x";
    for (let i = 0; i < 100_000; i++) deep = [deep];
    expect(problemsOf({ name: "Deep", userGroupId: "deep", properties: { deep } })).toMatch(/properties\.deep(\[0\]){255} is nested deeper than 256 levels/);
  });

  it("quotes an odd key or id so that no control character reaches a terminal", () => {
    const message = problemsOf({ name: "Esc", userGroupId: "x\u001b[2J\u202e", properties: { "k\u001b]0;t\u0007": UNKNOWN_VALUE } });
    expect(message).toContain('(userGroupId "x\\u001b[2J\\u202e")');
    expect(message).toContain('properties["k\\u001b]0;t\\u0007"] is Pulumi\'s unknown-value marker');
    expect(message).not.toMatch(/[\u0007\u001b\u202e]/u);
  });

  it("still accepts the same strings as ordinary data elsewhere (a key named uri, a sig-like value)", () => {
    expect(validateGroups([{ name: "Ok", userGroupId: "ok", properties: { uri: "http://x/", sig: SIG.asset, note: `${UNKNOWN_VALUE} ` } }])).toHaveLength(1);
  });
});

describe("refused before any engine run: the asset attack fetches nothing", () => {
  const attack = () => ({ name: "Evil", userGroupId: "evil", properties: { x: { [SIGNATURE_KEY]: SIG.asset, uri: ssrfUri } } });

  it("by the fleet: ensure, ensureMany (the good entry is not run either) and remove", async () => {
    const fleet = new UserGroupFleet(runOptions("fleet"));
    try {
      const refusals = await Promise.all([
        fleet.ensure(attack()).catch((e: unknown) => e),
        fleet.ensureMany([{ name: "Good", userGroupId: "good" }, attack()]).catch((e: unknown) => e),
        fleet.ensure({ name: "Unknown id", userGroupId: UNKNOWN_VALUE }).catch((e: unknown) => e),
        fleet.remove(UNKNOWN_VALUE).catch((e: unknown) => e),
      ]);
      for (const refusal of refusals) expect(refusal).toBeInstanceOf(GroupsValidationError);
      expect((refusals[1] as Error).message).toMatch(/groups\[1\] \(userGroupId "evil"\): properties\.x holds the key/);
      expect((refusals[3] as Error).message).toContain(`userGroupId ${UNKNOWN}`);
      expect(fleet.engineRuns).toBe(0);
    } finally {
      await fleet.close();
    }
    expect(fetched).toEqual([]);
    expect(server.journal()).toEqual([]);
  });

  it("by provisionUserGroups", async () => {
    const error = await provisionUserGroups({ ...runOptions("provision"), groups: [attack()] }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(GroupsValidationError);
    expect(error).toBeInstanceOf(UserGroupsError);
    expect(fetched).toEqual([]);
    expect(server.journal()).toEqual([]);
  });

  it("by the groups file: validate, preview and up exit 2 naming the path; validate also refuses __proto__", async () => {
    const file = path.join(env.workDir, "evil.yaml");
    writeFileSync(
      file,
      `groups:\n  - name: Evil\n    userGroupId: evil\n    properties:\n      x:\n        "${SIGNATURE_KEY}": ${SIG.asset}\n        uri: "${ssrfUri}"\n`,
    );
    const proto = path.join(env.workDir, "proto.json");
    writeFileSync(proto, '{"groups": [{"name": "P", "userGroupId": "p", "mapping": {"__proto__": "x"}}]}');
    const cliEnv = { ...process.env, ...envVars({ PULUMI_CONFIG_PASSPHRASE: "reserved-test" }) };
    for (const command of [["validate"], ["preview"], ["up", "--yes"]]) {
      const run = await runUserGroupsCli([...command, "--file", file, "--stack", "cli"], { cwd: env.workDir, env: cliEnv });
      expect(run.code, run.stderr).toBe(2);
      expect(run.stderr).toContain(`${file}: 1 problem in the groups, nothing was changed:\n  - groups[0] (userGroupId "evil"): properties.x holds the key "${SIGNATURE_KEY}", which Pulumi reserves`);
    }
    const validate = await runUserGroupsCli(["validate", "--file", proto], { cwd: env.workDir, env: cliEnv });
    expect(validate.code, validate.stdout).toBe(2);
    expect(validate.stderr).toContain('groups[0] (userGroupId "p"): mapping.__proto__ is not allowed');
    expect(fetched).toEqual([]);
    expect(server.journal()).toEqual([]);
  });
});
