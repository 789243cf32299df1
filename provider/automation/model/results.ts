// What callers declare and get back from a run: options, per-group results,
// progress events, and what a takeover reports.
import type { EngineEvent } from "@pulumi/pulumi/automation";
import type { PulumiLock } from "../../backends";
import type { Environment } from "../../wire/schemas";
import type { GroupSpec } from "./groups-spec";
import type { DeleteGuardOptions } from "./delete-guard";

export type GroupChange = "create" | "update" | "replace" | "delete" | "same" | "refresh" | "read" | "failed";

export interface GroupResult {
  /** Pulumi resource name: `<profile or "default">.<userGroupId>`. */
  readonly resourceName: string;
  readonly userGroupId: string;
  readonly profile?: string;
  readonly change: GroupChange;
  /** For an update or replace: the inputs that change (a replace lists its reason first: userGroupId or profile). */
  readonly changedFields?: readonly string[];
  /**
   * For an update or replace: each changed input's old and new value (a key left
   * out: none); for a delete, the name it had. Inputs only: never a token.
   */
  readonly fieldChanges?: readonly FieldChange[];
  /** After up: what the service holds. The token is yours to keep secret. */
  readonly name?: string;
  readonly token?: string;
  readonly teamId?: number;
  readonly apiEnvironmentTag?: Environment;
}

/** What `UserGroupFleet.ensure` answers: the group as the stack holds it after the call, its token included. */
export interface EnsuredGroup extends GroupResult {
  readonly name: string;
  /** The group's token: yours to keep secret. */
  readonly token: string;
  readonly teamId: number;
}

/** One input of a group before and after (absent: not set). */
export interface FieldChange {
  readonly field: string;
  readonly old?: unknown;
  readonly new?: unknown;
}

export interface RunSummary {
  readonly create: number;
  readonly update: number;
  readonly replace: number;
  readonly delete: number;
  readonly same: number;
}

export interface RunResult {
  readonly operation: Operation;
  readonly stack: string;
  /** Without credentials (a postgres:// password is never in a result). */
  readonly backendUrl: string;
  readonly summary: RunSummary;
  /** True when anything would change / changed. */
  readonly changed: boolean;
  readonly groups: readonly GroupResult[];
}

/** A progress event, one per group step (the raw engine event rides along). */
export interface GroupEvent {
  readonly resourceName: string;
  readonly phase: "started" | "done" | "failed";
  readonly change: GroupChange;
  readonly message?: string;
  readonly engineEvent: EngineEvent;
}

export interface RunOptions {
  /** Stack name, e.g. "prod". */
  readonly stack: string;
  /**
   * Where the stack's settings live (keep it: Pulumi.<stack>.yaml holds the secrets salt), and the default file backend
   * (`state/`). Default `.user-groups/` in the current directory. Pulumi itself runs in a private directory of each run;
   * files there that Pulumi would read instead of ours, and symlinks, are refused (UntrustedWorkspaceError).
   */
  readonly workDir?: string;
  /**
   * Pulumi backend; default a file backend in `<workDir>/state`, or PULUMI_BACKEND_URL when set. A password in it is
   * passed to Pulumi in the environment only (PGPASSWORD for postgres://) and shown nowhere (results carry the URL without it).
   */
  readonly backendUrl?: string;
  /** Passphrase of the stack's secrets; default PULUMI_CONFIG_PASSPHRASE. */
  readonly passphrase?: string;
  /** Extra environment for the engine and provider (e.g. USER_GROUPS_API_KEY). The process environment is inherited. */
  readonly envVars?: Record<string, string>;
  /** Stack config to set before running, e.g. { "user-groups:apiKey": { value, secret: true } }. */
  readonly config?: Record<string, { value: string; secret?: boolean }>;
  readonly onEvent?: (event: GroupEvent) => void;
  /** Pulumi's own progress text. */
  readonly onOutput?: (text: string) => void;
  /** How many resource operations Pulumi runs at once (default: Pulumi's). */
  readonly parallel?: number;
  /** preview/up: read every group from the service first (out-of-band changes and deletions), as `pulumi up --refresh`. */
  readonly refresh?: boolean;
  /** How long to wait for a stack another run holds (jittered backoff); default 0: fail at once with StackLockedError. */
  readonly lockTimeoutMs?: number;
  /** Told before each wait for a locked stack. */
  readonly onLockWait?: (waitMs: number, waitedMs: number) => void;
  /** Told when this run took over what a dead run left (its lock, its pending creates): CONTRACT F7. */
  readonly onTakeover?: (report: TakeoverReport) => void;
  /**
   * File and PostgreSQL backends: how many groups one Pulumi stack holds before new groups go to the
   * stack's next shard, `<stack>.shard-<n>` (default 250, at most 5000). Groups never move: a smaller
   * size applies to groups added from then on. See docs/performance.md, "Scale".
   */
  readonly shardSize?: number;
}

export interface ProvisionOptions extends RunOptions, DeleteGuardOptions {
  /** The whole desired set (groups left out are deleted); checked at run time too, for JavaScript callers. */
  readonly groups: readonly GroupSpec[];
}

export type Operation = "preview" | "up" | "refresh" | "destroy";


export type { PulumiLock } from "../../backends";

export interface PendingOperation {
  /** "creating", "updating", "deleting", "reading", "importing". */
  readonly type: string;
  readonly resourceName: string;
}

export interface TakeoverReport {
  /** Pulumi locks of dead runs that were removed (file or key), with who held them. */
  readonly removedLocks: readonly PulumiLock[];
  /** Torn metadata sidecars and temporary files of the dead run's last checkpoint write (file backend). */
  readonly repairedFiles: readonly string[];
  /** What the state listed as pending (cleared). */
  readonly pending: readonly PendingOperation[];
  /** Groups adopted from their pending create (empty when the caller adopts them itself, as `recover` does). */
  readonly adopted: readonly string[];
  /**
   * Pending creates the adopting `up` could not adopt (kept in the run record for the next run), and entries of the
   * run record's adopt list refused because the stack's state holds no such pending create (dropped, untouched).
   */
  readonly notAdopted: readonly string[];
  /** Processes of the dead run (same host) that had not exited by themselves and were killed. */
  readonly killedProcesses: number;
}
