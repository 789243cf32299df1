// Following one run's engine events: per group, the most telling change, the
// fields it touches and what the engine said of it; the errors a run ends in.
import type { EngineEvent } from "@pulumi/pulumi/automation";
import { BASE_URL_NOT_ALLOWED, BaseUrlNotAllowedError, MISSING_CREDENTIALS, MissingCredentialsError } from "../../logic/credentials";
import { diffUserGroup } from "../../logic/diff";
import type { CheckedInputs } from "../../logic/inputs";
import { nameOfUrn, GroupChange, FieldChange, GroupEvent, Operation } from "../model";
import { UserGroupsError } from "../../wire/errors";
import { EngineEdgeError } from "./pulumi-cli";

const GROUP_TYPE_SUFFIX = ":UserGroup";

export function changeOf(op: string): GroupChange {
  switch (op) {
    case "create":
    case "update":
    case "delete":
    case "same":
    case "refresh":
    case "read":
      return op;
    case "replace":
    case "create-replacement":
    case "delete-replaced":
    case "discard-replaced":
      return "replace";
    default:
      return "update";
  }
}

function fieldChange(field: string, old: unknown, now: unknown): FieldChange {
  return { field, ...(old !== undefined ? { old } : {}), ...(now !== undefined ? { new: now } : {}) };
}

