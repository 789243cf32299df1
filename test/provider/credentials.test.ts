// R6: base URL and API key from stack config, else the environment; profiles.
import { describe, expect, it } from "vitest";
import { MissingCredentialsError, profileEnvSuffix, resolveCredentials } from "../../provider/logic/credentials";

const config = (values: Record<string, unknown>) => (key: string) => values[key];

describe("resolveCredentials", () => {
  it("prefers stack config over the environment", () => {
    const creds = resolveCredentials(
      undefined,
      config({ "user-groups:baseUrl": "http://config", "user-groups:apiKey": "config-key" }),
      { USER_GROUPS_BASE_URL: "http://env", USER_GROUPS_API_KEY: "env-key" },
    );
    expect(creds).toEqual({ baseUrl: "http://config", apiKey: "config-key", allowInsecureHttp: false });
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

  it("says exactly what to set when something is missing", () => {
    expect(() => resolveCredentials(undefined, config({}), {})).toThrow(/user-groups:baseUrl .*USER_GROUPS_BASE_URL/);
    expect(() => resolveCredentials(undefined, config({ "user-groups:baseUrl": "http://x" }), {})).toThrow(
      /pulumi config set --secret user-groups:apiKey <key>.*USER_GROUPS_API_KEY/,
    );
    expect(() => resolveCredentials("testing", config({}), { USER_GROUPS_BASE_URL_TESTING: "http://x" })).toThrow(
      /profile "testing".*--path --secret user-groups:profiles.testing.apiKey.*USER_GROUPS_API_KEY_TESTING/,
    );
  });
});
