// The Pulumi package schema of the `user-groups` plugin: what
// `pulumi package get-schema` prints, what SDK generators and Pulumi YAML read.
// Descriptions come from logic/descriptions.ts, the table the TypeScript JSDoc
// is checked against; the property list from the input schema's keys.
import { CONFIG_DESCRIPTIONS, INPUT_DESCRIPTIONS, OUTPUT_DESCRIPTIONS, PROFILE_DESCRIPTIONS, USER_GROUP_DESCRIPTION } from "../logic/descriptions";
import { INPUT_KEYS } from "../logic/inputs";
import { GO_IMPORT_PATH, PLUGIN_DOWNLOAD_URL, REPOSITORY_URL } from "./home";

export const PACKAGE_NAME = "user-groups";
export const USER_GROUP_TOKEN = `${PACKAGE_NAME}:index:UserGroup`;
export const PROFILE_TOKEN = `${PACKAGE_NAME}:index:Profile`;

type InputKey = (typeof INPUT_KEYS)[number];
type PropertySpec = Record<string, unknown>;

const INPUT_TYPES: { readonly [K in InputKey]: PropertySpec } = {
  name: { type: "string" },
  userGroupId: { type: "string" },
  mapping: { type: "object", additionalProperties: { type: "string" } },
  properties: { $ref: "pulumi.json#/Any" },
  rotationTrigger: { type: "string" },
  adoptExisting: { type: "boolean" },
  profile: { type: "string" },
};

const OUTPUT_TYPES: { readonly [K in keyof typeof OUTPUT_DESCRIPTIONS]: PropertySpec } = {
  token: { type: "string", secret: true },
  teamId: { type: "integer" },
  providedId: { type: "string" },
  apiEnvironmentTag: { type: "string" },
};

function described<K extends string>(types: { readonly [P in K]: PropertySpec }, descriptions: { readonly [P in K]: string }): Record<K, PropertySpec> {
  const out = {} as Record<K, PropertySpec>;
  for (const key of Object.keys(types) as K[]) out[key] = { ...types[key], description: descriptions[key] };
  return out;
}

const CONFIG_TYPES: { readonly [K in keyof typeof CONFIG_DESCRIPTIONS]: PropertySpec } = {
  baseUrl: { type: "string" },
  apiKey: { type: "string", secret: true },
  profiles: { type: "object", additionalProperties: { $ref: `#/types/${PROFILE_TOKEN}` } },
  allowInsecureHttp: { type: "boolean" },
};

/** The README of the SDK packages that carry one (Python's, shown on PyPI). */
const SDK_README = [
  "# pulumi_user_groups",
  "",
  "User groups of an embedded-dashboard service's /api/user interface, as Pulumi resources",
  "(`UserGroup`), for the `user-groups` provider plugin.",
  "",
  `Pulumi installs the plugin by itself on a program's first run, from the releases of ${REPOSITORY_URL}`,
  "(the plugin runs on Node.js >= 22, which must be on PATH).",
  `How to install, configure and import: ${REPOSITORY_URL}/blob/main/docs/plugin.md`,
].join("\n");

/** The package schema, for `version`. */
export function packageSchema(version: string): Record<string, unknown> {
  const inputs = described(INPUT_TYPES, INPUT_DESCRIPTIONS);
  const config = described(CONFIG_TYPES, CONFIG_DESCRIPTIONS);
  return {
    name: PACKAGE_NAME,
    displayName: "User groups",
    version,
    description: "User groups of an embedded-dashboard service's /api/user interface.",
    license: "Apache-2.0",
    homepage: REPOSITORY_URL,
    repository: REPOSITORY_URL,
    pluginDownloadURL: PLUGIN_DOWNLOAD_URL,
    keywords: ["category/utility", "kind/native"],
    publisher: "pulumi-user-groups",
    meta: { moduleFormat: "(.*)" },
    config: { variables: config },
    provider: {
      description: "The user-groups provider. Credentials come from its config or else from the environment (USER_GROUPS_BASE_URL, USER_GROUPS_API_KEY).",
      inputProperties: config,
    },
    types: {
      [PROFILE_TOKEN]: {
        type: "object",
        description: "Credentials of one named profile.",
        properties: described({ baseUrl: { type: "string" }, apiKey: { type: "string", secret: true } }, PROFILE_DESCRIPTIONS),
      },
    },
    resources: {
      [USER_GROUP_TOKEN]: {
        description: USER_GROUP_DESCRIPTION,
        inputProperties: inputs,
        requiredInputs: ["name", "userGroupId"],
        properties: { ...inputs, ...described(OUTPUT_TYPES, OUTPUT_DESCRIPTIONS) },
        required: ["name", "userGroupId", "mapping", "adoptExisting", "token", "teamId", "providedId"],
      },
    },
    language: {
      go: {
        importBasePath: GO_IMPORT_PATH,
        rootPackageName: "usergroups",
        generateResourceContainerTypes: false,
        respectSchemaVersion: true,
      },
      nodejs: { packageName: "pulumi-user-groups-sdk" },
      python: { packageName: "pulumi_user_groups", respectSchemaVersion: true, pyproject: { enabled: true }, readme: SDK_README },
      csharp: { rootNamespace: "PulumiUserGroups", packageReferences: { Pulumi: "3.*" }, respectSchemaVersion: true },
    },
  };
}
