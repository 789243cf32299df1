// pulumi-user-groups: the UserGroup resource and the pieces beneath it.
import type * as HttpClientModule from "./client/http-client";

export { ImportNotSupportedError, UserGroup, type UserGroupArgs } from "./resource/user-group";
export type { ClientOptions, Timeouts } from "./client/http-client";
export { UserGroupApiError } from "./client/errors";
export { UserGroupExistsError } from "./logic/operations";
export { MissingCredentialsError } from "./logic/credentials";
export { UserGroupsError } from "./wire/errors";
export type { Environment, JsonValue, Mapping, Properties } from "./wire/schemas";

/**
 * The HTTP client of /api/user. Its module (undici and zod, the bulk of what
 * importing the package would cost) is loaded on first use: a Pulumi program
 * that only declares UserGroups never needs it, and every `pulumi preview` and
 * `up` starts the program afresh (figures: docs/performance.md, fix 5).
 */
export declare const UserGroupsClient: typeof HttpClientModule.UserGroupsClient;
export type UserGroupsClient = HttpClientModule.UserGroupsClient;

const lazy = {
  get UserGroupsClient(): typeof HttpClientModule.UserGroupsClient {
    return (require("./client/http-client") as typeof HttpClientModule).UserGroupsClient;
  },
};
// In this exact form (a getter returning `identifier.identifier`), Node's
// CommonJS export detection still offers the name to ES module importers.
Object.defineProperty(exports, "UserGroupsClient", { enumerable: true, get: function () { return lazy.UserGroupsClient; } });
