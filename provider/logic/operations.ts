// The lifecycle of one group over the API: create (R3/R4), read (R5), update
// and rotate (R2/R9), delete (R7). Plain functions over a `UserGroupsApi`, so
// tests drive them with a real client against the fake server.
import { isDeepStrictEqual } from "node:util";
import { UserGroupApiError } from "../client/errors";
import type { GetOrCreateResult } from "../client/http-client";
import { type Clock, systemClock } from "../clock";
import type {
  DeleteUserRequest,
  Environment,
  GetUserRequest,
  Properties,
  RotateTokenResponse,
  UpdateUserRequest,
  UpdateUserResponse,
  UserGroupView,
} from "../wire/schemas";
import { fieldsToUpdate } from "./diff";
import type { CheckedInputs, UserGroupOutputs } from "./inputs";
import { UserGroupsError } from "../wire/errors";

/** The part of the HTTP client the lifecycle needs. */
export interface UserGroupsApi {
  readonly baseUrl: string;
  readonly environment: Environment | undefined;
  /** Attempts the client makes at one request, the first included; rotation gives itself as many rounds. */
  readonly maxAttempts: number;
  /** True once the service refused a PUT as forbidden: a read-only key (W1), so reads use GET (R5). */
  readonly keyIsReadOnly?: boolean;
  /** The client's clock (provider/clock.ts): rotation's pauses between rounds wait on it. Default systemClock. */
  readonly clock?: Clock;
  getOrCreate(request: GetUserRequest): Promise<GetOrCreateResult>;
  update(request: UpdateUserRequest): Promise<UpdateUserResponse>;
  rotateToken(currentToken: string, userGroupId?: string): Promise<RotateTokenResponse>;
  delete(request: DeleteUserRequest): Promise<void>;
}

export class UserGroupExistsError extends UserGroupsError {
  constructor(
    readonly userGroupId: string,
    readonly environment: Environment | undefined,
  ) {
    super(
      "user_group_exists",
      `A user group with userGroupId "${userGroupId}" already exists in the ${
        environment ?? "API key's"
      } environment, and this stack did not create it. Nothing was changed on the server. ` +
        `To bring it under management, set \`adoptExisting: true\` on this UserGroup (its name, mapping and ` +
        `properties will then be set to the declared values); or choose another userGroupId.`,
    );
    this.name = "UserGroupExistsError";
  }
}

function isApiError(error: unknown): error is UserGroupApiError {
  return error instanceof UserGroupApiError;
}

function isForbidden(error: unknown): boolean {
  return isApiError(error) && error.isForbidden;
}

function wireProperties(inputs: CheckedInputs): Properties | null {
  return inputs.properties ?? null;
}

function outputsFrom(inputs: CheckedInputs, group: UserGroupView, environment: Environment | undefined): UserGroupOutputs {
  const outputs: UserGroupOutputs = {
    ...inputs,
    token: group.token,
    teamId: group.team_id,
    providedId: group.provided_id,
  };
  if (environment !== undefined) outputs.apiEnvironmentTag = environment;
  return outputs;
}

/**
 * The PUT that learns a client's environment, while it runs. The engine runs
 * several creates at once (8 by default); without this each of the first ones
 * would send its own PUT before any answer had taught the client (measured:
 * 3-4 extra requests per `up`, bench/engine-vs-floor.ts).
 */
const environmentLookups = new WeakMap<UserGroupsApi, Promise<Environment | undefined>>();

/** The key's environment: known from an earlier answer, or read with a PUT that changes nothing (W6). */
async function environmentOf(api: UserGroupsApi, userGroupId: string): Promise<Environment | undefined> {
  if (api.environment !== undefined) return api.environment;
  let lookup = environmentLookups.get(api);
  if (lookup === undefined) {
    lookup = api.update({ user_group_id: userGroupId }).then(
      (response) => response.user_group.api_environment_tag,
      () => undefined, // e.g. a read-only key: the environment is only a nicety here
    );
    environmentLookups.set(api, lookup);
    // Once settled the client knows its environment (or the lookup failed and a later create may try again).
    void lookup.finally(() => environmentLookups.delete(api));
  }
  return lookup;
}

/** Did the group the service holds come from our own request (its answer lost), not from someone else? */
function matchesRequest(group: UserGroupView, inputs: CheckedInputs): boolean {
  return group.name === inputs.name && isDeepStrictEqual(group.properties ?? null, wireProperties(inputs));
}

/**
 * R3: get-or-create. An existing group is refused unless adoptExisting, in
 * which case it is adopted and brought to the declared fields.
 */
