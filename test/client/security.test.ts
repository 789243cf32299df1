// Issue #15, items 5 and 6: the API key only travels encrypted (or stays on
// the machine), and is redacted from every message whatever its length.
import { createServer, type Server } from "node:http";
import { createRequire } from "node:module";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { UserGroupApiError } from "../../provider/client/errors";
import { UserGroupsClient } from "../../provider/client/http-client";
import { Redactor } from "../../provider/client/redact";
import { InsecureTransportError } from "../../provider/client/transport";
import { resolveCredentials } from "../../provider/logic/credentials";

type RuntimeModule = typeof import("../../provider/resource/runtime");
// As Pulumi's dynamic-provider process loads it: the built package, by name.
const runtime = createRequire(path.resolve(__dirname, "../../package.json"))("pulumi-user-groups/provider-runtime") as RuntimeModule;

const KEY = "security-test-key-0001";

describe("5. plain HTTP only to loopback, unless the user opts in", () => {
  it("refuses http:// to a remote host, naming both ways to opt in and never the key", () => {
    let error: unknown;
    try {
      new UserGroupsClient({ baseUrl: "http://api.example.com/base", apiKey: KEY });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(InsecureTransportError);
    const message = (error as Error).message;
    expect(message).toContain("http://api.example.com");
    expect(message).toContain("user-groups:allowInsecureHttp");
    expect(message).toContain("USER_GROUPS_ALLOW_INSECURE_HTTP=1");
    expect(message).not.toContain(KEY);
  });

  it("allows https anywhere, http to loopback, and http anywhere with the opt-in", async () => {
    const allowed = [
      { baseUrl: "https://api.example.com" },
      { baseUrl: "http://127.0.0.1:9" },
      { baseUrl: "http://127.1.2.3:9" },
      { baseUrl: "http://localhost:9" },
      { baseUrl: "http://[::1]:9" },
      { baseUrl: "http://api.example.com", allowInsecureHttp: true },
    ];
    for (const options of allowed) await new UserGroupsClient({ ...options, apiKey: KEY }).close();
    // Names that merely look local are not loopback.
    for (const baseUrl of ["http://127.0.0.1.example.com", "http://localhost.example.com", "http://10.0.0.1"]) {
      expect(() => new UserGroupsClient({ baseUrl, apiKey: KEY })).toThrow(InsecureTransportError);
    }
  });

  it("reads the opt-in from stack config or the environment", () => {
    const none = () => undefined;
    const env = { USER_GROUPS_BASE_URL: "http://api.example.com", USER_GROUPS_API_KEY: KEY };
    expect(resolveCredentials(undefined, none, env).allowInsecureHttp).toBe(false);
    expect(resolveCredentials(undefined, none, { ...env, USER_GROUPS_ALLOW_INSECURE_HTTP: "1" }).allowInsecureHttp).toBe(true);
    expect(resolveCredentials(undefined, none, { ...env, USER_GROUPS_ALLOW_INSECURE_HTTP: "0" }).allowInsecureHttp).toBe(false);
    const config = (key: string) => (key === "user-groups:allowInsecureHttp" ? "true" : undefined);
    expect(resolveCredentials(undefined, config, env).allowInsecureHttp).toBe(true);
  });

  it("the provider fails the operation before sending anything", async () => {
    const provider = new runtime.UserGroupProvider({
      env: { USER_GROUPS_BASE_URL: "http://api.example.com", USER_GROUPS_API_KEY: KEY },
      debugSink: () => {},
    });
    await expect(provider.create({ name: "A", userGroupId: "a", mapping: {}, adoptExisting: false })).rejects.toThrow(
      /Refusing to send the API key to http:\/\/api\.example\.com over plain HTTP/,
    );
  });
});

describe("6. redaction of short secrets", () => {
  it("the Redactor blanks a key of any length", () => {
    const redactor = new Redactor();
    redactor.add("k7");
    expect(redactor.text("the key k7 was refused")).toBe("the key [REDACTED] was refused");
  });

  let echo: Server;
  beforeAll(async () => {
    // A service (or a proxy) that quotes the Authorization header in its error.
    echo = createServer((req, res) => {
      req.resume();
      res.writeHead(401, { "content-type": "text/plain" }).end(`bad credentials: ${req.headers.authorization ?? ""}`);
    });
    await new Promise<void>((resolve) => echo.listen(0, "127.0.0.1", resolve));
  });
  afterAll(() => new Promise<void>((resolve) => echo.close(() => resolve())));

  it("an error quoting a short key does not show it", async () => {
    const shortKey = "s3cr";
    const client = new UserGroupsClient({ baseUrl: `http://127.0.0.1:${(echo.address() as AddressInfo).port}`, apiKey: shortKey });
    try {
      const error = await client.update({ user_group_id: "a" }).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(UserGroupApiError);
      expect((error as Error).message).toContain("bad credentials: Token [REDACTED]");
      expect((error as Error).message).not.toContain(shortKey);
    } finally {
      await client.close();
    }
  });
});
