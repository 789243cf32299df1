// Seeding: groups put in a store before any request, from code
// (`startFakeServer({ seed })`, `server.seed()`, `namespace.seed()`,
// `POST /__admin/seed`) or from a file (`--seed-file`, `seedFile`). A seeded
// group may fix its token and its team_id, so that a test can name them. Every
// group is checked (the contract's limits, a token shaped as the service issues
// them, unique ids, tokens and team ids) before any is stored: a bad seed
// changes nothing. No message quotes a token.
import { readFileSync, statSync } from "node:fs";
import { z } from "zod";
import { UserGroupsError } from "../provider/wire/errors.js";
import { formatIssues, WORDED_ISSUES } from "../provider/wire/issues.js";
import {
  ISSUED_TOKEN_PATTERN,
  environmentSchema,
  jsonObjectSchema,
  mappingSchema,
  nameSchema,
  teamIdSchema,
  userGroupIdSchema,
  type Environment,
  type Mapping,
  type Properties,
} from "../provider/wire/schemas.js";

/** The most groups one seed may hold. */
export const MAX_SEED_GROUPS = 10_000;
/** The largest seed file read. */
export const MAX_SEED_FILE_BYTES = 16 * 1024 * 1024;

/** @internal */
export const seedGroupSchema = z.strictObject({
  environment: environmentSchema.optional(),
  user_group_id: userGroupIdSchema,
  name: nameSchema,
  mapping: mappingSchema.optional(),
  properties: jsonObjectSchema.nullable().optional(),
  team_id: teamIdSchema.optional(),
  token: z.string().regex(ISSUED_TOKEN_PATTERN, "must be 64 lowercase hex characters").optional(),
});

/** @internal */
export const seedSchema = z.array(seedGroupSchema).max(MAX_SEED_GROUPS, `a seed holds at most ${MAX_SEED_GROUPS} groups`);

/** One group to seed. */
export interface SeedGroup {
  /** Default `Customer`. */
  environment?: Environment | undefined;
  user_group_id: string;
  name: string;
  /** Default `{}`. */
  mapping?: Mapping | undefined;
  /** Default null. */
  properties?: Properties | null | undefined;
  /** A fixed team id (a positive integer, unique); default the next one. */
  team_id?: number | undefined;
  /** A fixed token (64 lowercase hex characters, unique); default a fresh one. */
  token?: string | undefined;
}

/** Checks a seed given in code or over the admin API; the error names the group and field, never a value. */
export function parseSeed(value: unknown, where: string): SeedGroup[] {
  const parsed = seedSchema.safeParse(value, WORDED_ISSUES);
  if (!parsed.success) throw new UserGroupsError("invalid_seed", `${where}: ${formatIssues(parsed.error, "seed").join("; ")}`);
  return parsed.data;
}

/** A seed file: a JSON array of groups, or `{ "groups": [...] }`. */
export function readSeedFile(file: string): SeedGroup[] {
  let text: string;
  try {
    const size = statSync(file).size;
    if (size > MAX_SEED_FILE_BYTES) throw new UserGroupsError("invalid_seed", `seed file ${file}: larger than ${MAX_SEED_FILE_BYTES} bytes`);
    text = readFileSync(file, "utf8");
  } catch (error) {
    if (error instanceof UserGroupsError) throw error;
    throw new UserGroupsError("invalid_seed", `seed file ${file}: cannot read it (${(error as NodeJS.ErrnoException).code ?? "error"})`);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new UserGroupsError("invalid_seed", `seed file ${file}: not JSON`);
  }
  const groups = json !== null && typeof json === "object" && !Array.isArray(json) && "groups" in json ? (json as { groups: unknown }).groups : json;
  return parseSeed(groups, `seed file ${file}`);
}