export async function createUserGroup(api: UserGroupsApi, inputs: CheckedInputs): Promise<UserGroupOutputs> {
  const request: GetUserRequest = {
    name: inputs.name,
    user_group_id: inputs.userGroupId,
    mapping: inputs.mapping,
    ...(inputs.properties !== undefined ? { properties: inputs.properties } : {}),
  };
  const { response, earlierAttemptMayHaveApplied } = await api.getOrCreate(request);
  const createdByUs = response.new_user_group || (earlierAttemptMayHaveApplied && matchesRequest(response.user_group, inputs));
  if (createdByUs) {
    if (response.new_user_group) {
      return outputsFrom(inputs, response.user_group, await environmentOf(api, inputs.userGroupId));
    }
    // Our first attempt created it but its answer was lost; the mapping is not
    // echoed, so set it again to be sure.
    const converged = await api.update({ user_group_id: inputs.userGroupId, mapping: inputs.mapping });
    return outputsFrom(inputs, converged.user_group, converged.user_group.api_environment_tag);
  }
  if (!inputs.adoptExisting) {
    throw new UserGroupExistsError(inputs.userGroupId, await environmentOf(api, inputs.userGroupId));
  }
  const adopted = await api.update({
    user_group_id: inputs.userGroupId,
    name: inputs.name,
    mapping: inputs.mapping,
    properties: wireProperties(inputs),
  });
  return outputsFrom(inputs, adopted.user_group, adopted.user_group.api_environment_tag);
}

export type ReadOutcome = { found: false } | { found: true; outputs: UserGroupOutputs; inputs: CheckedInputs };

/**
 * R5: the group the service holds now, or undefined when it is gone. Never
 * creates or deletes anything, not even for a moment: a read-write key reads
 * with a PUT carrying only user_group_id (W6: nothing changes; 404 is gone);
 * a read-only key cannot PUT (403, after which the client knows) and reads
 * with GET, which W1 forbids it to turn into a create (403 is gone).
 */
export async function readCurrentGroup(api: UserGroupsApi, name: string, userGroupId: string): Promise<UserGroupView | undefined> {
  if (!api.keyIsReadOnly) {
    try {
      return (await api.update({ user_group_id: userGroupId })).user_group;
    } catch (error) {
      if (isApiError(error) && error.isNotFound) return undefined;
      if (!isForbidden(error)) throw error;
    }
  }
  let response: GetOrCreateResult["response"];
  try {
    ({ response } = await api.getOrCreate({ name, user_group_id: userGroupId }));
  } catch (error) {
    if (isForbidden(error)) return undefined;
    throw error;
  }
  if (response.new_user_group) {
    // Only a service that breaks W1 (a key refusing PUT yet creating on GET) gets
    // here; put things back as they were rather than leave a group nobody declared.
    await api.delete({ current_token: response.user_group.token, user_group_id: userGroupId });
    return undefined;
  }
  return response.user_group;
}

/** R5: refresh. Reports the server's name, properties and current token; a vanished group is gone. */
export async function readUserGroup(api: UserGroupsApi, olds: UserGroupOutputs): Promise<ReadOutcome> {
  const group = await readCurrentGroup(api, olds.name, olds.userGroupId);
  if (group === undefined) return { found: false };
  const inputs: CheckedInputs = {
    name: group.name,
    userGroupId: olds.userGroupId,
    mapping: olds.mapping ?? {}, // not returned by the API: drift cannot be seen
    adoptExisting: olds.adoptExisting ?? false,
  };
  if (group.properties !== undefined && group.properties !== null) inputs.properties = group.properties;
  if (olds.rotationTrigger !== undefined) inputs.rotationTrigger = olds.rotationTrigger;
  if (olds.profile !== undefined) inputs.profile = olds.profile;
  return { found: true, inputs, outputs: outputsFrom(inputs, group, olds.apiEnvironmentTag ?? api.environment) };
}

export interface RotationOptions {
  /** Rounds of POST-then-read-back before giving up; by default the client's `maxAttempts`. */
  readonly maxRounds?: number;
  /** Wait before round `round` (2, 3, ...): a connection that just failed is often followed by more. */
  readonly pauseBeforeRound?: (round: number) => Promise<void>;
}

/** Capped exponential backoff with full jitter between rotation rounds: 0-200 ms, 0-400 ms, ... up to 0-3.2 s. */
export function rotationPauseMs(round: number, random: () => number): number {
  const ceiling = Math.min(3_200, 100 * 2 ** (round - 1));
  return Math.floor(random() * ceiling);
}

