// pulumi-user-groups: the UserGroup resource and the pieces beneath it.
export { UserGroup, type UserGroupArgs } from "./resource/user-group";
export { UserGroupsClient, type ClientOptions, type Timeouts } from "./client/http-client";
export { UserGroupApiError } from "./client/errors";
export { UserGroupExistsError } from "./logic/operations";
export { MissingCredentialsError } from "./logic/credentials";
export type { Environment, JsonValue, Mapping, Properties } from "./wire/schemas";
