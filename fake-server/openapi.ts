// The OpenAPI 3.1 document of /api/user, generated from the wire schemas so it
// cannot drift from what the fake server accepts and answers. Where the server
// refuses more than the zod schemas say (json-guard.ts: `__proto__` keys, nesting,
// numbers that JSON.parse turns into Infinity), the document says so too, from
// the same constants; test/fake-server/openapi.unit.test.ts holds the server to it, and
// test/fake-server/schemathesis.test.ts lets Schemathesis try both.
import { z } from "zod";
import {
  API_METHODS,
  API_PATH,
  ISSUED_TOKEN_PATTERN,
  MAX_BODY_BYTES,
  MAX_ID_CHARS,
  MAX_MAPPING_KEYS,
  MAX_NAME_CHARS,
  OPERATIONS,
  errorResponseSchema,
  jsonObjectSchema,
  mappingSchema,
  nameSchema,
  tokenSchema,
  userGroupIdSchema,
  type ApiMethod,
  type ServiceErrorCode,
} from "../provider/wire/schemas.js";
import { ALLOW } from "./api-request.js";
import { DEFAULT_MAX_GROUP_BYTES, DEFAULT_MAX_GROUPS, DEFAULT_MAX_TOTAL_BYTES } from "./options.js";
import { MAX_JSON_DEPTH } from "./json-guard.js";

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
    description:
      "Issues a new token for the group holding `current_token`; the old token stops working at once. " +
      "A `current_token` that no group holds, whatever its shape, is 404.",
  },
  DELETE: {
    id: "deleteUser",
    summary: "Delete User",
    description:
      "Deletes the group holding `current_token` (whatever its shape, an unknown one is 404). The request carries " +
      "a JSON body although it is a DELETE. `user_group_id` and `data_source_provided_id` are optional; " +
      "each one present must equal the group's id, else 409 `id_mismatch` and nothing is deleted.",
  },
};

/** Every failure status of /api/user: its response's name, what it means, and the error codes it carries. */
const ERROR_STATUSES = {
  "400": {
    name: "BadRequest",
    description:
      "The body is not JSON (`invalid_json`), not one JSON object (`invalid_body`), or a field breaks its rule " +
      "(`invalid_<field>`); or the HTTP request itself is malformed (`bad_request`).",
    codes: [
      "invalid_json",
      "invalid_body",
      "invalid_name",
      "invalid_user_group_id",
      "invalid_mapping",
      "invalid_properties",
      "invalid_current_token",
      "invalid_data_source_provided_id",
      "bad_request",
    ],
  },
  "401": {
    name: "Unauthorized",
    description: "The Authorization header is missing, is not `Token <API_KEY>`, or holds an unknown key.",
    codes: ["unauthorized"],
  },
  "403": {
    name: "Forbidden",
    description: "A read-only key asked to write: every PUT, POST and DELETE, and a GET that would create.",
    codes: ["forbidden"],
  },
  "404": {
    name: "NotFound",
    description: "No group with this `user_group_id` / `current_token` in the key's environment (the other environment's groups are never visible).",
    codes: ["user_group_not_found"],
  },
  "405": {
    name: "MethodNotAllowed",
    description: "Any method on /api/user other than GET, PUT, POST and DELETE (HEAD, OPTIONS, PATCH, ...). `Allow` lists the four.",
    codes: ["method_not_allowed"],
  },
  "409": {
    name: "Conflict",
    description: "DELETE: `user_group_id` or `data_source_provided_id` is not the id of the group holding `current_token`; nothing was deleted.",
    codes: ["id_mismatch"],
  },
  "413": {
    name: "PayloadTooLarge",
    description: `The body is over ${MAX_BODY_BYTES} bytes (refused without reading the rest; the connection is closed); or, for a create or update, the group would be larger than the emulator keeps (\`group_too_large\`: name, id, mapping and properties as UTF-8 JSON over --max-group-bytes, default ${DEFAULT_MAX_GROUP_BYTES}; nothing changed).`,
    codes: ["payload_too_large", "group_too_large"],
  },
  "415": {
    name: "UnsupportedMediaType",
    description: "Content-Type is not application/json (a charset parameter other than UTF-8 counts as not).",
    codes: ["unsupported_media_type"],
  },
  "429": {
    name: "TooManyRequests",
    description: "Only with a rate limit (--rate-limit): too many requests for this API key in the current window.",
    codes: ["rate_limited"],
  },
  "500": {
    name: "InternalError",
    description: "Only with a data file: the change could not be written to disk (it is kept in memory and written by the next write).",
    codes: ["internal_error"],
  },
  "507": {
    name: "InsufficientStorage",
    description: `A create past the emulator's group limit (--max-groups, default ${DEFAULT_MAX_GROUPS}), or a create or update that grows the store past its byte limit (--max-total-bytes, default ${DEFAULT_MAX_TOTAL_BYTES}); nothing changed. Not transient: delete groups or raise the limit.`,
    codes: ["storage_full"],
  },
} as const satisfies Record<string, { name: string; description: string; codes: readonly ServiceErrorCode[] }>;
type ErrorStatus = keyof typeof ERROR_STATUSES;

