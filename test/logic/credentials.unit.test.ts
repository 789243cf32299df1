// R6: base URL and API key from stack config, else the environment; profiles.
import { describe, expect, it } from "vitest";
import { BaseUrlNotAllowedError, MissingCredentialsError, profileEnvSuffix, resolveCredentials } from "../../provider/logic/credentials";

const config = (values: Record<string, unknown>) => (key: string) => values[key];

describe("resolveCredentials", () => {
  it("prefers stack config over the environment, except a base URL the environment does not name or allow (issue #33)", () => {
    const both = config({ "user-groups:baseUrl": "http://config", "user-groups:apiKey": "config-key" });
    expect(resolveCredentials(undefined, both, { USER_GROUPS_API_KEY: "env-key" })).toEqual({ baseUrl: "http://config", apiKey: "config-key", allowInsecureHttp: false });
    expect(resolveCredentials(undefined, both, { USER_GROUPS_BASE_URL: "http://config/", USER_GROUPS_API_KEY: "env-key" })).toEqual({ baseUrl: "http://config", apiKey: "config-key", allowInsecureHttp: false });
    expect(resolveCredentials(undefined, both, { USER_GROUPS_BASE_URL: "http://env", USER_GROUPS_ALLOWED_BASE_URLS: "http://config", USER_GROUPS_API_KEY: "env-key" })).toEqual({
      baseUrl: "http://config",
      apiKey: "config-key",
      allowInsecureHttp: false,
    });
    expect(() => resolveCredentials(undefined, both, { USER_GROUPS_BASE_URL: "http://env", USER_GROUPS_API_KEY: "env-key" })).toThrow(BaseUrlNotAllowedError);
  });

  it("falls back to the environment field by field", () => {
    const creds = resolveCredentials(undefined, config({ "user-groups:baseUrl": "http://config" }), { USER_GROUPS_API_KEY: "env-key" });
    expect(creds).toEqual({ baseUrl: "http://config", apiKey: "env-key", allowInsecureHttp: false });
  });

  it("reads a profile from structured config, given as JSON text or as an object", () => {
    const profiles = { testing: { baseUrl: "http://t", apiKey: "t-key" }, customer: { baseUrl: "http://c", apiKey: "c-key" } };
    expect(resolveCredentials("testing", config({ "user-groups:profiles": JSON.stringify(profiles) }), {})).toEqual({
      baseUrl: "http://t",
      apiKey: "t-key",
      allowInsecureHttp: false,
    });
    expect(resolveCredentials("customer", config({ "user-groups:profiles": profiles }), {})).toEqual({ baseUrl: "http://c", apiKey: "c-key", allowInsecureHttp: false });
  });

  it("reads a profile from USER_GROUPS_*_<PROFILE>, upper-cased", () => {
    const creds = resolveCredentials("eu-testing", config({}), {
      USER_GROUPS_BASE_URL_EU_TESTING: "http://eu",
      USER_GROUPS_API_KEY_EU_TESTING: "eu-key",
      USER_GROUPS_API_KEY: "default-key",
    });
    expect(creds).toEqual({ baseUrl: "http://eu", apiKey: "eu-key", allowInsecureHttp: false });
    expect(profileEnvSuffix("eu-testing")).toBe("EU_TESTING");
  });

  it("does not let a profile fall back to the default key", () => {
    expect(() => resolveCredentials("testing", config({}), { USER_GROUPS_BASE_URL: "http://x", USER_GROUPS_API_KEY: "k" })).toThrow(
      MissingCredentialsError,
    );
  });

  it("says exactly what to set when something is missing, and never to put the key on a command line", () => {
    expect(() => resolveCredentials(undefined, config({}), {})).toThrow(/USER_GROUPS_BASE_URL.*pulumi config set user-groups:baseUrl https:/);
    // A Pulumi program's user: the environment, or stack config through stdin.
    expect(() => resolveCredentials(undefined, config({ "user-groups:baseUrl": "http://x" }), {})).toThrow(
      'No API key for the default profile: set USER_GROUPS_API_KEY, or keep it in stack config through stdin: `printf %s "$KEY" | pulumi config set --secret user-groups:apiKey`.',
    );
    expect(() => resolveCredentials("testing", config({}), { USER_GROUPS_BASE_URL_TESTING: "http://x" })).toThrow(
      /profile "testing": set USER_GROUPS_API_KEY_TESTING, .*printf %s "\$KEY" \| pulumi config set --path --secret user-groups:profiles.testing.apiKey`/,
    );
  });

  it("words the advice for who drives the engine: the CLI's users get environment variables, a library's its options", () => {
    const missingKey = (profile: string | undefined, hints: string) => {
      try {
        resolveCredentials(profile, config({}), { USER_GROUPS_BASE_URL: "http://x", USER_GROUPS_BASE_URL_EU: "http://x", USER_GROUPS_HINTS: hints });
      } catch (error) {
        return (error as Error).message;
      }
      throw new Error("no error");
    };
    // The CLI writes the project file itself: there is nothing to run `pulumi config` in.
    expect(missingKey(undefined, "cli")).toBe("No API key for the default profile: set USER_GROUPS_API_KEY in the environment of user-groups.");
    expect(missingKey("eu", "cli")).toBe('No API key for profile "eu": set USER_GROUPS_API_KEY_EU in the environment of user-groups.');
    expect(missingKey(undefined, "automation")).toMatch(/USER_GROUPS_API_KEY in the environment \(or the `envVars` option\), or pass `config: \{ "user-groups:apiKey": \{ value, secret: true \} \}`/);
    expect(missingKey("eu", "automation")).toBe('No API key for profile "eu": set USER_GROUPS_API_KEY_EU in the environment (or the `envVars` option).');
    for (const hints of ["cli", "automation", ""]) expect(missingKey(undefined, hints)).not.toMatch(/config set [^|]*apiKey ["<$]/);
  });
});
