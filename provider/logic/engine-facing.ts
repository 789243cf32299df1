// What a failed create, read, update or delete says once it leaves the provider
// for the engine (both ways Pulumi runs it: the dynamic provider and the
// plugin). The engine prints the message under the resource, so it is one line
// that names the operation as the user ran it (a refresh reads with a PUT, but
// it is a read), the cause in the service's words, and what to do, worded for
// who drives the engine (a `pulumi` user, the `user-groups` command, a library).
//
// Pulumi's provider hosts also echo a failed read or delete to stderr as
// `${error}: ${error.stack}` (a JavaScript stack trace, the message twice),
// which the engine shows as well: `quietHostEcho` drops exactly that echo for
// the errors this module has already worded, and nothing else.
import { describeFailure, UserGroupApiError } from "../client/errors";
import { TUNING_ENV } from "../client/tuning";
import { UserGroupsError } from "../wire/errors";
import { CONFIG_NAMESPACE, ENV_API_KEY, ENV_BASE_URL, ENV_HINTS, profileEnvSuffix } from "./credentials";

/** The provider operations that talk to the service, as the user ran them. */
export type EngineOperation = "create" | "read" | "update" | "delete";

const SUBJECTS: Record<EngineOperation, string> = {
  create: "Creating the user group",
  read: "Reading the user group",
  update: "Updating the user group",
  delete: "Deleting the user group",
};

/** The network codes of a request that got no answer in time (client/transport.ts), as the CLI groups them too. */
const TIMEOUT_CODES = new Set(["ETIMEDOUT", "UND_ERR_CONNECT_TIMEOUT", "UND_ERR_HEADERS_TIMEOUT", "UND_ERR_BODY_TIMEOUT"]);

/** A refused input's service code -> the UserGroup input it names. */
const REFUSED_INPUTS: Readonly<Record<string, string>> = {
  invalid_name: "name",
  invalid_user_group_id: "userGroupId",
  invalid_mapping: "mapping",
  invalid_properties: "properties",
  invalid_data_source_provided_id: "mapping",
};

export interface EngineFacingContext {
  /** The group's profile (undefined: the default profile's credentials). */
  readonly profile?: string;
  /** The provider process's environment: USER_GROUPS_HINTS says who drives the engine. */
  readonly env: NodeJS.ProcessEnv;
  /** A refresh or destroy run without the program: the engine gives the provider the config the last up recorded. */
  readonly stateOnly?: "refresh" | "destroy";
}

/** Where the key and the base URL come from, in the words of who drives the engine; `recorded`: what a plain refresh or destroy uses instead. */
function places(context: EngineFacingContext): { key: string; baseUrl: string; recorded: string } {
  const suffix = context.profile === undefined ? "" : `_${profileEnvSuffix(context.profile)}`;
  const keyVar = `${ENV_API_KEY}${suffix}`;
  const urlVar = `${ENV_BASE_URL}${suffix}`;
  const configKey = (name: string) => (context.profile === undefined ? `${CONFIG_NAMESPACE}:${name}` : `${CONFIG_NAMESPACE}:profiles.${context.profile}.${name}`);
  switch (context.env[ENV_HINTS]) {
    case "cli":
      return { key: `${keyVar} in the environment of user-groups`, baseUrl: `${urlVar} in the environment of user-groups`, recorded: "" };
    case "automation":
      return { key: `${keyVar} (the environment or the \`envVars\` option)`, baseUrl: `${urlVar} (the environment or the \`envVars\` option)`, recorded: "" };
    default: {
      const recorded =
        context.stateOnly === undefined
          ? ""
          : ` A plain \`pulumi ${context.stateOnly}\` uses the config the last \`pulumi up\` recorded: after changing the stack's config, run \`pulumi ${context.stateOnly} --run-program\`.`;
      return { key: `${keyVar} or the stack's config ${configKey("apiKey")}`, baseUrl: `${urlVar} or the stack's config ${configKey("baseUrl")}`, recorded };
    }
  }
}