/** An engine diagnostic's text: ANSI colours and the "error: " prefix off. */
function diagnosticText(message: string): string {
  // biome-ignore lint: the escape character is what we strip
  return message.replace(/\u001b\[[0-9;]*m/g, "").replace(/^error:\s*/i, "").trim();
}

/** The engine's closing lines ("update failed") and the program's echo of a group's failure add nothing. */
const GENERIC_FAILURE = /^(update|preview|refresh|destroy) failed$|failed to register$/;

export interface ChangeTrackerOptions {
  /**
   * A targeted run's groups, by resource name. A step on any other group
   * (anything but "same") is recorded in `outsideBatch` and stops the run
   * through `signal`: defence in depth, should a target ever match more than
   * the names it was built from.
   */
  readonly batch?: ReadonlySet<string>;
}

/** Follows the engine's events and keeps, per group, the most telling change, and what the engine said of it. */
export class ChangeTracker {
  readonly changes = new Map<string, GroupChange>();
  readonly changedFields = new Map<string, string[]>();
  readonly fieldChanges = new Map<string, FieldChange[]>();
  /** The first error diagnostic the engine reported for each group, by resource name. */
  readonly diagnostics = new Map<string, string>();
  /** Error diagnostics of the run itself (no group named), generic closing lines left out. */
  readonly runDiagnostics: string[] = [];
  /** URNs of groups outside the batch that the run touched (see ChangeTrackerOptions.batch). */
  readonly outsideBatch: string[] = [];
  private readonly stop = new AbortController();
  private readonly batch: ReadonlySet<string> | undefined;
  constructor(
    private readonly onEvent?: (event: GroupEvent) => void,
    options: ChangeTrackerOptions = {},
  ) {
    this.batch = options.batch;
  }

  /** Aborted once the run touched a group outside its batch: pass it as the run's `signal`. */
  get signal(): AbortSignal {
    return this.stop.signal;
  }

  handle = (event: EngineEvent): void => {
    const diagnostic = event.diagnosticEvent;
    if (diagnostic && diagnostic.severity === "error") this.noteDiagnostic(diagnostic.urn, diagnosticText(diagnostic.message));
    const pre = event.resourcePreEvent?.metadata;
    const done = event.resOutputsEvent?.metadata;
    const failed = event.resOpFailedEvent?.metadata;
    const meta = pre ?? done ?? failed;
    if (!meta || !meta.type.endsWith(GROUP_TYPE_SUFFIX)) return;
    const resourceName = nameOfUrn(meta.urn);
    if (this.batch !== undefined && !this.batch.has(resourceName) && meta.op !== "same") {
      if (!this.outsideBatch.includes(meta.urn)) this.outsideBatch.push(meta.urn);
      this.stop.abort();
    }
    let change = changeOf(meta.op);
    // A refresh reports "refresh"; what changed shows in the diff it carries.
    if (meta.op === "refresh") change = (meta.diffs?.length ?? 0) > 0 ? "update" : "same";
    if (failed) change = "failed";
    const previous = this.changes.get(resourceName);
    if (previous !== "failed" && !(previous === "replace" && change !== "failed")) this.changes.set(resourceName, change);
    if (pre && (change === "update" || change === "replace") && pre.old?.inputs && pre.new?.inputs && !this.changedFields.has(resourceName)) {
      const olds = pre.old.inputs as Record<string, unknown>;
      const news = pre.new.inputs as Record<string, unknown>;
      const outcome = diffUserGroup(olds as Partial<CheckedInputs>, news as unknown as CheckedInputs);
      const fields = [...outcome.replaces, ...outcome.updates];
      this.changedFields.set(resourceName, fields);
      this.fieldChanges.set(resourceName, fields.map((field) => fieldChange(field, olds[field], news[field])));
    }
    if (pre && change === "delete" && typeof pre.old?.inputs?.name === "string" && !this.fieldChanges.has(resourceName)) {
      this.fieldChanges.set(resourceName, [{ field: "name", old: pre.old.inputs.name }]);
    }
    this.onEvent?.({
      resourceName,
      phase: failed ? "failed" : done ? "done" : "started",
      change,
      engineEvent: event,
    });
  };

  private noteDiagnostic(urn: string | undefined, text: string): void {
    if (text.length === 0 || GENERIC_FAILURE.test(text.split("\n")[0]!)) return;
    const onGroup = urn !== undefined && urn.includes(`${GROUP_TYPE_SUFFIX}::`);
    if (onGroup) {
      const resourceName = nameOfUrn(urn);
      if (!this.diagnostics.has(resourceName)) this.diagnostics.set(resourceName, text);
    } else if (!this.runDiagnostics.includes(text)) {
      this.runDiagnostics.push(text);
    }
  }

  /** What the engine said went wrong, one line per group or run-level problem (empty when it said nothing). */
  failureLines(): string[] {
    return [...[...this.diagnostics].map(([name, text]) => `${name}: ${text}`), ...this.runDiagnostics];
  }
}

/**
 * A targeted run that touched groups outside its batch (ChangeTrackerOptions.batch).
 * It was stopped at the first such step; the URNs are in `urns`, not in the
 * message, which a service may pass on to its own callers.
 */
export class OutsideBatchError extends UserGroupsError {
  constructor(
    readonly operation: Operation,
    readonly stackName: string,
    readonly urns: readonly string[],
  ) {
    super(
      "run_outside_batch",
      `A targeted ${operation} of stack "${stackName}" touched ${urns.length === 1 ? "a group" : `${urns.length} groups`} outside its batch, so it was stopped. ` +
        "This is a bug (of pulumi-user-groups or Pulumi's targeting): check the stack's groups (UserGroupFleet.list) and report it.",
    );
    this.name = "OutsideBatchError";
  }
}

/** Throws OutsideBatchError when the tracked run touched a group outside its batch. */
export function assertWithinBatch(tracker: ChangeTracker, operation: Operation, stackName: string): void {
  if (tracker.outsideBatch.length > 0) throw new OutsideBatchError(operation, stackName, [...tracker.outsideBatch]);
}

/**
 * A run the engine reported failed: what it said, from its diagnostic events
 * (per group where it named one), not scraped from the CLI's text. `cause` is
 * Pulumi's own CommandError.
 */
export class RunFailedError extends UserGroupsError {
  constructor(
    readonly operation: Operation,
    readonly stackName: string,
    readonly diagnostics: readonly string[],
    options?: { cause?: unknown },
  ) {
    super("run_failed", `${operation} of stack "${stackName}" failed:\n  ${diagnostics.join("\n  ")}`, options);
    this.name = "RunFailedError";
  }
}

/**
 * The provider's refusal for want of a base URL or key, when that is all that
 * went wrong: one MissingCredentialsError saying each distinct thing to set
 * (the same for every group of a profile), not one line per group.
 */
export function missingCredentials(tracker: ChangeTracker): MissingCredentialsError | undefined {
  const texts = [...tracker.diagnostics.values(), ...tracker.runDiagnostics];
  if (texts.length === 0 || !texts.every((text) => MISSING_CREDENTIALS.test(text))) return undefined;
  return new MissingCredentialsError([...new Set(texts.map((text) => text.split("\n")[0]!))].join("\n"));
}

/**
 * The provider's refusal of a base URL that stack config names and the job does not
 * (logic/credentials.ts): once for the run, each distinct line once, whatever else
 * failed with it, since no request was sent for any group it names.
 */
export function baseUrlNotAllowed(tracker: ChangeTracker): BaseUrlNotAllowedError | undefined {
  // The provider's own words, without what the engine put before them ("Preview failed: ").
  const texts = [...tracker.diagnostics.values(), ...tracker.runDiagnostics].map((text) => text.split("\n")[0]!).flatMap((line) => {
    const at = line.search(BASE_URL_NOT_ALLOWED);
    return at < 0 ? [] : [line.slice(at)];
  });
  return texts.length === 0 ? undefined : new BaseUrlNotAllowedError([...new Set(texts)].join("\n"));
}

/** What the HTTP client's failures say (client/errors.ts describeFailure), by what a pipeline does about each. */
const SERVICE_FAILURES = [
  { code: "api_key_rejected", pattern: /failed after \d+ attempts?: HTTP 401\b/ },
  { code: "service_timeout", pattern: /no answer from \S+ \((?:ETIMEDOUT|UND_ERR_CONNECT_TIMEOUT|UND_ERR_HEADERS_TIMEOUT|UND_ERR_BODY_TIMEOUT)\)/ },
  { code: "service_unreachable", pattern: /no answer from \S+ \((?:ECONNREFUSED|ECONNRESET|ENOTFOUND|EAI_AGAIN|EHOSTUNREACH|ENETUNREACH|EPIPE|UND_ERR_SOCKET)\)/ },
] as const;

/** The base URL a client failure names (`(GET https://x/api/user)`), for the message. */
const FAILED_URL = /\((?:GET|POST|PUT|DELETE) (\S+)\/api\/user\)/;

/**
 * When every group of a run failed for one reason the service gave (the key
 * rejected, no answer, a timeout): one error for the run, with a code a
 * pipeline can branch on and what to do, instead of the same line per group.
 */
export function serviceFailure(tracker: ChangeTracker, stackName: string): EngineEdgeError | undefined {
  const texts = [...tracker.diagnostics.values()];
  if (texts.length === 0 || tracker.runDiagnostics.length > 0) return undefined;
  const kind = SERVICE_FAILURES.find((candidate) => texts.every((text) => candidate.pattern.test(text)));
  if (kind === undefined) return undefined;
  const url = FAILED_URL.exec(texts[0]!)?.[1] ?? "the service";
  const groups = texts.length === 1 ? "its group" : `each of its ${texts.length} groups`;
  const where = `The run on stack "${stackName}" failed for ${groups} because`;
  switch (kind.code) {
    case "api_key_rejected":
      return new EngineEdgeError("api_key_rejected", `${where} ${url} rejected the API key (HTTP 401): it is wrong, revoked or rotated.`, {
        cli: "Set USER_GROUPS_API_KEY (or the profile's USER_GROUPS_API_KEY_<PROFILE>) to a current key of that environment.",
        library: "Give the provider a current key (USER_GROUPS_API_KEY in `envVars`, or stack config).",
      });
    case "service_timeout":
      return new EngineEdgeError("service_timeout", `${where} ${url} did not answer in time, on every attempt.`, {
        cli: "Check that the service is up and reachable from this runner (USER_GROUPS_BASE_URL); USER_GROUPS_HTTP_TIMEOUT_MS sets the wait. Then run again.",
        library: "Check that the service is up and reachable (USER_GROUPS_BASE_URL); then run again.",
      });
    case "service_unreachable":
      return new EngineEdgeError("service_unreachable", `${where} nothing answered at ${url} (refused, reset or not found), on every attempt.`, {
        cli: "Check USER_GROUPS_BASE_URL and that the service is up and reachable from this runner; then run again.",
        library: "Check USER_GROUPS_BASE_URL and that the service is up and reachable; then run again.",
      });
  }
}
