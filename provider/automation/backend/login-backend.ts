// The backend `pulumi login` chose, and a notice when a run of ours keeps its
// stacks elsewhere. A user who logged in to a backend and then runs the
// `user-groups` command (or a UserGroupFleet) without PULUMI_BACKEND_URL gets
// a file backend in `.user-groups/state`: their `pulumi stack ls` would not
// list those stacks. Pulumi's choice, as its CLI makes it: PULUMI_BACKEND_URL,
// else the `current` of `credentials.json` in Pulumi's home (PULUMI_HOME, else
// `.pulumi` in the user's home directory).
import os from "node:os";
import path from "node:path";
import { withoutCredentials } from "../../backends";
import { readRegularFileIfPresent } from "./regular-file";

/** credentials.json is small; anything larger is not Pulumi's. */
const MAX_CREDENTIALS_BYTES = 1024 * 1024;

/** Pulumi's home: PULUMI_HOME, else `.pulumi` in the home directory of the user's passwd entry (as Pulumi finds it, whatever HOME says). */
export function pulumiHome(env: NodeJS.ProcessEnv): string {
  const fromEnv = env.PULUMI_HOME;
  if (fromEnv !== undefined && fromEnv !== "") return fromEnv;
  let home: string;
  try {
    home = os.userInfo().homedir;
  } catch {
    home = os.homedir();
  }
  return path.join(home, ".pulumi");
}

/** The backend `pulumi login` last chose (credentials.json's `current`), or undefined (never logged in, or unreadable). */
export function loggedInBackend(env: NodeJS.ProcessEnv): string | undefined {
  let text: Buffer | undefined;
  try {
    text = readRegularFileIfPresent(path.join(pulumiHome(env), "credentials.json"), MAX_CREDENTIALS_BYTES, "Pulumi's credentials.json");
  } catch {
    return undefined; // not a regular file, too large: not Pulumi's, and only a notice depends on it
  }
  if (text === undefined) return undefined;
  try {
    const current = (JSON.parse(text.toString("utf8")) as { current?: unknown }).current;
    return typeof current === "string" && current.length > 0 && current.length <= 4096 ? current : undefined;
  } catch {
    return undefined;
  }
}

/** A backend URL as compared: `~` of a file URL expanded, no trailing slash. */
function comparable(url: string): string {
  const expanded = url.replace(/^file:\/\/~(?=\/|$)/, `file://${os.homedir()}`);
  return expanded.replace(/\/+$/, "");
}

/** Who is told how to choose the backend: the `user-groups` command's user, or a program creating a UserGroupFleet. */
export type BackendAudience = "cli" | "fleet";

/**
 * One line when a run keeps its stacks in another backend than the one the
 * `pulumi` CLI would use in the same environment (PULUMI_BACKEND_URL, else
 * `pulumi login`'s), with how to use that one; undefined when they agree or
 * Pulumi has no choice of its own. URLs are shown without credentials.
 */
export function backendNotice(used: string, env: NodeJS.ProcessEnv, audience: BackendAudience): string | undefined {
  const fromEnv = env.PULUMI_BACKEND_URL !== undefined && env.PULUMI_BACKEND_URL !== "" ? env.PULUMI_BACKEND_URL : undefined;
  const pulumis = fromEnv ?? loggedInBackend(env);
  if (pulumis === undefined || comparable(pulumis) === comparable(used)) return undefined;
  const whose = fromEnv !== undefined ? "PULUMI_BACKEND_URL names" : "`pulumi login` chose";
  const how =
    audience === "cli"
      ? `to keep them there, set PULUMI_BACKEND_URL=${withoutCredentials(pulumis)} (or pass --backend-url)`
      : `to keep them there, pass \`backendUrl: "${withoutCredentials(pulumis)}"\` (or set PULUMI_BACKEND_URL)`;
  return (
    `the stacks of this run are kept in ${withoutCredentials(used)}, not in the backend ${whose} (${withoutCredentials(pulumis)}), ` +
    `so \`pulumi stack ls\` does not list them; ${how}.`
  );
}