/** What to do about a failure the service (or its absence) caused. */
function fixFor(error: UserGroupApiError, context: EngineFacingContext): string {
  const where = places(context);
  if (error.kind === "network") {
    const rerun = error.ambiguous ? " Then run again (a refresh first, if the request may have been carried out)." : " Then run again.";
    if (TIMEOUT_CODES.has(error.details.code ?? "")) {
      return `The service did not answer in time: check that it is up and reachable from here (${where.baseUrl}); ${TUNING_ENV.timeoutMs} sets how long each attempt waits.${rerun}`;
    }
    return `Nothing answered there: check the base URL (${where.baseUrl}) and that the service is up and reachable from here.${rerun}${where.recorded}`;
  }
  if (error.kind === "invalid_response") return `That answer is not the user-groups API's: check the base URL (${where.baseUrl}).${where.recorded}`;
  const code = error.details.code ?? "";
  switch (error.status) {
    case 401:
      return `The service rejected the API key (wrong, revoked or rotated): set ${where.key} to a current key of that environment.${where.recorded}`;
    case 403:
      return `This API key is read-only: use a read-write key to change groups (${where.key}).`;
    case 429:
      return "Rate limited and the retries ran out: lower USER_GROUPS_RATE_LIMIT to the service's limit, or run again later.";
  }
  const input = REFUSED_INPUTS[code];
  if (input !== undefined) return `The service refused the group's ${input}: change ${input} of this UserGroup to meet the service's rules; nothing was changed.`;
  if (error.status !== undefined && error.status >= 400 && error.status < 500) return "The service refused the request: run `pulumi refresh`, then run again; if it lasts, report it with this message.";
  return "The service failed: run again; if it lasts, report it to the service's operator with this message.";
}

/** Texts the host is about to echo (`${error}: ${error.stack}`) for errors already worded here; bounded. */
const pendingEchoes = new Set<string>();
const MAX_PENDING_ECHOES = 256;

function expectEcho(error: Error): void {
  pendingEchoes.add(`${String(error)}: ${error.stack}`);
  // The hosts echo a failed read or delete only: drop the oldest of the others.
  while (pendingEchoes.size > MAX_PENDING_ECHOES) pendingEchoes.delete(pendingEchoes.values().next().value!);
}

/**
 * A failure of `operation` as the engine will print it: a UserGroupApiError
 * reworded (one line, the operation, the cause, the fix); any UserGroupsError
 * (its message already says what to do) left as it is. Either loses its stack
 * trace, which says nothing to a user, and its host echo. Anything else (a bug)
 * keeps its stack.
 */
export function engineFacingError(operation: EngineOperation, error: unknown, context: EngineFacingContext): unknown {
  if (!(error instanceof UserGroupsError)) return error;
  if (error instanceof UserGroupApiError) {
    const cause = describeFailure(error.details, SUBJECTS[operation], error.status === 403);
    const message = error.status === 403 ? cause : `${cause.replace(/[.\s]+$/, "")}. ${fixFor(error, context)}`;
    Object.defineProperty(error, "message", { value: message, configurable: true, writable: true });
  }
  Object.defineProperty(error, "stack", { value: `${error.name}: ${error.message}`, configurable: true, writable: true });
  expectEcho(error);
  return error;
}

let quieted = false;

/**
 * Makes this process's `console.error` drop the host's echo of an error that
 * engineFacingError worded (the exact text, once), and pass everything else on.
 * Called by the dynamic provider's module and the plugin, once per process.
 */
export function quietHostEcho(): void {
  if (quieted) return;
  quieted = true;
  const original = console.error.bind(console);
  console.error = (...args: unknown[]) => {
    if (args.length === 1 && typeof args[0] === "string" && pendingEchoes.delete(args[0])) return;
    original(...args);
  };
}