/** The failures each operation can answer (405 belongs to the methods the document does not list). */
const OPERATION_ERRORS: Record<ApiMethod, readonly ErrorStatus[]> = {
  GET: ["400", "401", "403", "413", "415", "429", "500", "507"],
  PUT: ["400", "401", "403", "404", "413", "415", "429", "500", "507"],
  POST: ["400", "401", "403", "404", "413", "415", "429", "500"],
  DELETE: ["400", "401", "403", "404", "409", "413", "415", "429", "500"],
};

/** Headers that come with a failure status. */
const ERROR_HEADERS: Partial<Record<ErrorStatus, Record<string, string>>> = {
  "401": { "WWW-Authenticate": "WWW-Authenticate" },
  "405": { Allow: "Allow" },
  "429": { "Retry-After": "Retry-After" },
};

const HEADERS: JsonSchema = {
  "WWW-Authenticate": {
    description: "The authentication scheme to use: always `Token`.",
    required: true,
    schema: { type: "string", const: "Token" },
  },
  Allow: {
    description: "The methods /api/user answers.",
    required: true,
    schema: { type: "string", const: ALLOW.join(", ") },
  },
  "Retry-After": {
    description: "Whole seconds until the key's rate-limit window ends, at least 1.",
    required: true,
    schema: { type: "integer", minimum: 1 },
  },
};

/**
 * Stateful testing follows these: the token and id a 200 answers feed the next
 * operation on that group (the rotated token after a POST).
 */
const GROUP_LINKS = {
  RotateToken: {
    operationId: OPERATION_TEXT.POST.id,
    description: "Rotate this group's token.",
    requestBody: { current_token: "$response.body#/user_group/token" },
  },
  DeleteUser: {
    operationId: OPERATION_TEXT.DELETE.id,
    description: "Delete this group.",
    requestBody: { current_token: "$response.body#/user_group/token", user_group_id: "$response.body#/user_group/provided_id" },
  },
  UpdateUser: {
    operationId: OPERATION_TEXT.PUT.id,
    description: "Update this group.",
    requestBody: { user_group_id: "$response.body#/user_group/provided_id" },
  },
  GetUser: {
    operationId: OPERATION_TEXT.GET.id,
    description: "Get this group again (nothing changes).",
    requestBody: { user_group_id: "$response.body#/user_group/provided_id", name: "$response.body#/user_group/name" },
  },
} as const;

const OPERATION_LINKS: Record<ApiMethod, ReadonlyArray<keyof typeof GROUP_LINKS>> = {
  GET: ["RotateToken", "DeleteUser", "UpdateUser", "GetUser"],
  PUT: ["RotateToken", "DeleteUser", "UpdateUser", "GetUser"],
  POST: ["RotateToken", "DeleteUser", "UpdateUser", "GetUser"],
  DELETE: [],
};

/**
 * The group object of each success answer, as a named schema: tools that infer
 * resources from schema names (Schemathesis's stateful phase) then see that GET
 * produces the UserGroup that PUT and DELETE take by `user_group_id`.
 */
const GROUP_VIEW_NAMES: Record<ApiMethod, string | undefined> = {
  GET: "UserGroup",
  PUT: "UserGroupWithEnvironment",
  POST: "RotatedUserGroup",
  DELETE: undefined,
};

const NOT_PROTO = { not: { const: "__proto__" } };
const ref = (name: string): JsonSchema => ({ $ref: `#/components/schemas/${name}` });
/**
 * 2^1024 − 2^970: the smallest magnitude a JSON number literal can have and still
 * parse to Infinity (below it, a literal rounds to at most Number.MAX_VALUE). No
 * double holds it, so the document object keeps it as a BigInt, and openApiJson()
 * writes it out digit for digit: exact for tools that read big numbers exactly, and
 * Infinity (no bound, the same verdict) for those that read doubles.
 */
