// The OpenAPI 3.1 document of /api/user, generated from the wire schemas so it
// cannot drift from what the fake server accepts and answers.
import { z } from "zod";
import {
  API_PATH,
  ERROR_CODES,
  ISSUED_TOKEN_PATTERN,
  MAX_BODY_BYTES,
  MAX_ID_CHARS,
  MAX_MAPPING_KEYS,
  MAX_NAME_CHARS,
  OPERATIONS,
  errorResponseSchema,
  mappingSchema,
  nameSchema,
  userGroupIdSchema,
  type ApiMethod,
} from "../provider/wire/schemas.js";

/** A JSON Schema (or OpenAPI) document, as plain JSON. */
export type JsonSchema = { [key: string]: unknown };

const OPERATION_TEXT: Record<ApiMethod, { id: string; summary: string; description: string }> = {
  GET: {
    id: "getUser",
    summary: "Get User (get-or-create)",
    description:
      "Returns the group with `user_group_id` in the API key's environment; if there is none, creates it " +
      "(mapping defaults to {}, properties to null) and answers `new_user_group: true`. An existing group is " +
      "returned unchanged. The request carries a JSON body although it is a GET.",
  },
  PUT: {
    id: "updateUser",
    summary: "Update User",
    description:
      "Replaces `name`, `mapping` and `properties` when present (`properties: null` clears them). The token does not change.",
  },
  POST: {
    id: "rotateToken",
    summary: "Create User (rotate token)",
    description: "Issues a new token for the group holding `current_token`; the old token stops working at once.",
  },
  DELETE: {
    id: "deleteUser",
    summary: "Delete User",
    description:
      "Deletes the group holding `current_token`. `user_group_id` and `data_source_provided_id` are optional; " +
      "each one present must equal the group's id, else 409 `id_mismatch` and nothing is deleted.",
  },
};

/** Restores, in JSON Schema terms, the limits the wire schemas enforce with refinements. */
function override(ctx: { zodSchema: unknown; jsonSchema: JsonSchema }): void {
  if (ctx.zodSchema === nameSchema) {
    Object.assign(ctx.jsonSchema, { minLength: 1, maxLength: MAX_NAME_CHARS, pattern: "\\S" });
  } else if (ctx.zodSchema === userGroupIdSchema) {
    Object.assign(ctx.jsonSchema, { minLength: 1, maxLength: MAX_ID_CHARS });
  } else if (ctx.zodSchema === mappingSchema) {
    Object.assign(ctx.jsonSchema, { maxProperties: MAX_MAPPING_KEYS });
  }
}

/**
 * Converts one schema and moves its local `$defs` into `components.schemas`:
 * in an OpenAPI document `#/...` refers to the document root, not the schema.
 */
function convert(schema: z.ZodType, io: "input" | "output", shared: Map<string, string>, components: JsonSchema): JsonSchema {
  const json = z.toJSONSchema(schema, { target: "draft-2020-12", io, override, unrepresentable: "throw" }) as JsonSchema;
  delete json["$schema"];
  const defs = (json["$defs"] ?? {}) as Record<string, JsonSchema>;
  delete json["$defs"];
  const renames = new Map<string, string>();
  for (const [local, def] of Object.entries(defs)) {
    const content = JSON.stringify(def);
    let name = shared.get(content);
    if (name === undefined) {
      name = shared.size === 0 ? "JsonValue" : `Shared${shared.size}`;
      shared.set(content, name);
    }
    renames.set(`#/$defs/${local}`, `#/components/schemas/${name}`);
  }
  const rewrite = (value: unknown): unknown => {
    if (Array.isArray(value)) return value.map(rewrite);
    if (value !== null && typeof value === "object") {
      const out: JsonSchema = {};
      for (const [k, v] of Object.entries(value)) {
        out[k] = k === "$ref" && typeof v === "string" ? (renames.get(v) ?? v) : rewrite(v);
      }
      return out;
    }
    return value;
  };
  for (const [local, def] of Object.entries(defs)) {
    const name = renames.get(`#/$defs/${local}`)?.split("/").pop();
    if (name !== undefined && components[name] === undefined) components[name] = rewrite(def);
  }
  return rewrite(json) as JsonSchema;
}

export function buildOpenApiDocument(): JsonSchema {
  const shared = new Map<string, string>();
  const schemas: JsonSchema = {};
  const paths: JsonSchema = {};
  const errorSchema = convert(errorResponseSchema, "output", shared, schemas);
  (errorSchema["properties"] as { error: { properties: { code: JsonSchema } } }).error.properties.code["examples"] = [
    ...ERROR_CODES,
  ];
  schemas["ErrorResponse"] = errorSchema;
  const operations: JsonSchema = {};
  for (const [method, op] of Object.entries(OPERATIONS) as Array<[ApiMethod, (typeof OPERATIONS)[ApiMethod]]>) {
    const text = OPERATION_TEXT[method];
    const base = text.id.charAt(0).toUpperCase() + text.id.slice(1);
    schemas[`${base}Request`] = convert(op.request, "input", shared, schemas);
    schemas[`${base}Response`] = convert(op.response, "output", shared, schemas);
    operations[method.toLowerCase()] = {
      operationId: text.id,
      summary: text.summary,
      description: text.description,
      requestBody: {
        required: true,
        content: { "application/json": { schema: { $ref: `#/components/schemas/${base}Request` } } },
      },
      responses: {
        "200": {
          description: "Success: `success` is 1.",
          content: { "application/json": { schema: { $ref: `#/components/schemas/${base}Response` } } },
        },
        default: { $ref: "#/components/responses/Error" },
      },
    };
  }
  paths[API_PATH] = operations;
  // Issued tokens have a fixed shape (W10); the wire schema keeps it a plain string.
  schemas["IssuedToken"] = {
    type: "string",
    pattern: ISSUED_TOKEN_PATTERN.source,
    description: "Shape of every `user_group.token` this service issues (64 lowercase hex characters from a CSPRNG).",
  };
  return {
    openapi: "3.1.0",
    info: {
      title: "User group management (/api/user)",
      version: "1.0.0",
      description:
        "The user-group interface as settled by CONTRACT.md (W1–W11). Every request carries a JSON object body " +
        `of at most ${MAX_BODY_BYTES} bytes with Content-Type application/json. Every failure is a non-2xx ` +
        "status with an ErrorResponse body; a client must treat any body whose `success` is not 1 as a failure.",
    },
    servers: [{ url: "/" }],
    security: [{ apiKey: [] }],
    paths,
    components: {
      securitySchemes: {
        apiKey: {
          type: "apiKey",
          in: "header",
          name: "Authorization",
          description: "`Token <API_KEY>`. Each key belongs to one environment (Customer or Testing) and is read-write or read-only.",
        },
      },
      responses: {
        Error: {
          description:
            "Failure (W3): 400 invalid_*, 401 unauthorized, 403 forbidden, 404 user_group_not_found / not_found, " +
            "405 method_not_allowed, 409 id_mismatch, 413 payload_too_large, 415 unsupported_media_type, " +
            "429 rate_limited (with Retry-After), 5xx internal_error.",
          content: { "application/json": { schema: { $ref: "#/components/schemas/ErrorResponse" } } },
        },
      },
      schemas,
    },
  };
}
