// Where the base URL and API key come from (R6), read at run time inside the
// provider: stack config first, then the environment. Nothing here is ever
// stored in the state or captured in the serialized provider.
import { UserGroupsError } from "../wire/errors";

export const CONFIG_NAMESPACE = "user-groups";
export const ENV_BASE_URL = "USER_GROUPS_BASE_URL";
export const ENV_API_KEY = "USER_GROUPS_API_KEY";
/**
 * Base URLs that stack config may name although the environment names another (or, for the
 * `user-groups` command, none): comma-separated, compared by origin and path. Set by the job,
 * never by a file a repository holds.
 */
export const ENV_ALLOWED_BASE_URLS = "USER_GROUPS_ALLOWED_BASE_URLS";
/** Opt-in to plain http to a host that is not loopback (config `user-groups:allowInsecureHttp`). */
export const ENV_ALLOW_INSECURE_HTTP = "USER_GROUPS_ALLOW_INSECURE_HTTP";

/**
 * Who drives the engine, set by the automation layer in the engine's
 * environment: "cli" (the `user-groups` command, whose users have no Pulumi
 * project to run `pulumi config` in) or "automation" (a program calling the
 * library). Unset: a Pulumi program run by `pulumi up`.
 */
export const ENV_HINTS = "USER_GROUPS_HINTS";

/** Reads one stack config value by full key ("user-groups:apiKey"). Structured values may come as JSON text. */
export type ConfigLookup = (key: string) => unknown;

export interface Credentials {
  readonly baseUrl: string;
  readonly apiKey: string;
  /** The user opted in to plain http off loopback (see client/transport.ts). */
  readonly allowInsecureHttp: boolean;
}

export class MissingCredentialsError extends UserGroupsError {
  constructor(message: string) {
    super("missing_credentials", message);
    this.name = "MissingCredentialsError";
  }
}

/**
 * Stack config names a base URL that the environment does not: refused, because stack config
 * may come from a file a pull request changed (`Pulumi.<stack>.yaml`), and the API key would go
 * wherever it says. The job allows such a URL in USER_GROUPS_ALLOWED_BASE_URLS.
 */
export class BaseUrlNotAllowedError extends UserGroupsError {
  constructor(message: string) {
    super("base_url_not_allowed", message);
    this.name = "BaseUrlNotAllowedError";
  }
}

/** The start of a BaseUrlNotAllowedError's message, as it reaches the engine's diagnostics. */
export const BASE_URL_NOT_ALLOWED = /The base URL in stack config for (?:the default profile|profile "[^"]*") is not the environment's/;

/** A URL's origin and path without a trailing slash, for comparing; the text itself when it does not parse. */
function comparableUrl(url: string): string {
  try {
    const parsed = new URL(url);
    return `${parsed.origin}${parsed.pathname.replace(/\/+$/, "")}`;
  } catch {
    return url;
  }
}

/** Whether the job allows stack config's base URL (ENV_ALLOWED_BASE_URLS). */
function allowedByJob(url: string, env: NodeJS.ProcessEnv): boolean {
  const allowed = (env[ENV_ALLOWED_BASE_URLS] ?? "").split(",").map((entry) => entry.trim()).filter((entry) => entry.length > 0);
  return allowed.some((entry) => comparableUrl(entry) === comparableUrl(url));
}

/**
 * Stack config's base URL is used only where the job agrees: it equals the environment's, or the
 * job lists it in USER_GROUPS_ALLOWED_BASE_URLS. With no URL in the environment, a Pulumi program's
 * own config is the user's (allowed); the `user-groups` command's is a committed file's (not).
 */
