// The `/api/user` wire format as settled by shared/spec/CONTRACT.md (W1–W11).
// The fake server validates requests with these schemas and the HTTP client
// validates responses with them, so the two cannot drift apart.
//
// The types are written out rather than inferred so that the package's
// declarations never mention zod: a program compiled without skipLibCheck would
// type-check zod's own .d.ts files, which fail under `moduleResolution: node`.
// test/package/declared-types.test.ts holds each one equal to its schema. The
// schemas themselves are @internal: left out of dist/*.d.ts (stripInternal).
import { z } from "zod";
import { type ApiMethod, OPERATION_TITLES } from "./operations.js";

export const API_PATH = "/api/user";

/**
 * A run-time check of outside data: what of a zod schema the package's API
 * exposes (zod stays an implementation detail of its declarations).
 */
export interface Validator<T> {
  /** The value as checked, or a thrown error listing every problem. */
  parse(value: unknown): T;
  safeParse(value: unknown): { success: true; data: T } | { success: false; error: Error };
}

export const ENVIRONMENTS = ["Customer", "Testing"] as const;
/** @internal */
export const environmentSchema = z.enum(ENVIRONMENTS);
/** The environment an API key belongs to; ids are unique within one. */
export type Environment = "Customer" | "Testing";

export const MAX_NAME_CHARS = 255;
export const MAX_ID_CHARS = 255;
export const MAX_MAPPING_KEYS = 256;
export const MAX_BODY_BYTES = 1024 * 1024;

/** Length in Unicode code points: what a person counts as characters. */
export function charCount(value: string): number {
  let count = 0;
  for (const _ of value) count += 1;
  return count;
}

/**
 * Whether `value` has `min` to `max` code points. A string has at least half as
 * many code points as UTF-16 units and at most as many, so most strings are
 * settled by their length without counting.
 */
export function hasCharCountBetween(value: string, min: number, max: number): boolean {
  const fewest = Math.ceil(value.length / 2); // every code point takes one or two units
  if (fewest >= min && value.length <= max) return true;
  if (value.length < min || fewest > max) return false;
  const count = charCount(value);
  return count >= min && count <= max;
}

/** @internal */
export const nameSchema = z
  .string()
  .refine((s) => hasCharCountBetween(s, 1, MAX_NAME_CHARS), {
    message: `must be 1 to ${MAX_NAME_CHARS} characters`,
  })
  .refine((s) => s.trim().length > 0, { message: "must not be blank" });

/** @internal */
export const userGroupIdSchema = z.string().refine((s) => hasCharCountBetween(s, 1, MAX_ID_CHARS), {
  message: `must be 1 to ${MAX_ID_CHARS} characters`,
});

/** @internal */
export const mappingSchema = z
  .record(z.string(), z.string())
  .refine((m) => Object.keys(m).length <= MAX_MAPPING_KEYS, {
    message: `must have at most ${MAX_MAPPING_KEYS} keys`,
  });
/** A group's mapping: string keys to string values (at most 256 keys). */
export type Mapping = Record<string, string>;

/** A JSON value (what `properties` may hold below its top level). */
export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };
/** @internal */
export const jsonObjectSchema: z.ZodType<{ [key: string]: JsonValue }> = z.record(z.string(), z.json());
/** A group's properties: a JSON object. */
export type Properties = { [key: string]: JsonValue };

/** @internal */
export const tokenSchema = z.string();

/** Tokens the service issues: 64 lowercase hex characters (W10). */
export const ISSUED_TOKEN_PATTERN = /^[0-9a-f]{64}$/;

// ---- requests -------------------------------------------------------------
// z.object strips unknown keys: the service ignores unknown fields (W2).

/** @internal */
export const getUserRequestSchema = z.object({
  name: nameSchema,
  user_group_id: userGroupIdSchema,
  mapping: mappingSchema.optional(),
  properties: jsonObjectSchema.nullable().optional(),
});
export interface GetUserRequest {
  name: string;
  user_group_id: string;
  mapping?: Mapping | undefined;
  properties?: Properties | null | undefined;
}

/** @internal */
export const updateUserRequestSchema = z.object({
  user_group_id: userGroupIdSchema,
  name: nameSchema.optional(),
  mapping: mappingSchema.optional(),
  properties: jsonObjectSchema.nullable().optional(),
});
export interface UpdateUserRequest {
  user_group_id: string;
  name?: string | undefined;
  mapping?: Mapping | undefined;
  properties?: Properties | null | undefined;
}

/** @internal */
export const rotateTokenRequestSchema = z.object({
  current_token: tokenSchema,
});
export interface RotateTokenRequest {
  current_token: string;
}

/** @internal */
export const deleteUserRequestSchema = z.object({
  current_token: tokenSchema,
  user_group_id: userGroupIdSchema.optional(),
  data_source_provided_id: userGroupIdSchema.optional(),
});
export interface DeleteUserRequest {
  current_token: string;
  user_group_id?: string | undefined;
  data_source_provided_id?: string | undefined;
}