const DOUBLE_OVERFLOW = 2n ** 1024n - 2n ** 970n;

/** `PropertyValue<n>`: a value inside `properties` whose arrays and objects nest at most n more levels. */
const PROPERTY_VALUE = "PropertyValue";

/**
 * `<prefix>0` .. `<prefix><levels>`: JSON values whose arrays and objects nest at most
 * n levels, each level with `extra` keywords. JSON Schema cannot count, so one schema
 * per level. (Never `allOf` such a chain with another schema: a tool that merges them
 * inlines every level, exponentially; Schemathesis ran out of memory.)
 */
function nestingChain(prefix: string, levels: number, extra: JsonSchema): JsonSchema {
  const schemas: JsonSchema = { [`${prefix}0`]: { type: ["string", "number", "boolean", "null"], ...extra } };
  for (let level = 1; level <= levels; level += 1) {
    const below = ref(`${prefix}${level - 1}`);
    schemas[`${prefix}${level}`] = { type: ["string", "number", "boolean", "null", "array", "object"], ...extra, items: below, additionalProperties: below };
  }
  return schemas;
}

/**
 * What `properties` may hold, as the server's own checks (json-guard.ts, handlers.ts)
 * have it: arrays and objects nested at most MAX_JSON_DEPTH levels, `properties`
 * itself the first; no `__proto__` key at any depth; only finite numbers (a literal
 * such as 1e309 parses to Infinity, which is refused).
 */
function propertiesSchemas(): JsonSchema {
  const safe = { exclusiveMinimum: -DOUBLE_OVERFLOW, exclusiveMaximum: DOUBLE_OVERFLOW, propertyNames: NOT_PROTO };
  return {
    ...nestingChain(PROPERTY_VALUE, MAX_JSON_DEPTH - 1, safe),
    Properties: {
      description:
        `A JSON object whose arrays and objects nest at most ${MAX_JSON_DEPTH} levels, itself the first; no key is ` +
        "`__proto__`, at any depth; every number parses to a finite double: its magnitude is below 2^1024 − 2^970 " +
        "(a literal at or beyond it, such as 1e309, parses to Infinity). Else 400 `invalid_properties`.",
      type: "object",
      propertyNames: NOT_PROTO,
      additionalProperties: ref(`${PROPERTY_VALUE}${MAX_JSON_DEPTH - 1}`),
    },
  };
}