function assertBaseUrlAllowed(
  configured: string,
  fromEnv: string | undefined,
  who: string,
  configKey: string,
  envVar: string,
  env: NodeJS.ProcessEnv,
  recorded: RecordedConfigRun | undefined,
): void {
  if (allowedByJob(configured, env)) return;
  if (fromEnv !== undefined ? comparableUrl(fromEnv) === comparableUrl(configured) : env[ENV_HINTS] !== "cli") return;
  const against = fromEnv !== undefined ? `${envVar} names another` : `${envVar} is not set`;
  const named = `${configKey} names ${JSON.stringify(comparableUrl(configured).slice(0, 200))}; ${against}`;
  if (recorded !== undefined && env[ENV_HINTS] === undefined) {
    // A plain refresh or destroy: the config is the one the last up recorded, which `pulumi config rm` does not change.
    throw new BaseUrlNotAllowedError(
      `The base URL in stack config for ${who} is not the environment's (${named}), so the API key was not sent. Nothing was sent. ` +
        `A plain \`pulumi ${recorded}\` runs with the configuration the last \`pulumi up\` recorded in the state, not the stack's current one: ` +
        `remove ${configKey} from the stack's config if it is still there (\`pulumi config rm ${configKey}\`), then run \`pulumi ${recorded} --run-program\` ` +
        `(it runs the program, which records the current configuration); or, if the job means that URL, list it in ${ENV_ALLOWED_BASE_URLS}.`,
    );
  }
  throw new BaseUrlNotAllowedError(
    `The base URL in stack config for ${who} is not the environment's (${named}), ` +
      `so the API key was not sent: stack config may come from a committed file. Nothing was sent. Remove ${configKey} from the stack's config, ` +
      `or, if the job means it, list the URL in ${ENV_ALLOWED_BASE_URLS}.`,
  );
}

/** A refresh or destroy run without the program: Pulumi gives the provider the config the last up recorded in the state. */
export type RecordedConfigRun = "refresh" | "destroy";

/** The start of a MissingCredentialsError's message, as it reaches the engine's diagnostics. */
export const MISSING_CREDENTIALS = /^No (?:base URL|API key) for (?:the default profile|profile "[^"]*"): /;

/** The env var suffix for a profile: upper-cased, anything else than A-Z0-9 becomes "_". */
export function profileEnvSuffix(profile: string): string {
  return profile.toUpperCase().replace(/[^A-Z0-9]/g, "_");
}

function asObject(value: unknown): Record<string, unknown> | undefined {
  if (typeof value === "string") {
    try {
      value = JSON.parse(value) as unknown;
    } catch {
      return undefined;
    }
  }
  return value !== null && typeof value === "object" && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
}

function nonEmptyString(value: unknown): string | undefined {
  return typeof value === "string" && value.length > 0 ? value : undefined;
}

/** `recorded`: the run may have the config the last up recorded rather than the current one (a refresh or destroy); the refusals say so. */
export function resolveCredentials(profile: string | undefined, config: ConfigLookup, env: NodeJS.ProcessEnv, recorded?: RecordedConfigRun): Credentials {
  let fromConfig: { baseUrl?: string; apiKey?: string };
  let envSuffix = "";
  let configHint: { baseUrl: string; apiKey: string };
  if (profile === undefined) {
    fromConfig = {
      baseUrl: nonEmptyString(config(`${CONFIG_NAMESPACE}:baseUrl`)),
      apiKey: nonEmptyString(config(`${CONFIG_NAMESPACE}:apiKey`)),
    };
    configHint = { baseUrl: `${CONFIG_NAMESPACE}:baseUrl`, apiKey: `${CONFIG_NAMESPACE}:apiKey` };
  } else {
    const profiles = asObject(config(`${CONFIG_NAMESPACE}:profiles`));
    const entry = asObject(profiles?.[profile]);
    fromConfig = { baseUrl: nonEmptyString(entry?.baseUrl), apiKey: nonEmptyString(entry?.apiKey) };
    envSuffix = `_${profileEnvSuffix(profile)}`;
    configHint = {
      baseUrl: `${CONFIG_NAMESPACE}:profiles.${profile}.baseUrl`,
      apiKey: `${CONFIG_NAMESPACE}:profiles.${profile}.apiKey`,
    };
  }
  const envBaseUrl = nonEmptyString(env[`${ENV_BASE_URL}${envSuffix}`]);
  const who = profile === undefined ? "the default profile" : `profile "${profile}"`;
  if (fromConfig.baseUrl !== undefined) assertBaseUrlAllowed(fromConfig.baseUrl, envBaseUrl, who, configHint.baseUrl, `${ENV_BASE_URL}${envSuffix}`, env, recorded);
  const baseUrl = fromConfig.baseUrl ?? envBaseUrl;
  const apiKey = fromConfig.apiKey ?? nonEmptyString(env[`${ENV_API_KEY}${envSuffix}`]);
  const hints = credentialHints(env[ENV_HINTS], configHint, envSuffix, profile !== undefined);
  if (baseUrl === undefined) throw new MissingCredentialsError(`No base URL for ${who}: ${hints.baseUrl}.`);
  if (apiKey === undefined) throw new MissingCredentialsError(`No API key for ${who}: ${hints.apiKey}.`);
  return { baseUrl, apiKey, allowInsecureHttp: allowsInsecureHttp(config, env) };
}

