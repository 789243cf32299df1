/**
 * The `UserGroup` resource a Pulumi program declares, the HTTP client of `/api/user`
 * beneath it, and the errors every part of the package throws.
 * @module pulumi-user-groups
 */
import type * as HttpClientModule from "./client/http-client";

export { ImportNotSupportedError, type InputMembers, ReservedInputError, UserGroup, type UserGroupArgs } from "./resource/user-group";
export { MINIMUM_NODE_MAJOR, NodeTooOldError } from "./node-version";
export type { ClientOptions, Timeouts } from "./client/http-client";
export type { Clock, SleepOptions } from "./clock";
export { type ApiErrorDetails, type FailureKind, UserGroupApiError } from "./client/errors";
export type { Pacer, PacerClock, PacerOptions, PacerState } from "./client/pacer";
export type { RateBudget } from "./client/rate-budget";
export type { RunFence } from "./backends";
export type { AttemptOutcome, RetryPolicy } from "./client/retry-policy";
export { UserGroupExistsError } from "./logic/operations";
export { MissingCredentialsError } from "./logic/credentials";
export { UserGroupsError } from "./wire/errors";
export { ERROR_CODES, type ErrorCode, type ErrorCodeEntry, type ForeignErrorCode, isErrorCode } from "./wire/error-codes";
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