/** Restores, in JSON Schema terms, the limits the wire schemas enforce with refinements or json-guard.ts checks. */
function override(ctx: { zodSchema: unknown; jsonSchema: JsonSchema }): void {
  const replaceWith = (schema: JsonSchema): void => {
    for (const key of Object.keys(ctx.jsonSchema)) delete ctx.jsonSchema[key];
    Object.assign(ctx.jsonSchema, schema);
  };
  if (ctx.zodSchema === nameSchema) {
    Object.assign(ctx.jsonSchema, { minLength: 1, maxLength: MAX_NAME_CHARS, pattern: "\\S" });
  } else if (ctx.zodSchema === userGroupIdSchema) {
    Object.assign(ctx.jsonSchema, { minLength: 1, maxLength: MAX_ID_CHARS });
  } else if (ctx.zodSchema === mappingSchema) {
    Object.assign(ctx.jsonSchema, { maxProperties: MAX_MAPPING_KEYS, propertyNames: NOT_PROTO });
  } else if (ctx.zodSchema === jsonObjectSchema) {
    replaceWith(ref("Properties"));
  } else if (ctx.zodSchema === tokenSchema) {
    replaceWith(ref("IssuedToken"));
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
      name = `Shared${shared.size + 1}`;
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

/** Every `$ref` under `value`. */
export function refsIn(value: unknown, out = new Set<string>()): Set<string> {
  if (Array.isArray(value)) for (const item of value) refsIn(item, out);
  else if (value !== null && typeof value === "object") {
    for (const [k, v] of Object.entries(value)) {
      if (k === "$ref" && typeof v === "string") out.add(v);
      else refsIn(v, out);
    }
  }
  return out;
}

/** Drops the component schemas nothing refers to (zod emits `$defs` for schemas `override` replaced). */
function pruneSchemas(schemas: JsonSchema, roots: unknown): void {
  const reached = new Set<string>();
  const pending = [...refsIn(roots)];
  while (pending.length > 0) {
    const target = pending.pop()!;
    const name = target.startsWith("#/components/schemas/") ? target.slice("#/components/schemas/".length) : undefined;
    if (name === undefined || reached.has(name)) continue;
    reached.add(name);
    pending.push(...refsIn(schemas[name]));
  }
  for (const name of Object.keys(schemas)) if (!reached.has(name)) delete schemas[name];
}

function errorResponses(): JsonSchema {
  const responses: JsonSchema = {};
  for (const [status, { name, description, codes }] of Object.entries(ERROR_STATUSES)) {
    const headers = ERROR_HEADERS[status as ErrorStatus];
    responses[name] = {
      description: `${status}: ${description}`,
      ...(headers === undefined ? {} : { headers: Object.fromEntries(Object.entries(headers).map(([h, c]) => [h, { $ref: `#/components/headers/${c}` }])) }),
      content: {
        "application/json": {
          schema: {
            allOf: [
              ref("ErrorResponse"),
              { type: "object", properties: { error: { type: "object", properties: { code: { enum: [...codes] } } } } },
            ],
          },
        },
      },
    };
  }
  return responses;
}

/** The document's JSON text (what `GET /openapi.json` serves and `npm run openapi` writes), its BigInt bounds as exact literals. */
export function openApiJson(): string {
  const mark = "@exact-number@";
  const text = JSON.stringify(buildOpenApiDocument(), (_key, value: unknown) => (typeof value === "bigint" ? `${mark}${value}` : value), 2);
  return text.replace(new RegExp(`"${mark}(-?\\d+)"`, "g"), "$1");
}

/** The document as an object; the number bounds of `properties` are BigInts (see DOUBLE_OVERFLOW), so serialize it with openApiJson(). */
export function buildOpenApiDocument(): JsonSchema {
  const shared = new Map<string, string>();
  const schemas: JsonSchema = {
    // Issued tokens have a fixed shape (W10); the wire schema keeps it a plain string for the client.
    IssuedToken: {
      type: "string",
      pattern: ISSUED_TOKEN_PATTERN.source,
      description: "A token this service issues: 64 lowercase hex characters from a CSPRNG.",
    },
    ...propertiesSchemas(),
  };
  schemas["ErrorResponse"] = convert(errorResponseSchema, "output", shared, schemas);
  const operations: JsonSchema = {};
  for (const method of API_METHODS) {
    const op = OPERATIONS[method];
    const text = OPERATION_TEXT[method];
    const base = text.id.charAt(0).toUpperCase() + text.id.slice(1);
    schemas[`${base}Request`] = convert(op.request, "input", shared, schemas);
    const response = convert(op.response, "output", shared, schemas);
    const viewName = GROUP_VIEW_NAMES[method];
    const properties = response["properties"] as JsonSchema;
    if (viewName !== undefined) {
      schemas[viewName] = properties["user_group"];
      properties["user_group"] = ref(viewName);
    }
    schemas[`${base}Response`] = response;
    const links = OPERATION_LINKS[method];
    const errors = OPERATION_ERRORS[method].map((status) => [status, { $ref: `#/components/responses/${ERROR_STATUSES[status].name}` }]);
    operations[method.toLowerCase()] = {
      operationId: text.id,
      summary: text.summary,
      description: text.description,
      requestBody: {
        required: true,
        content: { "application/json": { schema: ref(`${base}Request`) } },
      },
      responses: {
        "200": {
          description: "Success: `success` is 1.",
          content: { "application/json": { schema: ref(`${base}Response`) } },
          ...(links.length === 0 ? {} : { links: Object.fromEntries(links.map((name) => [name, GROUP_LINKS[name]])) }),
        },
        ...Object.fromEntries(errors),
      },
    };
  }
  const responses = errorResponses();
  const paths = { [API_PATH]: operations };
  pruneSchemas(schemas, { paths, responses });
  return {
    openapi: "3.1.0",
    info: {
      title: "User group management (/api/user)",
      version: "1.0.0",
      description:
        "The user-group interface as settled by CONTRACT.md (W1–W11). Every request carries a JSON object body " +
        `of at most ${MAX_BODY_BYTES} bytes with Content-Type application/json. Every failure is a non-2xx ` +
        "status with an ErrorResponse body; a client must treat any body whose `success` is not 1 as a failure. " +
        "Methods other than the four below get 405 with `Allow` (components.responses.MethodNotAllowed). " +
        "The fake server's fault rules (test tooling, off unless installed) can answer any status with the code `injected_fault`.",
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
      headers: HEADERS,
      responses,
      schemas,
    },
  };
}
