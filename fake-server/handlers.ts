// The four operations of /api/user (W4–W9) as plain functions over the store.
// They validate with the wire schemas and throw ApiError for every failure.
import type { z } from "zod";
import {
  deleteUserRequestSchema,
  fieldErrorCode,
  getUserRequestSchema,
  rotateTokenRequestSchema,
  updateUserRequestSchema,
  type ApiMethod,
  type DeleteUserResponse,
  type GetUserResponse,
  type JsonValue,
  type RotateTokenResponse,
  type UpdateUserResponse,
} from "../provider/wire/schemas.js";
import type { ApiKey } from "./auth.js";
import { formatIssue, PROTO_KEY_REFUSED, WORDED_ISSUES } from "../provider/wire/issues.js";
import { ApiError } from "./errors.js";
import { MAX_JSON_DEPTH, findJsonHazard } from "./json-guard.js";
import type { Store, StoredGroup } from "./store.js";

export type JsonObject = { [key: string]: JsonValue };
export type SuccessBody = GetUserResponse | UpdateUserResponse | RotateTokenResponse | DeleteUserResponse;

const utf8 = new TextDecoder("utf-8", { fatal: true });

/** Where a `__proto__` key is refused (the provider's check refuses it there too) rather than dropped. */
const NO_PROTO_FIELDS: ReadonlySet<string> = new Set(["mapping", "properties"]);

/** The fields of each operation's request: the only ones the hazard checks look at (W2: unknown fields are ignored). */
export const REQUEST_FIELDS: Readonly<Record<ApiMethod, ReadonlySet<string>>> = {
  GET: new Set(Object.keys(getUserRequestSchema.shape)),
  PUT: new Set(Object.keys(updateUserRequestSchema.shape)),
  POST: new Set(Object.keys(rotateTokenRequestSchema.shape)),
  DELETE: new Set(Object.keys(deleteUserRequestSchema.shape)),
};

/**
 * The body must be exactly one JSON object (W2); an empty body is 400 for every
 * method. Nesting deeper than MAX_JSON_DEPTH, and `__proto__` keys in `mapping`
 * or `properties`, are 400 with the field's code, before anything walks the body.
 * With `fields`, only those fields are checked (the rest is ignored, never walked).
 */
export function parseBody(raw: Buffer, fields?: ReadonlySet<string>): JsonObject {
  let text: string;
  try {
    text = utf8.decode(raw);
  } catch {
    throw new ApiError(400, "invalid_json", "request body is not valid UTF-8");
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    // Only a failed parse can be an empty body: the common case skips the trim.
    if (text.trim() === "") throw new ApiError(400, "invalid_body", "request body must be a JSON object, got an empty body");
    throw new ApiError(400, "invalid_json", "request body is not valid JSON");
  }
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    const kind = value === null ? "null" : Array.isArray(value) ? "an array" : typeof value;
    throw new ApiError(400, "invalid_body", `request body must be a JSON object, got ${kind}`);
  }
  const hazard = findJsonHazard(value as JsonObject, NO_PROTO_FIELDS, fields);
  if (hazard !== undefined) {
    throw new ApiError(
      400,
      fieldErrorCode(hazard.field),
      hazard.kind === "too_deep"
        ? `${hazard.field} is nested deeper than ${MAX_JSON_DEPTH} levels`
        : `${hazard.field} ${PROTO_KEY_REFUSED}`,
    );
  }
  return value as JsonObject;
}

/** Validates with a wire schema; the first problem names its field (W4). */
function validate<S extends z.ZodType>(schema: S, body: JsonObject): z.infer<S> {
  const parsed = schema.safeParse(body, WORDED_ISSUES);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  const field = typeof issue?.path[0] === "string" ? issue.path[0] : "";
  throw new ApiError(400, fieldErrorCode(field), issue === undefined ? "request body is invalid" : formatIssue(issue, "request body"));
}

function notFound(what: string): ApiError {
  return new ApiError(404, "user_group_not_found", `no user group with this ${what} in this environment`);
}

/** W1: a read-only key may only GET; checked before the body is read. */
export function assertMayCall(key: ApiKey, method: ApiMethod): void {
  if (key.readOnly && method !== "GET") {
    throw new ApiError(403, "forbidden", "this API key is read-only: it may only get existing user groups");
  }
}

/** The fields every answer carries about a group (W5–W7 add to them). */
function groupIdentity(group: StoredGroup) {
  return { team_id: group.team_id, token: group.token, name: group.name, provided_id: group.user_group_id };
}

export function getUser(store: Store, key: ApiKey, body: JsonObject): GetUserResponse {
  const request = validate(getUserRequestSchema, body);
  if (key.readOnly && store.get(key.environment, request.user_group_id) === undefined) {
    throw new ApiError(403, "forbidden", "this API key is read-only: it cannot create user groups");
  }
  const { group, created } = store.getOrCreate(key.environment, request.user_group_id, {
    name: request.name,
    mapping: request.mapping ?? {},
    properties: request.properties ?? null,
  });
  return {
    success: 1,
    new_user_group: created,
    user_group: { ...groupIdentity(group), properties: group.properties },
  };
}

export function updateUser(store: Store, key: ApiKey, body: JsonObject): UpdateUserResponse {
  const request = validate(updateUserRequestSchema, body);
  const changes: Parameters<Store["update"]>[2] = {};
  if (request.name !== undefined) changes.name = request.name;
  if (request.mapping !== undefined) changes.mapping = request.mapping;
  if (request.properties !== undefined) changes.properties = request.properties;
  const group = store.update(key.environment, request.user_group_id, changes);
  if (group === undefined) throw notFound("user_group_id");
  return {
    success: 1,
    user_group: { ...groupIdentity(group), properties: group.properties, api_environment_tag: group.environment },
  };
}

export function rotateToken(store: Store, key: ApiKey, body: JsonObject): RotateTokenResponse {
  const request = validate(rotateTokenRequestSchema, body);
  const group = store.rotate(key.environment, request.current_token);
  if (group === undefined) throw notFound("current_token");
  return {
    success: 1,
    user_group: { ...groupIdentity(group), api_environment_tag: group.environment },
  };
}

export function deleteUser(store: Store, key: ApiKey, body: JsonObject): DeleteUserResponse {
  const request = validate(deleteUserRequestSchema, body);
  const group = store.getByToken(key.environment, request.current_token);
  if (group === undefined) throw notFound("current_token");
  for (const field of ["user_group_id", "data_source_provided_id"] as const) {
    const given = request[field];
    if (given !== undefined && given !== group.user_group_id) {
      throw new ApiError(409, "id_mismatch", `${field} does not match the user group that holds current_token; nothing was deleted`);
    }
  }
  store.remove(group);
  return { success: 1 };
}

export function runOperation(method: ApiMethod, store: Store, key: ApiKey, body: JsonObject): SuccessBody {
  switch (method) {
    case "GET":
      return getUser(store, key, body);
    case "PUT":
      return updateUser(store, key, body);
    case "POST":
      return rotateToken(store, key, body);
    case "DELETE":
      return deleteUser(store, key, body);
  }
}

/** The id a request is about, for fault rules: body id, or the owner of current_token for POST/DELETE. */
export function subjectId(method: ApiMethod, store: Store, key: ApiKey, body: JsonObject): string | undefined {
  if (method === "POST" || method === "DELETE") {
    const token = body["current_token"];
    return typeof token === "string" ? store.getByToken(key.environment, token)?.user_group_id : undefined;
  }
  const id = body["user_group_id"];
  return typeof id === "string" ? id : undefined;
}
