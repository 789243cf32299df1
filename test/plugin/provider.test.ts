// The plugin's Provider against the fake server, called as the gRPC server
// calls it: secrets arrive wrapped and must leave wrapped (the token always),
// an import reads with nothing but the id, config comes from Configure.
// Loaded from dist/, as the plugin runs it (its HTTP client is required lazily,
// which vitest's module loader does not do for TypeScript sources).
import path from "node:path";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { type FakeServer, startFakeServer } from "../../fake-server";
import { SIGNATURE_KEY } from "../../provider/logic/reserved-values";
import { SECRET_SIGNATURE } from "../../provider/plugin/secrets";
import { configLookupFrom } from "../../provider/plugin/server-hooks";
import { REPO_ROOT } from "../support/pulumi-env";

type PluginProviderModule = typeof import("../../provider/plugin/provider");
const { UserGroupPluginProvider } = require(path.join(REPO_ROOT, "dist/provider/plugin/provider.js")) as PluginProviderModule;
type UserGroupPluginProvider = InstanceType<typeof UserGroupPluginProvider>;

const KEY = "plugin-provider-test-key-01";
const URN = "urn:pulumi:dev::groups::user-groups:index:UserGroup::acme";
const secret = (value: unknown) => ({ [SIGNATURE_KEY]: SECRET_SIGNATURE, value });

let server: FakeServer;
let provider: UserGroupPluginProvider;

beforeAll(async () => {
  server = await startFakeServer({ port: 0, apiKeys: [{ key: KEY, environment: "Testing" }] });
});
afterAll(() => server.close());
beforeEach(async () => {
  await server.reset();
  provider = new UserGroupPluginProvider({ env: { USER_GROUPS_BASE_URL: server.url, USER_GROUPS_API_KEY: KEY }, debugSink: () => {} });
});

async function checked(news: Record<string, unknown>): Promise<Record<string, unknown>> {
  const result = await provider.check(URN, {}, news);
  expect(result.failures ?? []).toEqual([]);
  return result.inputs as Record<string, unknown>;
}

describe("the user-groups plugin's Provider", () => {
  it("creates a group whose token leaves as a secret, and keeps a secret input secret", async () => {
    const inputs = await checked({ name: "Acme", userGroupId: "acme", properties: secret({ plan: "team" }) });
    expect(inputs.properties).toEqual(secret({ plan: "team" }));
    const created = await provider.create(URN, inputs);
    const stored = server.groups()[0]!;
    expect(created.id).toBe("acme");
    expect(created.outs.token).toEqual(secret(stored.token));
    expect(created.outs.properties).toEqual(secret({ plan: "team" }));
    expect(stored.properties).toEqual({ plan: "team" });
    expect(created.outs).toMatchObject({ name: "Acme", userGroupId: "acme", apiEnvironmentTag: "Testing", teamId: stored.team_id });
  });

  it("refuses bad inputs before any request, naming the property", async () => {
    const result = await provider.check(URN, {}, { name: " ", userGroupId: "acme" });
    expect(result.failures?.map((failure) => failure.property)).toEqual(["name"]);
    expect(server.journal()).toEqual([]);
  });

  it("imports by id: the inputs that reproduce the group, without defaults", async () => {
    await provider.create(URN, await checked({ name: "Acme", userGroupId: "acme", properties: { seats: 5 } }));
    const read = await provider.read("acme", URN, {});
    expect(read.id).toBe("acme");
    expect(read.inputs).toEqual({ name: "Acme", userGroupId: "acme", properties: { seats: 5 } });
    expect(read.props.token).toEqual(secret(server.groups()[0]!.token));
    expect(server.groups()).toHaveLength(1); // the read created nothing
  });

  it("importing an id that does not exist reports it gone, and creates nothing", async () => {
    const read = await provider.read("nobody", URN, {});
    expect(read.id).toBe("");
    expect(server.groups()).toEqual([]);
  });

  it("a diff replaces on userGroupId and profile, updates in place otherwise", async () => {
    const olds = { name: "Acme", userGroupId: "acme", mapping: {}, adoptExisting: false, token: secret("t") };
    expect(await provider.diff("acme", URN, olds, { ...olds, userGroupId: "acme2" })).toMatchObject({ changes: true, replaces: ["userGroupId"] });
    expect(await provider.diff("acme", URN, olds, { ...olds, profile: "testing" })).toMatchObject({ changes: true, replaces: ["profile"], deleteBeforeReplace: true });
    expect(await provider.diff("acme", URN, olds, { ...olds, name: secret("Acme 2") })).toMatchObject({ changes: true, replaces: [] });
    expect(await provider.diff("acme", URN, olds, { ...olds })).toMatchObject({ changes: false });
  });

  it("manages UserGroup only", async () => {
    await expect(provider.check("urn:pulumi:dev::groups::user-groups:index:Other::x", {}, {})).rejects.toMatchObject({ code: "unknown_resource_type" });
  });
});

describe("config from the engine's Configure call", () => {
  const request = (args: Record<string, unknown>, variables: [string, string][] = []) => ({
    getArgs: () => ({ toJavaScript: () => args }),
    getVariablesMap: () => ({ toArray: () => variables }),
  });

  it("reads user-groups:* keys from args, secrets unwrapped, profiles structured", () => {
    const lookup = configLookupFrom(request({ baseUrl: "https://x.example", apiKey: secret("k"), profiles: { testing: { apiKey: secret("t") } } }));
    expect(lookup("user-groups:baseUrl")).toBe("https://x.example");
    expect(lookup("user-groups:apiKey")).toBe("k");
    expect(lookup("user-groups:profiles")).toEqual({ testing: { apiKey: "t" } });
    expect(lookup("other:apiKey")).toBeUndefined();
  });

  it("falls back to the older variables map", () => {
    const lookup = configLookupFrom(request({}, [["user-groups:config:baseUrl", "https://y.example"]]));
    expect(lookup("user-groups:baseUrl")).toBe("https://y.example");
  });

  it("a configured provider uses config before the environment, a base URL only where the environment allows it (issue #33)", async () => {
    const refused = new UserGroupPluginProvider({ env: { USER_GROUPS_BASE_URL: "http://127.0.0.1:1", USER_GROUPS_API_KEY: "wrong" }, debugSink: () => {} });
    refused.configure(configLookupFrom(request({ baseUrl: server.url, apiKey: secret(KEY) })));
    await expect(refused.create(URN, await checked({ name: "Acme", userGroupId: "acme" }))).rejects.toThrow(/USER_GROUPS_ALLOWED_BASE_URLS/);
    const configured = new UserGroupPluginProvider({
      env: { USER_GROUPS_BASE_URL: "http://127.0.0.1:1", USER_GROUPS_ALLOWED_BASE_URLS: server.url, USER_GROUPS_API_KEY: "wrong" },
      debugSink: () => {},
    });
    configured.configure(configLookupFrom(request({ baseUrl: server.url, apiKey: secret(KEY) })));
    const created = await configured.create(URN, await checked({ name: "Acme", userGroupId: "acme" }));
    expect(created.id).toBe("acme");
  });
});
