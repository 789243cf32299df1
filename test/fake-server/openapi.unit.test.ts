// The OpenAPI document: generated from the wire schemas, served, and committed;
// it says what the server does (its own limits, every failure status, headers,
// the token's shape, links for stateful tools). schemathesis.test.ts then lets
// Schemathesis hold the running server to it.
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { request } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildOpenApiDocument, openApiJson, type FakeServer } from "../../fake-server/index.js";
import { MAX_JSON_DEPTH } from "../../fake-server/json-guard.js";
import { refsIn } from "../../fake-server/openapi.js";
import { ISSUED_TOKEN_PATTERN } from "../../provider/wire/schemas.js";
import { call, expectError, start } from "./helpers.js";

let server: FakeServer;
beforeAll(async () => {
  server = await start();
});
afterAll(async () => {
  await server.close();
});

type Schema = Record<string, unknown>;
interface Operation {
  operationId: string;
  requestBody: { content: Record<string, { schema: { $ref: string } }> };
  responses: Record<string, { $ref?: string; links?: Record<string, { operationId: string; requestBody: Record<string, string> }> }>;
}
interface Doc {
  openapi: string;
  paths: Record<string, Record<string, Operation>>;
  components: {
    schemas: Record<string, Schema>;
    responses: Record<string, { headers?: Record<string, { $ref: string }>; content: Record<string, { schema: Schema }> }>;
    headers: Record<string, { required: boolean; schema: Schema }>;
  };
}

const refs = (value: unknown): string[] => [...refsIn(value)];

const nameOf = (ref: string): string => ref.split("/").pop() ?? "";