/**
 * What to do about a missing base URL or key, for the caller at hand. A key is
 * never put on a command line (CONTRACT R6): the environment, or stack config
 * through stdin (`printf %s "$KEY" | pulumi config set --secret ...`).
 */
function credentialHints(caller: string | undefined, configKeys: { baseUrl: string; apiKey: string }, envSuffix: string, structured: boolean): { baseUrl: string; apiKey: string } {
  const urlVar = `${ENV_BASE_URL}${envSuffix}`;
  const keyVar = `${ENV_API_KEY}${envSuffix}`;
  if (caller === "cli") {
    return { baseUrl: `set ${urlVar} in the environment of user-groups`, apiKey: `set ${keyVar} in the environment of user-groups` };
  }
  if (caller === "automation") {
    // The `config` option sets plain keys (no --path): a profile's structured key is not among them.
    if (structured) return { baseUrl: `set ${urlVar} in the environment (or the \`envVars\` option)`, apiKey: `set ${keyVar} in the environment (or the \`envVars\` option)` };
    return {
      baseUrl: `set ${urlVar} in the environment (or the \`envVars\` option), or pass \`config: { "${configKeys.baseUrl}": { value } }\``,
      apiKey: `set ${keyVar} in the environment (or the \`envVars\` option), or pass \`config: { "${configKeys.apiKey}": { value, secret: true } }\``,
    };
  }
  const path = structured ? " --path" : "";
  return {
    baseUrl: `set ${urlVar}, or run \`pulumi config set${path} ${configKeys.baseUrl} https://...\``,
    apiKey: `set ${keyVar}, or keep it in stack config through stdin: \`printf %s "$KEY" | pulumi config set${path} --secret ${configKeys.apiKey}\``,
  };
}

/**
 * Why a refresh or destroy may miss config the user has just set, and the fix.
 * Pulumi runs them with the provider configuration the last `pulumi up`
 * recorded in the state (its default provider's inputs), not the stack's
 * current config, unless the program runs too (`--run-program`), which records
 * the current one. Only for a plain Pulumi run: the `user-groups` command and
 * the library pass credentials in the environment of every run.
 */
export function recordedConfigHint(operation: RecordedConfigRun, env: NodeJS.ProcessEnv): string {
  if (env[ENV_HINTS] !== undefined) return "";
  return (
    ` If you set it with \`pulumi config set\` after the last \`pulumi up\`: \`pulumi ${operation}\` runs with the configuration that up recorded in the state, ` +
    `not the stack's current one; run \`pulumi ${operation} --run-program\` (it runs the program, which records the current configuration) or \`pulumi up\` once.`
  );
}

/** `user-groups:allowInsecureHttp` true in stack config, or USER_GROUPS_ALLOW_INSECURE_HTTP=1 (or true). */
export function allowsInsecureHttp(config: ConfigLookup, env: NodeJS.ProcessEnv): boolean {
  const configured = config(`${CONFIG_NAMESPACE}:allowInsecureHttp`);
  if (configured === true || configured === "true") return true;
  const fromEnv = env[ENV_ALLOW_INSECURE_HTTP]?.trim().toLowerCase();
  return fromEnv === "1" || fromEnv === "true";
}
