// The OpenAPI document: generated from the wire schemas, served, and committed.
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { request } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildOpenApiDocument, type FakeServer } from "../../fake-server/index.js";
import { start } from "./helpers.js";

let server: FakeServer;
beforeAll(async () => {
  server = await start();
});
afterAll(async () => {
  await server.close();
});

type Doc = {
  openapi: string;
  paths: Record<string, Record<string, { requestBody: { content: Record<string, { schema: { $ref: string } }> } }>>;
  components: { schemas: Record<string, unknown> };
};

function refs(value: unknown, out: string[] = []): string[] {
  if (Array.isArray(value)) for (const v of value) refs(v, out);
  else if (value !== null && typeof value === "object") {
    for (const [k, v] of Object.entries(value)) {
      if (k === "$ref" && typeof v === "string") out.push(v);
      else refs(v, out);
    }
  }
  return out;
}

describe("OpenAPI document", () => {
  const doc = buildOpenApiDocument() as Doc;

  it("is OpenAPI 3.1 with the four operations of /api/user, each with a JSON request body", () => {
    expect(doc.openapi).toBe("3.1.0");
    expect(Object.keys(doc.paths["/api/user"] ?? {}).sort()).toEqual(["delete", "get", "post", "put"]);
    for (const op of Object.values(doc.paths["/api/user"] ?? {})) {
      expect(op.requestBody.content["application/json"]?.schema.$ref).toMatch(/^#\/components\/schemas\/\w+Request$/);
    }
  });

  it("every $ref resolves inside the document", () => {
    for (const ref of refs(doc)) {
      const [, section, kind, name] = ref.split("/");
      expect(section).toBe("components");
      const table = (doc.components as Record<string, Record<string, unknown>>)[kind ?? ""];
      expect(table?.[name ?? ""], ref).toBeDefined();
    }
  });

  it("keeps the field limits the schemas enforce with refinements", () => {
    expect(doc.components.schemas["GetUserRequest"]).toMatchObject({
      required: ["name", "user_group_id"],
      properties: { name: { minLength: 1, maxLength: 255 }, user_group_id: { maxLength: 255 }, mapping: { maxProperties: 256 } },
    });
  });

  it("is served at /openapi.json", async () => {
    const res = await request(`${server.url}/openapi.json`);
    expect(res.statusCode).toBe(200);
    expect(await res.body.json()).toEqual(doc);
  });

  it("docs/openapi.json is up to date (regenerate with `npm run openapi`)", async () => {
    const committed = JSON.parse(await readFile(join(__dirname, "..", "..", "docs", "openapi.json"), "utf8")) as unknown;
    expect(committed).toEqual(doc);
  });
});