describe("OpenAPI document", () => {
  const doc = buildOpenApiDocument() as unknown as Doc;
  const operations = doc.paths["/api/user"] ?? {};
  const schemas = doc.components.schemas;

  it("is OpenAPI 3.1 with the four operations of /api/user, each with a JSON request body", () => {
    expect(doc.openapi).toBe("3.1.0");
    expect(Object.keys(operations).sort()).toEqual(["delete", "get", "post", "put"]);
    for (const op of Object.values(operations)) {
      expect(op.requestBody.content["application/json"]?.schema.$ref).toMatch(/^#\/components\/schemas\/\w+Request$/);
    }
  });

  it("every $ref resolves inside the document, and every component schema is used", () => {
    const used = new Set<string>();
    for (const ref of refs(doc)) {
      const [, section, kind, name] = ref.split("/");
      expect(section).toBe("components");
      const table = (doc.components as unknown as Record<string, Record<string, unknown>>)[kind ?? ""];
      expect(table?.[name ?? ""], ref).toBeDefined();
      if (kind === "schemas") used.add(name ?? "");
    }
    expect(Object.keys(schemas).filter((name) => !used.has(name))).toEqual([]);
  });

  it("keeps the field limits the schemas enforce with refinements", () => {
    expect(schemas["GetUserRequest"]).toMatchObject({
      required: ["name", "user_group_id"],
      properties: { name: { minLength: 1, maxLength: 255 }, user_group_id: { maxLength: 255 }, mapping: { maxProperties: 256 } },
    });
  });

  it("declares each failure status an operation answers, with the error body, and no catch-all", () => {
    const statuses = (method: string) => Object.keys(operations[method]?.responses ?? {}).sort();
    // 507: a create (GET) or a growing update (PUT) past the store's limits.
    expect(statuses("get")).toEqual(["200", "400", "401", "403", "413", "415", "429", "500", "507"]);
    expect(statuses("put")).toEqual(["200", "400", "401", "403", "404", "413", "415", "429", "500", "507"]);
    expect(statuses("post")).toEqual(["200", "400", "401", "403", "404", "413", "415", "429", "500"]);
    expect(statuses("delete")).toEqual(["200", "400", "401", "403", "404", "409", "413", "415", "429", "500"]);
    for (const response of Object.values(doc.components.responses)) {
      expect(refs(response.content["application/json"]?.schema)).toContain("#/components/schemas/ErrorResponse");
    }
    // 405 is for the methods the document does not list.
    expect(doc.components.responses["MethodNotAllowed"]).toBeDefined();
  });

  it("declares Retry-After (429), Allow (405) and WWW-Authenticate (401) as the server sends them", async () => {
    const headerOf = (response: string, header: string) => {
      const ref = doc.components.responses[response]?.headers?.[header]?.$ref ?? "";
      return doc.components.headers[nameOf(ref)];
    };
    expect(headerOf("TooManyRequests", "Retry-After")).toMatchObject({ required: true, schema: { type: "integer", minimum: 1 } });

    const allow = headerOf("MethodNotAllowed", "Allow");
    const patch = await call(server, "PATCH", {});
    expectError(patch, 405, "method_not_allowed");
    expect(allow?.schema["const"]).toBe(patch.headers["allow"]);

    const authenticate = headerOf("Unauthorized", "WWW-Authenticate");
    const anonymous = await call(server, "GET", { name: "A", user_group_id: "a" }, { key: null });
    expectError(anonymous, 401, "unauthorized");
    expect(authenticate?.schema["const"]).toBe(anonymous.headers["www-authenticate"]);

    const limited = await start({ rateLimit: { requests: 1, windowSeconds: 60 } });
    try {
      await call(limited, "GET", { name: "A", user_group_id: "a" });
      const refused = await call(limited, "GET", { name: "A", user_group_id: "a" });
      expectError(refused, 429, "rate_limited");
      expect(Number(refused.headers["retry-after"])).toBeGreaterThanOrEqual(1);
    } finally {
      await limited.close();
    }
  });

  it("gives token and current_token the shape of an issued token", () => {
    expect(schemas["IssuedToken"]).toMatchObject({ type: "string", pattern: ISSUED_TOKEN_PATTERN.source });
    const token = { $ref: "#/components/schemas/IssuedToken" };
    for (const view of ["UserGroup", "UserGroupWithEnvironment", "RotatedUserGroup"]) {
      expect(schemas[view]?.["properties"], view).toMatchObject({ token });
    }
    for (const request of ["RotateTokenRequest", "DeleteUserRequest"]) {
      expect(schemas[request]?.["properties"], request).toMatchObject({ current_token: token });
    }
  });

  it("says what the server refuses in properties and mapping: __proto__ keys, deep nesting, numbers past the doubles", () => {
    const notProto = { not: { const: "__proto__" } };
    expect(schemas["Properties"]).toMatchObject({ type: "object", propertyNames: notProto });
    expect(schemas["GetUserRequest"]).toMatchObject({ properties: { mapping: { propertyNames: notProto } } });
    // One schema per level below `properties` itself: MAX_JSON_DEPTH levels in all.
    let levels = 1;
    let schema = schemas["Properties"];
    while (schema?.["additionalProperties"] !== undefined) {
      const below = schemas[nameOf((schema["additionalProperties"] as { $ref: string }).$ref)];
      if (below?.["type"] === undefined || !(below["type"] as string[]).includes("object")) break;
      expect(below).toMatchObject({ propertyNames: notProto });
      expect(below["items"]).toEqual(below["additionalProperties"]);
      schema = below;
      levels += 1;
    }
    expect(levels).toBe(MAX_JSON_DEPTH);
    // The number bounds: the first magnitude that parses to Infinity, exactly.
    const bound = (schema?.["exclusiveMaximum"] ?? 0n) as bigint;
    expect(JSON.parse((bound - 1n).toString())).toBe(Number.MAX_VALUE);
    expect(JSON.parse(bound.toString())).toBe(Infinity);
    expect(schema?.["exclusiveMinimum"]).toBe(-bound);
  });

  it("links a group's token and id from GET, PUT and POST answers to the next operations", () => {
    const token = "$response.body#/user_group/token";
    const id = "$response.body#/user_group/provided_id";
    for (const method of ["get", "put", "post"]) {
      const links = operations[method]?.responses["200"]?.links ?? {};
      expect(links["RotateToken"], method).toMatchObject({ operationId: "rotateToken", requestBody: { current_token: token } });
      expect(links["DeleteUser"], method).toMatchObject({ operationId: "deleteUser", requestBody: { current_token: token, user_group_id: id } });
      expect(links["UpdateUser"], method).toMatchObject({ operationId: "updateUser", requestBody: { user_group_id: id } });
    }
  });

  it("is served at /openapi.json, its number bounds written out digit for digit", async () => {
    const res = await request(`${server.url}/openapi.json`);
    expect(res.statusCode).toBe(200);
    const text = await res.body.text();
    expect(text).toBe(openApiJson());
    expect(text).toContain(`"exclusiveMaximum": ${2n ** 1024n - 2n ** 970n},`);
  });

  it("docs/openapi.json is up to date (regenerate with `npm run openapi`)", async () => {
    const committed = await readFile(join(__dirname, "..", "..", "docs", "openapi.json"), "utf8");
    expect(committed).toBe(`${openApiJson()}\n`);
  });
});