/**
 * R9: rotates the token. A POST is never repeated blindly: when its answer is
 * lost (or the token is stale), the current token is read back; a token other
 * than the one we sent means the rotation happened.
 */
export async function rotateUserGroupToken(
  api: UserGroupsApi,
  group: { name: string; userGroupId: string; token: string },
  options: RotationOptions = {},
): Promise<{ token: string; teamId: number; providedId: string; name: string; environment?: Environment }> {
  // The client never retries a POST whose outcome is unknown: these rounds are those retries.
  const maxRounds = options.maxRounds ?? api.maxAttempts;
  const clock = api.clock ?? systemClock;
  const pause = options.pauseBeforeRound ?? ((round: number) => clock.sleep(rotationPauseMs(round, () => clock.random())));
  let sentToken = group.token;
  let lastError: unknown;
  for (let round = 1; round <= maxRounds; round++) {
    if (round > 1) await pause(round);
    try {
      const { user_group } = await api.rotateToken(sentToken, group.userGroupId);
      return {
        token: user_group.token,
        teamId: user_group.team_id,
        providedId: user_group.provided_id,
        name: user_group.name,
        environment: user_group.api_environment_tag,
      };
    } catch (error) {
      if (!isApiError(error)) throw error;
      const lostAnswer = error.ambiguous;
      const unknownToken = error.isNotFound;
      if (!lostAnswer && !unknownToken) throw error;
      lastError = error;
      const current = await readCurrentGroup(api, group.name, group.userGroupId);
      if (current === undefined) {
        throw new UserGroupsError(
          "user_group_gone",
          `Cannot rotate the token of user group "${group.userGroupId}": it no longer exists on the server. ` +
            "Run `pulumi refresh` to record that, then `pulumi up` to create it again.",
        );
      }
      // A lost answer whose rotation happened: the token changed under us.
      if (lostAnswer && current.token !== sentToken) {
        return { token: current.token, teamId: current.team_id, providedId: current.provided_id, name: current.name, environment: api.environment };
      }
      // Not rotated (or our token was stale from an out-of-band rotation): rotate the current one.
      sentToken = current.token;
    }
  }
  throw lastError;
}

/** Update: PUT the changed fields, then rotate if the trigger changed. */
export async function updateUserGroup(api: UserGroupsApi, olds: UserGroupOutputs, news: CheckedInputs): Promise<UserGroupOutputs> {
  let outputs: UserGroupOutputs = { ...olds, ...news };
  if (news.properties === undefined) delete outputs.properties;
  if (news.rotationTrigger === undefined) delete outputs.rotationTrigger;
  const changed = fieldsToUpdate(olds, news);
  if (changed.length > 0) {
    const request: UpdateUserRequest = { user_group_id: news.userGroupId };
    if (changed.includes("name")) request.name = news.name;
    if (changed.includes("mapping")) request.mapping = news.mapping;
    if (changed.includes("properties")) request.properties = wireProperties(news);
    const { user_group } = await api.update(request);
    outputs = { ...outputs, token: user_group.token, teamId: user_group.team_id, providedId: user_group.provided_id, apiEnvironmentTag: user_group.api_environment_tag };
  }
  if ((olds.rotationTrigger ?? null) !== (news.rotationTrigger ?? null)) {
    const rotated = await rotateUserGroupToken(api, { name: news.name, userGroupId: news.userGroupId, token: outputs.token });
    outputs = { ...outputs, token: rotated.token, teamId: rotated.teamId, providedId: rotated.providedId };
    if (rotated.environment !== undefined) outputs.apiEnvironmentTag = rotated.environment;
  }
  return outputs;
}

/** R7: delete by current token; a stale token is looked up again; already gone is success. */
export async function deleteUserGroup(api: UserGroupsApi, olds: Pick<UserGroupOutputs, "name" | "userGroupId" | "token">): Promise<void> {
  try {
    await api.delete({ current_token: olds.token, user_group_id: olds.userGroupId });
    return;
  } catch (error) {
    if (!(isApiError(error) && error.isNotFound)) throw error;
  }
  const current = await readCurrentGroup(api, olds.name, olds.userGroupId);
  if (current === undefined) return; // already gone
  try {
    await api.delete({ current_token: current.token, user_group_id: olds.userGroupId });
  } catch (error) {
    if (isApiError(error) && error.isNotFound) return; // deleted by someone else meanwhile
    throw error;
  }
}
