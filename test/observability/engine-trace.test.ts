// The provider's spans inside the Pulumi engine's own trace, read from what the
// real CLI writes with `pulumi <command> --otel-traces file://...`: the engine's
// CLIENT span of a provider call, the provider process's SERVER span under it,
// the `UserGroup <operation>` span under that and the HTTP client's spans under
// it, all in one trace; for the dynamic provider (a Node.js program, the preload
// in NODE_OPTIONS as docs/observability.md tells a user) and the plugin (a YAML
// program). Every value a user would keep secret is a unique canary, and none
// is anywhere in the files.
import { randomBytes } from "node:crypto";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FakeServer, startFakeServer } from "../../fake-server";
import { createCliEnv, type CliEnv } from "../plugin/support";
import { REPO_ROOT } from "../support/pulumi-env";
import { ancestors, childrenOf, described, readTraceFile, SPAN_KIND, type TraceSpan } from "./otlp-file";

const tag = randomBytes(6).toString("hex");
const CANARY = {
  apiKey: `canary-apikey-${tag}`,
  passphrase: `canary-passphrase-${tag}`,
  property: `canary-property-${tag}`,
  name: `Canary name ${tag}`,
};

const pluginBin = path.join(REPO_ROOT, ".work", `engine-trace-bin-${tag}`);
let server: FakeServer;
let env: CliEnv;
const traceFiles: string[] = [];
const tokens = new Set<string>();

beforeAll(async () => {
  server = await startFakeServer({ port: 0, apiKeys: [{ key: CANARY.apiKey, environment: "Customer" }] });
  // The plugin from this checkout, found on PATH by the engine (as `pulumi-resource-user-groups` is when installed with npm).
  env = createCliEnv("engine-trace", [pluginBin]);
  mkdirSync(pluginBin, { recursive: true });
  writeFileSync(path.join(pluginBin, "pulumi-resource-user-groups"), `#!/bin/sh\nexec node ${JSON.stringify(path.join(REPO_ROOT, "dist/provider/plugin/main.js"))} "$@"\n`, { mode: 0o755 });
  // And the language host of this checkout (the engine's directory has the copy scripts/ensure-pulumi installed).
  writeFileSync(path.join(pluginBin, "pulumi-language-nodejs"), `#!/bin/sh\nexec node ${JSON.stringify(path.join(REPO_ROOT, "language-host/main.js"))} "$@"\n`, { mode: 0o755 });
});
afterAll(async () => {
  await server?.close();
  env?.cleanup();
  rmSync(pluginBin, { recursive: true, force: true });
});

/** The engine's environment: credentials and passphrase (canaries), the fake server over plain HTTP. */
function runEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  return {
    USER_GROUPS_BASE_URL: server.url,
    USER_GROUPS_API_KEY: CANARY.apiKey,
    USER_GROUPS_ALLOW_INSECURE_HTTP: "1",
    PULUMI_CONFIG_PASSPHRASE: CANARY.passphrase,
    ...extra,
  };
}

async function tracedRun(dir: string, command: string[], extra: Record<string, string> = {}): Promise<TraceSpan[]> {
  const file = path.join(dir, `trace-${command[0]}-${traceFiles.length}.json`);
  traceFiles.push(file);
  await env.pulumi([...command, "--yes", "--otel-traces", `file://${file}`], { cwd: dir, env: runEnv(extra) });
  return readTraceFile(file);
}

/**
 * The span `UserGroup <operation>` of the group, with the structure above it
 * and below it checked: the provider process's server span of `rpcMethod`, the
 * engine's client span of the same method, the engine's root; HTTP spans below.
 */
function checkOperation(spans: TraceSpan[], operation: string, rpcMethod: string, providerService: string, userGroupId: string): TraceSpan[] {
  const span = spans.find((each) => each.name === `UserGroup ${operation}` && each.attributes["user_groups.user_group_id"] === userGroupId);
  expect(span, `UserGroup ${operation} among ${described(spans).join(", ")}`).toBeDefined();
  const chain = ancestors(spans, span!);
  expect(chain.slice(0, 2).map((each) => [each.service, each.name, each.kind])).toEqual([
    [providerService, `pulumirpc.ResourceProvider/${rpcMethod}`, SPAN_KIND.SERVER],
    ["pulumi-cli", `pulumirpc.ResourceProvider/${rpcMethod}`, SPAN_KIND.CLIENT],
  ]);
  expect(chain.at(-1)?.name).toBe("pulumi"); // the CLI's root span: the whole chain is in the file
  for (const each of [span!, ...chain]) expect(each.traceId).toBe(span!.traceId);
  expect(span!.attributes["user_groups.operation"]).toBe(operation);
  const requests = childrenOf(spans, span!);
  expect(requests.length).toBeGreaterThan(0);
  for (const request of requests) {
    expect(request.kind).toBe(SPAN_KIND.CLIENT);
    expect(request.attributes["http.request.method"]).toBe(request.name);
    expect(request.attributes["http.response.status_code"]).toBeTypeOf("number");
  }
  return requests;
}

