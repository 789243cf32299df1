// CONTRACT F10, the judgement alone (state-data.ts): a state is data this
// package writes, or it is refused naming the resource and the field. A state
// shaped as a real up leaves it (a stack, the default provider, two groups, one
// secret token encrypted and one shown) passes; each field the engine would act
// on, planted in it, is found. The engine runs against planted states are in
// test/cli/planted-provider.test.ts and test/automation/security.test.ts.
import type { Deployment } from "@pulumi/pulumi/automation";
import { describe, expect, it } from "vitest";
import { KNOWN_PROVIDER_TEXTS, UntrustedProviderCodeError } from "../../../provider/automation/engine/state";
import { assertStateIsData, stateProblems, type StateProblem, UntrustedStateError } from "../../../provider/automation/engine/state";
import { PROVIDER_MODULE_TEXT } from "../../../provider/resource/provider-shell";
import { USER_GROUP_TYPE } from "../../../provider/resource/user-group";

const STACK = "prod";
const SIG = "4dabf18193072939515e22adb298388d";
const STACK_URN = "urn:pulumi:prod::user-groups::pulumi:pulumi:Stack::user-groups-prod";
const PROVIDER_URN = "urn:pulumi:prod::user-groups::pulumi:providers:pulumi-nodejs::default";
const PROVIDER_ID = "2b7c3b5e-6a0c-4c38-9d0e-8a1b2c3d4e5f";
const urnOf = (name: string) => `urn:pulumi:prod::user-groups::${USER_GROUP_TYPE}::${name}`;
const ciphertext = { [SIG]: "1b47061264138c4ac30d75fd1eb44270", ciphertext: "v1:Qk5w3Zb1:AAAAbm90IGEgcmVhbCBjaXBoZXJ0ZXh0" };
const plaintext = (value: unknown) => ({ [SIG]: "1b47061264138c4ac30d75fd1eb44270", plaintext: JSON.stringify(value) });

type Resource = Record<string, unknown> & { inputs?: Record<string, unknown>; outputs?: Record<string, unknown> };

function group(id: string, token: unknown, extra: Record<string, unknown> = {}): Resource {
  const inputs = { name: `Group ${id}`, userGroupId: id, mapping: { sales: "warehouse" }, adoptExisting: false, __provider: PROVIDER_MODULE_TEXT, ...extra };
  return {
    urn: urnOf(`default.${id}`),
    custom: true,
    id: `${id}-provided`,
    type: USER_GROUP_TYPE,
    inputs,
    outputs: { ...inputs, token, teamId: 7, providedId: `${id}-provided`, apiEnvironmentTag: "Customer" },
    parent: STACK_URN,
    provider: `${PROVIDER_URN}::${PROVIDER_ID}`,
    propertyDependencies: { name: [], userGroupId: [], mapping: [], adoptExisting: [] },
    additionalSecretOutputs: ["token"],
    created: "2026-11-27T09:00:00.000Z",
    modified: "2026-11-27T09:00:00.000Z",
  };
}

/** A state as an up of two groups leaves it. */
function held(): Deployment {
  return {
    version: 3,
    deployment: {
      manifest: { time: "2026-11-27T09:00:00.000Z", magic: "0123abcd", version: "v3.259.0" },
      secrets_providers: { type: "passphrase", state: { salt: "v1:abcd:v1:efgh:ijkl" } },
      resources: [
        {
          urn: STACK_URN,
          custom: false,
          type: "pulumi:pulumi:Stack",
          outputs: { groups: { "default.acme": { userGroupId: "acme", name: "Group acme", token: ciphertext, teamId: 7, apiEnvironmentTag: "Customer" } } },
          created: "2026-11-27T09:00:00.000Z",
          modified: "2026-11-27T09:00:00.000Z",
        },
        { urn: PROVIDER_URN, custom: true, id: PROVIDER_ID, type: "pulumi:providers:pulumi-nodejs", created: "2026-11-27T09:00:00.000Z", modified: "2026-11-27T09:00:00.000Z" },
        group("acme", ciphertext, { properties: { region: "eu", tags: ["a", { deep: null }] }, rotationTrigger: "2026-11" }),
        group("globex", plaintext("tok_0123456789"), { profile: "eu" }),
      ],
    },
  } as Deployment;
}

function edited(edit: (resources: Resource[], deployment: Record<string, unknown>) => void): Deployment {
  const copy = held();
  const deployment = copy.deployment as Record<string, unknown>;
  edit(deployment.resources as Resource[], deployment);
  return copy;
}
const find = (resources: Resource[], suffix: string) => resources.find((r) => String(r.urn).endsWith(suffix))!;
const provider = (resources: Resource[]) => find(resources, "::default");
const acme = (resources: Resource[]) => find(resources, "::default.acme");

