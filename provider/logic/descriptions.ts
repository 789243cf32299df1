// The words that describe a UserGroup's inputs, outputs and the provider's
// config: one table for every place a user reads them. The provider plugin's
// schema (plugin/schema.ts, and through it the Go, Python, .NET and YAML docs)
// is built from it; the TypeScript JSDoc of UserGroupArgs and UserGroup
// (resource/user-group.ts) must say the same, which test/plugin/descriptions.test.ts
// checks, so the two cannot drift.
import type { UserGroupInputs, UserGroupOutputs } from "./inputs";

export const USER_GROUP_DESCRIPTION =
  "A user group of the embedded-dashboard service (`/api/user`). Its token is always secret.";

/** One line per input, exactly the JSDoc of `UserGroupArgs`. */
export const INPUT_DESCRIPTIONS: { readonly [K in keyof Required<UserGroupInputs>]: string } = {
  name: "Display name of the group (1 to 255 characters, not blank).",
  userGroupId: "Your own id for the group; unique within an environment. A change replaces the group.",
  mapping: "Schema id -> data source (or the id you gave it). Strings only. Not returned by the API: drift cannot be seen.",
  properties: "Any JSON object; available as variables in dashboards and the SQL editor.",
  rotationTrigger: "Any change rotates the token in place, e.g. the current month.",
  adoptExisting: "Adopt a group that already exists with this id instead of failing.",
  profile: "Which API key to use (config user-groups:profiles.<profile> or USER_GROUPS_*_<PROFILE>). A change replaces the group.",
};

type OutputOnly = Exclude<keyof UserGroupOutputs, keyof UserGroupInputs>;

/** One line per output that is not an input, exactly the JSDoc of `UserGroup`'s members. */
export const OUTPUT_DESCRIPTIONS: { readonly [K in OutputOnly]-?: string } = {
  token: "The group's token: always secret. Your app stores it to render the group's embedded dashboard.",
  teamId: "The service's internal id of the group.",
  providedId: "The service's echo of userGroupId.",
  apiEnvironmentTag: "The environment of the API key that manages the group.",
};

/** The provider's config (`user-groups:<key>` in stack config), as CONTRACT R6 names it. */
export const CONFIG_DESCRIPTIONS = {
  baseUrl: "Base URL of the service, e.g. https://dashboards.example.com. Else the environment variable USER_GROUPS_BASE_URL.",
  apiKey: "API key (read-write, or read-only for refresh). Else USER_GROUPS_API_KEY, which is never recorded anywhere; a key set here is stored encrypted in the stack's config and the provider's state.",
  profiles: "Named credentials: profiles.<name>.baseUrl and .apiKey, used by groups whose `profile` is <name>. Else USER_GROUPS_BASE_URL_<NAME> and USER_GROUPS_API_KEY_<NAME>.",
  allowInsecureHttp: "Allow plain http to a host that is not loopback (else USER_GROUPS_ALLOW_INSECURE_HTTP=1). Off by default: the API key would travel unencrypted.",
} as const;

export const PROFILE_DESCRIPTIONS = {
  baseUrl: "Base URL of the service for this profile.",
  apiKey: "API key for this profile.",
} as const;