describe("pulumi --otel-traces with the user-groups providers", { timeout: 120_000 }, () => {
  it("dynamic provider (Node.js program, the preload in NODE_OPTIONS): create, read and delete under the engine's spans", async () => {
    const dir = path.join(env.workDir, "dynamic");
    mkdirSync(dir);
    writeFileSync(path.join(dir, "Pulumi.yaml"), "name: engine-trace-dynamic\nruntime: nodejs\n");
    writeFileSync(path.join(dir, "package.json"), JSON.stringify({ name: "engine-trace-dynamic", main: "index.js" }));
    writeFileSync(
      path.join(dir, "index.js"),
      `const { UserGroup } = require("pulumi-user-groups");\n` +
        `new UserGroup("traced", { name: ${JSON.stringify(CANARY.name)}, userGroupId: "traced-dynamic", properties: { secretish: ${JSON.stringify(CANARY.property)} } });\n`,
    );
    const preload = { NODE_OPTIONS: "--require pulumi-user-groups/otel-preload" };
    await env.pulumi(["stack", "init", "dev"], { cwd: dir, env: runEnv() });

    const up = await tracedRun(dir, ["up", "--skip-preview"], preload);
    const created = checkOperation(up, "create", "Create", "pulumi-user-groups-dynamic-provider", "traced-dynamic");
    expect(created.map((request) => request.name)).toContain("GET"); // the get-or-create
    const stored = server.groups().find((group) => group.user_group_id === "traced-dynamic");
    expect(stored?.properties).toEqual({ secretish: CANARY.property });
    tokens.add(stored!.token);
    // Our language host passed the engine's span of the Run call to the program (TRACEPARENT): the SDK's spans are under it.
    const programSpan = up.find((span) => span.service === "pulumi-sdk-nodejs");
    expect(programSpan, described(up).join(", ")).toBeDefined();
    expect(ancestors(up, programSpan!).map((span) => `${span.service}:${span.name}`)).toContain("pulumi-cli:pulumirpc.LanguageRuntime/Run");

    const refresh = await tracedRun(dir, ["refresh"], preload);
    const read = checkOperation(refresh, "read", "Read", "pulumi-user-groups-dynamic-provider", "traced-dynamic");
    expect(read.map((request) => request.name)).toEqual(["PUT"]);
    expect(refresh.find((span) => span.name === "UserGroup read")?.attributes["user_groups.outcome"]).toBe("found");

    const destroy = await tracedRun(dir, ["destroy"], preload);
    const deleted = checkOperation(destroy, "delete", "Delete", "pulumi-user-groups-dynamic-provider", "traced-dynamic");
    expect(deleted.map((request) => request.name)).toEqual(["DELETE"]);
    expect(server.groups().find((group) => group.user_group_id === "traced-dynamic")).toBeUndefined();
  });

  it("plugin (YAML program): create and diff under the engine's spans", async () => {
    const dir = path.join(env.workDir, "plugin");
    mkdirSync(dir);
    const program = (seats: number) =>
      [
        "name: engine-trace-plugin",
        "runtime: yaml",
        "resources:",
        "  traced:",
        "    type: user-groups:index:UserGroup",
        "    properties:",
        `      name: ${JSON.stringify(CANARY.name)}`,
        "      userGroupId: traced-plugin",
        "      properties:",
        `        secretish: ${JSON.stringify(CANARY.property)}`,
        `        seats: ${seats}`,
        "",
      ].join("\n");
    writeFileSync(path.join(dir, "Pulumi.yaml"), program(1));
    await env.pulumi(["stack", "init", "dev"], { cwd: dir, env: runEnv() });

    const up = await tracedRun(dir, ["up", "--skip-preview"]);
    const created = checkOperation(up, "create", "Create", "pulumi-resource-user-groups", "traced-plugin");
    expect(created.map((request) => request.name)).toContain("GET");
    tokens.add(server.groups().find((group) => group.user_group_id === "traced-plugin")!.token);

    writeFileSync(path.join(dir, "Pulumi.yaml"), program(2));
    const update = await tracedRun(dir, ["up", "--skip-preview"]);
    const diff = update.find((span) => span.name === "UserGroup diff");
    expect(diff?.attributes["user_groups.outcome"]).toBe("update");
    expect(ancestors(update, diff!)[0]?.name).toBe("pulumirpc.ResourceProvider/Diff");
    const updated = checkOperation(update, "update", "Update", "pulumi-resource-user-groups", "traced-plugin");
    expect(updated.map((request) => request.name)).toEqual(["PUT"]);
  });

  it("no API key, passphrase, token, group name or property value anywhere in the trace files", () => {
    expect(traceFiles.length).toBe(5);
    expect(tokens.size).toBe(2);
    const secrets = [...Object.values(CANARY), ...tokens];
    for (const file of traceFiles) {
      const text = readFileSync(file, "utf8");
      for (const secret of secrets) expect(text.includes(secret), `${path.basename(file)} holds a secret`).toBe(false);
    }
  });
});
