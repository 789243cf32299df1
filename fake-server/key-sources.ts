// Where the command's API keys come from: `--api-key` (visible to every local
// user in `ps`: fine for throwaway test keys), a file (`--api-keys-file`, one
// `KEY=ENV[:ro]` per line, readable by its owner only), or the environment
// (USER_GROUPS_FAKE_API_KEYS, the same specs separated by commas or newlines).
// No message here ever quotes any part of a spec: the part a user got wrong may
// be the key itself.
import { statSync } from "node:fs";
import { ENVIRONMENTS, type Environment } from "../provider/wire/schemas.js";
import { UserGroupsError } from "../provider/wire/errors.js";
import type { ApiKeyConfig } from "./auth.js";

export const ENV_API_KEYS = "USER_GROUPS_FAKE_API_KEYS";

/** `KEY=ENV` or `KEY=ENV:ro`; the key is everything before the last `=`. An error is a string that names `where`, never the spec. */
export function parseApiKeySpec(spec: string, where: string): ApiKeyConfig | string {
  const eq = spec.lastIndexOf("=");
  if (eq <= 0) return `${where} must look like KEY=ENV or KEY=ENV:ro`;
  const key = spec.slice(0, eq);
  let env = spec.slice(eq + 1);
  const readOnly = env.endsWith(":ro");
  if (readOnly) env = env.slice(0, -3);
  if (!(ENVIRONMENTS as readonly string[]).includes(env)) {
    return `${where}: the environment after the last "=" must be one of ${ENVIRONMENTS.join(", ")}, optionally with :ro (the value is not shown: it may be a key)`;
  }
  if (!/^[\x21-\x7e]+$/.test(key)) return `${where}: the key must be printable ASCII without spaces`;
  return { key, environment: env as Environment, readOnly };
}

/** Specs separated by newlines (and commas, when `commas`); blank lines and `#` comment lines are skipped. */
export function parseApiKeyList(text: string, source: string, commas: boolean): ApiKeyConfig[] | string {
  const keys: ApiKeyConfig[] = [];
  const lines = text.split(/\r?\n/);
  for (const [index, line] of lines.entries()) {
    const trimmed = line.trim();
    if (trimmed === "" || trimmed.startsWith("#")) continue;
    for (const spec of commas ? trimmed.split(",") : [trimmed]) {
      if (spec.trim() === "") continue;
      const parsed = parseApiKeySpec(spec.trim(), `${source} line ${index + 1}`);
      if (typeof parsed === "string") return parsed;
      keys.push(parsed);
    }
  }
  return keys;
}

/** The keys file's text, once it is known to be a regular file of this user that nobody else may read or write. */
export function readApiKeysFile(file: string, readText: (file: string) => string): string {
  let stats;
  try {
    stats = statSync(file);
  } catch (error) {
    throw new UserGroupsError("invalid_api_keys_file", `--api-keys-file ${file}: cannot read it (${(error as NodeJS.ErrnoException).code ?? "error"})`);
  }
  if (!stats.isFile()) throw new UserGroupsError("invalid_api_keys_file", `--api-keys-file ${file}: not a regular file`);
  if ((stats.mode & 0o077) !== 0) {
    throw new UserGroupsError(
      "invalid_api_keys_file",
      `--api-keys-file ${file}: group or others may access it (mode ${(stats.mode & 0o777).toString(8).padStart(4, "0")}); run chmod 600 ${file}`,
    );
  }
  if (typeof process.getuid === "function" && stats.uid !== process.getuid()) {
    throw new UserGroupsError("invalid_api_keys_file", `--api-keys-file ${file}: owned by another user`);
  }
  return readText(file);
}