describe("a state as data (F10)", () => {
  it("passes a state this package writes: encrypted and shown secrets, an empty new stack, a pending create of a group", () => {
    expect(stateProblems(held(), STACK)).toEqual([]);
    expect(() => assertStateIsData(held(), STACK)).not.toThrow();
    // org/project/stack names the same stack file (its URNs carry the last part).
    expect(stateProblems(held(), "acme-org/user-groups/prod")).toEqual([]);
    expect(stateProblems({ version: 3, deployment: { manifest: { time: "2026-11-27T09:00:00Z", magic: "", version: "" } } } as Deployment, STACK)).toEqual([]);
    expect(stateProblems(undefined, STACK)).toEqual([]);
    const pending = edited((rs, d) => {
      const { outputs: _o, id: _i, ...creating } = group("initech", ciphertext);
      d.pending_operations = [{ resource: creating, type: "creating" }];
      // A replacement's old copy, waiting for its delete.
      rs.push({ ...group("acme", ciphertext), delete: true });
    });
    expect(stateProblems(pending, STACK)).toEqual([]);
    // Stack config of the project's namespace, which the engine hands the default provider (a key as a secret).
    const configured = { "user-groups:baseUrl": "https://api.example", "user-groups:apiKey": ciphertext, "user-groups:profiles": { eu: { apiKey: plaintext("k") } } };
    expect(stateProblems(edited((rs) => void Object.assign(provider(rs), { inputs: configured, outputs: configured })), STACK)).toEqual([]);
    // A pending create's copy without the fields the engine had not filled in yet.
    const { outputs: _o, id: _i, parent: _p, provider: _v, ...bare } = group("initech", ciphertext);
    expect(stateProblems(edited((_, d) => void (d.pending_operations = [{ resource: bare, type: "creating" }])), STACK)).toEqual([]);
    // The stack's `groups` output kept whole as a secret, encrypted or shown.
    const stackOf = (rs: Resource[]) => find(rs, "Stack::user-groups-prod");
    expect(stateProblems(edited((rs) => void (stackOf(rs).outputs = { groups: ciphertext })), STACK)).toEqual([]);
    expect(stateProblems(edited((rs) => void (stackOf(rs).outputs = { groups: plaintext({ "default.acme": { name: "A", token: "t" } }) })), STACK)).toEqual([]);
    expect(stateProblems(edited((rs) => void (stackOf(rs).outputs = { groups: plaintext({ "default.acme": { name: "A", evil: 1 } }) })), STACK)).toEqual([
      expect.objectContaining({ field: 'outputs.groups["default.acme"].evil', why: "(inside a secret) is a field this package never writes" }),
    ]);
  });

  it("finds each field the engine would act on, naming the resource and the field", () => {
    const cases: Array<[string, Deployment, Partial<StateProblem>]> = [
      [
        "__internal with pluginDownloadURL on the provider",
        edited((rs) => {
          const planted = { __internal: { name: "evilplug", pluginDownloadURL: "http://127.0.0.1:9/" }, version: "1.0.0" };
          provider(rs).inputs = planted;
          provider(rs).outputs = planted;
        }),
        { urn: PROVIDER_URN, field: "inputs.__internal", why: "is a field this package never writes" },
      ],
      ["a provider version", edited((rs) => void (provider(rs).inputs = { version: "1.0.0" })), { field: "inputs.version" }],
      ["config of another namespace", edited((rs) => void (provider(rs).inputs = { "aws:region": "x" })), { field: 'inputs["aws:region"]' }],
      ["an asset in config", edited((rs) => void (provider(rs).inputs = { "user-groups:baseUrl": { [SIG]: "c44067f5952c0a294b673a41bacd8c17", uri: "http://x" } })), { field: 'inputs["user-groups:baseUrl"]' }],
      ["pluginDownloadURL on the provider", edited((rs) => void (provider(rs).outputs = { pluginDownloadURL: "https://evil.example/" })), { field: "outputs.pluginDownloadURL" }],
      ["checksums on the provider", edited((rs) => void (provider(rs).inputs = { __internal: { pluginChecksums: { "linux-amd64": "00" } } })), { field: "inputs.__internal" }],
      ["parameterization on the provider", edited((rs) => void (provider(rs).inputs = { parameterization: { name: "evil", version: "1.0.0", value: "AA==" } })), { field: "inputs.parameterization" }],
      ["a field of the provider resource", edited((rs) => void (provider(rs).pluginDownloadURL = "http://127.0.0.1:9/")), { urn: PROVIDER_URN, field: "pluginDownloadURL" }],
      ["a foreign provider reference", edited((rs) => void (acme(rs).provider = "urn:pulumi:prod::user-groups::pulumi:providers:evil::p::1")), { urn: urnOf("default.acme"), field: "provider", why: "is not this stack's default provider" }],
      ["another id of the default provider", edited((rs) => void (acme(rs).provider = `${PROVIDER_URN}::another-id`)), { field: "provider" }],
      ["another stack's default provider", edited((rs) => void (acme(rs).provider = `urn:pulumi:dev::user-groups::pulumi:providers:pulumi-nodejs::default::${PROVIDER_ID}`)), { field: "provider" }],
      ["a second provider resource", edited((rs) => void rs.push({ ...provider(rs), id: "other" })), { urn: PROVIDER_URN, field: "urn", why: "is held twice" }],
      ["a provider of another name", edited((rs) => void rs.push({ ...provider(rs), urn: `${PROVIDER_URN}2` })), { urn: `${PROVIDER_URN}2`, field: "urn" }],
      ["a foreign resource type", edited((rs) => void rs.push({ urn: "urn:pulumi:prod::user-groups::aws:s3/bucket:Bucket::b", type: "aws:s3/bucket:Bucket", custom: true })), { type: "aws:s3/bucket:Bucket", field: "type", why: "is not a type this package makes" }],
      ["a resource without a type", edited((rs) => void rs.push({ urn: "urn:pulumi:prod::user-groups::x::y" })), { type: "", field: "type" }],
      ["an unknown top-level field on a group", edited((rs) => void (acme(rs).hooks = { beforeCreate: ["x"] })), { urn: urnOf("default.acme"), field: "hooks" }],
      ["an unknown input", edited((rs) => void (acme(rs).inputs!.__internal = { pluginDownloadURL: "http://127.0.0.1:9/" })), { field: "inputs.__internal" }],
      ["an unknown output", edited((rs) => void (acme(rs).outputs!.pluginDownloadURL = "x")), { field: "outputs.pluginDownloadURL" }],
      ["a group with a version", edited((rs) => void (acme(rs).version = "1.0.0")), { field: "version" }],
      ["a group's dependency", edited((rs) => void (acme(rs).dependencies = [PROVIDER_URN])), { field: "dependencies" }],
      ["a group's parent elsewhere", edited((rs) => void (acme(rs).parent = PROVIDER_URN)), { field: "parent" }],
      ["a group of another stack", edited((rs) => void (acme(rs).urn = `urn:pulumi:dev::user-groups::${USER_GROUP_TYPE}::default.acme`)), { field: "urn" }],
      ["a wrong value shape", edited((rs) => void (acme(rs).inputs!.adoptExisting = "yes")), { field: "inputs.adoptExisting", why: "is a string, not true or false" }],
      ["an asset in properties", edited((rs) => void (acme(rs).outputs!.properties = { a: { [SIG]: "c44067f5952c0a294b673a41bacd8c17", uri: "http://127.0.0.1:9/x" } })), { field: "outputs.properties.a" }],
      ["a resource reference in the stack's outputs", edited((rs) => void (find(rs, "Stack::user-groups-prod").outputs = { groups: { "default.acme": { name: { [SIG]: "5cf8f73096256a8f31e491e813e4eb8e", urn: PROVIDER_URN } } } })), { field: 'outputs.groups["default.acme"].name' }],
      ["a secret where none is written", edited((rs) => void (acme(rs).inputs!.name = ciphertext)), { field: "inputs.name" }],
      ["an asset inside a shown secret", edited((rs) => void (acme(rs).outputs!.token = plaintext({ [SIG]: "c44067f5952c0a294b673a41bacd8c17", uri: "http://x" }))), { field: "outputs.token" }],
      ["a secret with more fields", edited((rs) => void (acme(rs).outputs!.token = { ...ciphertext, pluginDownloadURL: "x" })), { field: "outputs.token" }],
      ["an unknown stack output", edited((rs) => void (find(rs, "Stack::user-groups-prod").outputs = { evil: 1 })), { field: "outputs.evil" }],
      ["a protected group", edited((rs) => void (acme(rs).protect = true)), { field: "protect" }],
      ["an import id", edited((rs) => void (acme(rs).importID = "x")), { field: "importID" }],
      ["another secrets provider", edited((_, d) => void (d.secrets_providers = { type: "cloud", state: { url: "hashivault://127.0.0.1:9/key" } })), { urn: "", field: "secrets_providers.type" }],
      ["an unknown deployment field", edited((_, d) => void (d.plugins = [{ name: "evil", pluginDownloadURL: "http://x" }])), { urn: "", field: "plugins" }],
      ["a manifest's plugin list", edited((_, d) => void ((d.manifest as Record<string, unknown>).plugins = [{ name: "evil", version: "1.0.0" }])), { urn: "", field: "manifest.plugins" }],
      ["a pending import", edited((_, d) => void (d.pending_operations = [{ resource: group("initech", ciphertext), type: "importing" }])), { urn: urnOf("default.initech"), field: "pending operation.type" }],
      ["a pending operation's planted provider", edited((_, d) => void (d.pending_operations = [{ resource: { ...group("initech", ciphertext), provider: "urn:pulumi:prod::user-groups::pulumi:providers:evil::p::1" }, type: "creating" }])), { urn: urnOf("default.initech"), field: "provider" }],
      ["a state of another format", { ...held(), version: 4 } as Deployment, { urn: "", field: "version" }],
      ["a group held twice", edited((rs) => void rs.push(group("acme", ciphertext))), { field: "urn", why: "is held twice" }],
      ["nesting beyond bounds", edited((rs) => {
        let deep: unknown = "bottom";
        for (let i = 0; i < 100_000; i++) deep = [deep];
        acme(rs).outputs!.properties = { deep };
      }), { field: expect.stringMatching(/^outputs\.properties\.deep(\[0\])+$/) as unknown as string, why: "is nested deeper than 80 levels" }],
    ];
    for (const [label, deployment, problem] of cases) {
      const found = stateProblems(deployment, STACK);
      expect(found, label).toContainEqual(expect.objectContaining(problem));
      expect(() => assertStateIsData(deployment, STACK), label).toThrow(UntrustedStateError);
    }
  });

  it("tells a group's planted __provider alone as untrusted_provider_code (recover --rewrite-providers mends it), anything more as untrusted_state", () => {
    const planted = edited((rs) => {
      acme(rs).inputs!.__provider = "exports.handler=evil";
      acme(rs).outputs!.__provider = 42;
    });
    expect(stateProblems(planted, STACK)).toEqual([
      expect.objectContaining({ urn: urnOf("default.acme"), field: "inputs.__provider" }),
      expect.objectContaining({ urn: urnOf("default.acme"), field: "outputs.__provider" }),
    ]);
    expect(() => assertStateIsData(planted, STACK)).toThrow(UntrustedProviderCodeError);
    // An earlier text of this package's passes; a planted one in a pending operation is found.
    expect(stateProblems(edited((rs) => void (acme(rs).inputs!.__provider = KNOWN_PROVIDER_TEXTS[1])), STACK)).toEqual([]);
    const inPending = edited((_, d) => void (d.pending_operations = [{ resource: group("initech", ciphertext, { __provider: "exports.handler=evil" }), type: "creating" }]));
    expect(() => assertStateIsData(inPending, STACK)).toThrow(UntrustedProviderCodeError);
    try {
      assertStateIsData(planted, STACK);
    } catch (error) {
      expect((error as UntrustedProviderCodeError).code).toBe("untrusted_provider_code");
      expect((error as Error).message).toContain('"default.acme"');
    }
    const more = edited((rs) => {
      acme(rs).inputs!.__provider = "exports.handler=evil";
      provider(rs).inputs = { version: "1.0.0" };
    });
    expect(() => assertStateIsData(more, STACK)).toThrow(UntrustedStateError);
  });

  it("names resources and fields inertly and boundedly: outside text never becomes a terminal escape, a secret never shows", () => {
    const nasty = "default.\u001b]8;;http://evil\u0007click\u001b[2J\u202eevil\u009b31m" + "x".repeat(500);
    const planted = edited((rs) => {
      const planted = acme(rs);
      planted.urn = urnOf(nasty);
      planted.inputs![`\u001b[31m${"k".repeat(300)}`] = 1;
      const globex = find(rs, "::default.globex");
      globex.outputs!.token = plaintext({ [SIG]: "c44067f5952c0a294b673a41bacd8c17", text: "tok_0123456789" });
      for (let i = 0; i < 300; i++) rs.push({ urn: `urn:pulumi:prod::user-groups::evil:index:R::r${i}`, type: "evil:index:R" });
    });
    let message = "";
    let problems: readonly StateProblem[] = [];
    try {
      assertStateIsData(planted, STACK);
    } catch (error) {
      expect(error).toBeInstanceOf(UntrustedStateError);
      expect((error as UntrustedStateError).code).toBe("untrusted_state");
      message = (error as Error).message;
      problems = (error as UntrustedStateError).problems;
    }
    expect(message).not.toMatch(/[\u0000-\u001f\u007f-\u009f\u200b-\u200f\u202a-\u202e\u2066-\u2069]/);
    expect(message).toContain("\\u001b]8;;http://evil\\u0007click");
    expect(message).not.toContain("tok_0123456789");
    expect(message).not.toContain("x".repeat(100));
    expect(message).toMatch(/and at least \d+ more/);
    expect(message.length).toBeLessThan(8_000);
    expect(problems.length).toBeLessThanOrEqual(200);
    for (const problem of problems) expect(problem.field).not.toMatch(/[\u0000-\u001f]/);
  });
});