// ---- responses ------------------------------------------------------------

/** @internal */
export const teamIdSchema = z.number().int().positive();

/** @internal */
export const userGroupViewSchema = z.object({
  team_id: teamIdSchema,
  token: tokenSchema,
  name: z.string(),
  provided_id: z.string(),
  properties: jsonObjectSchema.nullable().optional(),
});
export interface UserGroupView {
  team_id: number;
  token: string;
  name: string;
  provided_id: string;
  properties?: Properties | null | undefined;
}

/** @internal */
export const getUserResponseSchema = z.object({
  success: z.literal(1),
  new_user_group: z.boolean(),
  user_group: userGroupViewSchema,
});
export interface UserGroupViewWithEnvironment extends UserGroupView {
  api_environment_tag: Environment;
}
export interface GetUserResponse {
  success: 1;
  new_user_group: boolean;
  user_group: UserGroupView;
}

/** @internal */
export const updateUserResponseSchema = z.object({
  success: z.literal(1),
  user_group: userGroupViewSchema.extend({ api_environment_tag: environmentSchema }),
});
export interface UpdateUserResponse {
  success: 1;
  user_group: UserGroupViewWithEnvironment;
}

/** @internal */
export const rotateTokenResponseSchema = z.object({
  success: z.literal(1),
  user_group: z.object({
    team_id: teamIdSchema,
    token: tokenSchema,
    name: z.string(),
    provided_id: z.string(),
    api_environment_tag: environmentSchema,
  }),
});
export interface RotateTokenResponse {
  success: 1;
  user_group: { team_id: number; token: string; name: string; provided_id: string; api_environment_tag: Environment };
}

/** @internal */
export const deleteUserResponseSchema = z.object({ success: z.literal(1) });
export interface DeleteUserResponse {
  success: 1;
}

// ---- errors (W3) ----------------------------------------------------------

/** The contract's error codes (W3); their meanings are in the catalogue, error-codes.ts. */
export const SERVICE_ERROR_CODES = [
  "unauthorized", // 401: missing, malformed or unknown API key
  "forbidden", // 403: read-only key asked to write
  "unsupported_media_type", // 415
  "invalid_json", // 400: body is not JSON
  "invalid_body", // 400: body is JSON but not one object (or empty)
  "invalid_name", // 400: field errors name the field
  "invalid_user_group_id",
  "invalid_mapping",
  "invalid_properties",
  "invalid_current_token",
  "invalid_data_source_provided_id",
  "bad_request", // 400 (or 408/431): the HTTP request itself is malformed, before any body is read
  "payload_too_large", // 413
  "group_too_large", // 413: the fake server's maxGroupBytes
  "storage_full", // 507: the fake server's maxGroups or maxTotalBytes
  "method_not_allowed", // 405
  "not_found", // 404: unknown path
  "user_group_not_found", // 404: unknown id or token in the key's environment
  "id_mismatch", // 409: DELETE ids do not match the group
  "rate_limited", // 429
  "injected_fault", // any status, from a fake-server fault rule
  "internal_error", // 500
] as const;
/** @internal */
export const errorCodeSchema = z.enum(SERVICE_ERROR_CODES);
export type ServiceErrorCode = (typeof SERVICE_ERROR_CODES)[number];

/** @internal The failure body. `code` stays a plain string: a real service may send codes we do not know. */
export const errorResponseSchema = z.object({
  success: z.literal(0),
  error: z.object({ code: z.string(), message: z.string() }),
});
export interface ErrorResponse {
  success: 0;
  error: { code: string; message: string };
}

/** Maps a request field to the error code that names it (W4). */
export function fieldErrorCode(field: string): ServiceErrorCode {
  switch (field) {
    case "name":
      return "invalid_name";
    case "user_group_id":
      return "invalid_user_group_id";
    case "mapping":
      return "invalid_mapping";
    case "properties":
      return "invalid_properties";
    case "current_token":
      return "invalid_current_token";
    case "data_source_provided_id":
      return "invalid_data_source_provided_id";
    default:
      return "invalid_body";
  }
}

/** @internal The four operations of `/api/user`, by HTTP method. */
export const OPERATIONS = {
  GET: { title: OPERATION_TITLES.GET, request: getUserRequestSchema, response: getUserResponseSchema },
  PUT: { title: OPERATION_TITLES.PUT, request: updateUserRequestSchema, response: updateUserResponseSchema },
  POST: { title: OPERATION_TITLES.POST, request: rotateTokenRequestSchema, response: rotateTokenResponseSchema },
  DELETE: { title: OPERATION_TITLES.DELETE, request: deleteUserRequestSchema, response: deleteUserResponseSchema },
} as const;
export type { ApiMethod };
export const API_METHODS = Object.keys(OPERATIONS) as ApiMethod[];
