// Where the base URL and API key come from (R6), read at run time inside the
// provider: stack config first, then the environment. Nothing here is ever
// stored in the state or captured in the serialized provider.
import { UserGroupsError } from "../wire/errors";

export const CONFIG_NAMESPACE = "user-groups";
export const ENV_BASE_URL = "USER_GROUPS_BASE_URL";
export const ENV_API_KEY = "USER_GROUPS_API_KEY";
/** Opt-in to plain http to a host that is not loopback (config `user-groups:allowInsecureHttp`). */
export const ENV_ALLOW_INSECURE_HTTP = "USER_GROUPS_ALLOW_INSECURE_HTTP";

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
  const setFlag = profile === undefined ? "" : " --path";
  if (baseUrl === undefined) {
    throw new MissingCredentialsError(
      `No base URL for ${who}: run \`pulumi config set${setFlag} ${configHint.baseUrl} https://...\` or set ${ENV_BASE_URL}${envSuffix}.`,
    );
  }
  if (apiKey === undefined) {
    throw new MissingCredentialsError(
      `No API key for ${who}: run \`pulumi config set${setFlag} --secret ${configHint.apiKey} <key>\` or set ${ENV_API_KEY}${envSuffix}.`,
    );
  }
  return { baseUrl, apiKey, allowInsecureHttp: allowsInsecureHttp(config, env) };
}

/** `user-groups:allowInsecureHttp` true in stack config, or USER_GROUPS_ALLOW_INSECURE_HTTP=1 (or true). */
export function allowsInsecureHttp(config: ConfigLookup, env: NodeJS.ProcessEnv): boolean {
  const configured = config(`${CONFIG_NAMESPACE}:allowInsecureHttp`);
  if (configured === true || configured === "true") return true;
  const fromEnv = env[ENV_ALLOW_INSECURE_HTTP]?.trim().toLowerCase();
  return fromEnv === "1" || fromEnv === "true";
}
