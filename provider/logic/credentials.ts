// Where the base URL and API key come from (R6), read at run time inside the
// provider: stack config first, then the environment. Nothing here is ever
// stored in the state or captured in the serialized provider.
import { UserGroupsError } from "../wire/errors";

export const CONFIG_NAMESPACE = "user-groups";
export const ENV_BASE_URL = "USER_GROUPS_BASE_URL";
export const ENV_API_KEY = "USER_GROUPS_API_KEY";
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

export function resolveCredentials(profile: string | undefined, config: ConfigLookup, env: NodeJS.ProcessEnv): Credentials {
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
  const baseUrl = fromConfig.baseUrl ?? nonEmptyString(env[`${ENV_BASE_URL}${envSuffix}`]);
  const apiKey = fromConfig.apiKey ?? nonEmptyString(env[`${ENV_API_KEY}${envSuffix}`]);
  const who = profile === undefined ? "the default profile" : `profile "${profile}"`;
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
export function recordedConfigHint(operation: "refresh" | "destroy", env: NodeJS.ProcessEnv): string {
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
