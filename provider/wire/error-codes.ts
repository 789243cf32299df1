// The one catalogue of the codes a UserGroupsError carries (as undici keeps its
// error codes in one file). `UserGroupsError`'s constructor takes an `ErrorCode`,
// so a code not written here fails `npm run typecheck`; docs/cli-json.md's table
// is held equal to this catalogue by test/wire/error-codes.unit.test.ts. A code, once
// written here, is public (scripts branch on it, `--json` prints it): never
// rename one; add a new one instead.
//
// Each entry: what the code means and what to do (`meaning`), who throws it
// (`thrownBy`), and, for the codes a `user-groups --json` error document can
// carry, the exit code it comes with (`exit`). A code without `exit` is seen
// only by a library's caller, in a provider process (where the engine reports
// it inside `run_failed`), or by a client of the fake server.
//
// Service codes. The contract's error codes (W3, `SERVICE_ERROR_CODES` in
// schemas.ts) are catalogued too: the fake server's `ApiError` answers with
// them and a `UserGroupApiError` carries the one the service sent. A service
// may also send a code the contract does not list, and a network failure has
// the system's code (ECONNREFUSED, UND_ERR_HEADERS_TIMEOUT): a
// `UserGroupApiError` keeps those as they are (docs/resource.md promises it),
// typed `ForeignErrorCode`, which only `foreignErrorCode()` makes, and only the
// HTTP client's errors use it.
import type { ServiceErrorCode } from "./schemas";

/** Where a code comes from, and whether `user-groups --json` can print it. */
export interface ErrorCodeEntry {
  /** What happened, and what to do. */
  readonly meaning: string;
  /** The class (or place) that throws it, and its folder. */
  readonly thrownBy: string;
  /** The exit code of a `user-groups --json` error document with this code; absent: never in one. */
  readonly exit?: 1 | 2;
}

/** The contract's error codes (W3): answered by the service and the fake server, carried by a `UserGroupApiError` (kind `http`). */
const SERVICE_CODES = {
  unauthorized: { meaning: "401: the API key is missing, malformed or unknown; check user-groups:apiKey or USER_GROUPS_API_KEY", thrownBy: "the service; fake-server ApiError; client UserGroupApiError" },
  forbidden: { meaning: "403: a read-only API key asked to change something; use a read-write key", thrownBy: "the service; fake-server ApiError; client UserGroupApiError" },
  unsupported_media_type: { meaning: "415: the request body is not application/json", thrownBy: "the service; fake-server ApiError; client UserGroupApiError" },
  invalid_json: { meaning: "400: the request body is not JSON", thrownBy: "the service; fake-server ApiError; client UserGroupApiError" },
  invalid_body: { meaning: "400: the request body is JSON but not one object (or is empty)", thrownBy: "the service; fake-server ApiError; client UserGroupApiError" },
  invalid_name: { meaning: "400: the group's name breaks the contract's rules (W4)", thrownBy: "the service; fake-server ApiError; client UserGroupApiError" },
  invalid_user_group_id: { meaning: "400: the user_group_id breaks the contract's rules (W4)", thrownBy: "the service; fake-server ApiError; client UserGroupApiError" },
  invalid_mapping: { meaning: "400: the mapping breaks the contract's rules (W4)", thrownBy: "the service; fake-server ApiError; client UserGroupApiError" },
  invalid_properties: { meaning: "400: the properties break the contract's rules (W4)", thrownBy: "the service; fake-server ApiError; client UserGroupApiError" },
  invalid_current_token: { meaning: "400: the current_token of a rotation is malformed (W4)", thrownBy: "the service; fake-server ApiError; client UserGroupApiError" },
  invalid_data_source_provided_id: { meaning: "400: the data_source_provided_id breaks the contract's rules (W4)", thrownBy: "the service; fake-server ApiError; client UserGroupApiError" },
  bad_request: { meaning: "400 (or 408/431): the HTTP request itself is malformed, before any body is read", thrownBy: "the service; fake-server ApiError; client UserGroupApiError" },
  payload_too_large: { meaning: "413: the request body is larger than the service accepts", thrownBy: "the service; fake-server ApiError; client UserGroupApiError" },
  group_too_large: { meaning: "413: the group (name, id, mapping and properties) would be larger than the emulator keeps (--max-group-bytes)", thrownBy: "fake-server ApiError; client UserGroupApiError" },
  storage_full: { meaning: "507: the emulator holds as many groups or bytes as it may (--max-groups, --max-total-bytes); delete groups or raise the limit", thrownBy: "fake-server ApiError; client UserGroupApiError" },
  method_not_allowed: { meaning: "405: the path does not accept this HTTP method (Allow names those it does)", thrownBy: "the service; fake-server ApiError; client UserGroupApiError" },
  not_found: { meaning: "404: an unknown path", thrownBy: "the service; fake-server ApiError; client UserGroupApiError" },
  user_group_not_found: { meaning: "404: no group (or token) with that id in the API key's environment (UserGroupApiError.isNotFound)", thrownBy: "the service; fake-server ApiError; client UserGroupApiError" },
  id_mismatch: { meaning: "409: a delete's ids do not match the group", thrownBy: "the service; fake-server ApiError; client UserGroupApiError" },
  rate_limited: { meaning: "429: too many requests and the retries ran out; lower USER_GROUPS_RATE_LIMIT to the service's real limit", thrownBy: "the service; fake-server ApiError; client UserGroupApiError" },
  injected_fault: { meaning: "any status: a fault rule of the fake server answered instead of the handler", thrownBy: "fake-server ApiError (fault rules); client UserGroupApiError" },
  internal_error: {
    meaning: "a bug: the CLI met an error that is not a UserGroupsError, or the service (500) failed; please report it",
    thrownBy: "cli (any other error); the service; fake-server ApiError; client UserGroupApiError",
    exit: 1,
  },
} as const satisfies Record<ServiceErrorCode, ErrorCodeEntry>;

/** Every code a UserGroupsError (or a `user-groups --json` error document) carries. */
export const ERROR_CODES = {
  // ---- provider/cli: the `user-groups` command ----
  usage: { meaning: "a bad command line, or an unreadable or malformed groups file; `user-groups --help`", thrownBy: "cli UsageError", exit: 2 },
  confirmation_required: { meaning: "`up`, `destroy` or `recover` without `--yes` where nobody can confirm (not a terminal)", thrownBy: "cli (engine-commands)", exit: 2 },
  yaml_anchor_refused: { meaning: "a groups file with YAML anchors or aliases (the CLI reports it as `usage`)", thrownBy: "cli AnchorRefused (groups-file)" },

  // ---- provider/automation/model ----
  invalid_groups: { meaning: "group specs (a groups file's entries) that break the rules; each problem is named", thrownBy: "automation/model GroupsValidationError", exit: 2 },
  delete_all_refused: { meaning: "an up or recover would delete every group of the stack; pass --allow-delete-all (allowDeleteAll) if that is meant", thrownBy: "automation/model DeletionRefusedError", exit: 2 },
  too_many_deletes: { meaning: "an up, recover or destroy would delete more groups than --max-deletes (maxDeletes) allows; nothing was deleted", thrownBy: "automation/model DeletionRefusedError", exit: 2 },
  invalid_option: { meaning: "an option of the library out of range (maxDeletes not a whole number of 0 or more)", thrownBy: "automation/model validDeleteGuard" },
  invalid_stack_name: { meaning: "a stack name other than letters, digits, -, _ and . (at most 100), optionally org/stack or org/project/stack", thrownBy: "backends InvalidStackNameError", exit: 1 },
  invalid_resource_name: { meaning: "a resource name that is not <profile>.<userGroupId> (a state this version did not write)", thrownBy: "automation/model ResourceNameError", exit: 1 },

  // ---- provider/automation/backend ----
  stack_locked: { meaning: "another run holds the stack's lock (or was rewriting its state while it was read: a file backend's torn checkpoint read, retried ~3 s first); try again when it has finished (gitops.md, stuck locks)", thrownBy: "automation/backend StackLockedError (a torn read: automation/engine tornStateError)", exit: 1 },
  stack_lock_timeout: { meaning: "the stack stayed locked by another run for the whole lock timeout; if that run is gone, `recover` clears it", thrownBy: "automation/backend StackLockTimeoutError", exit: 1 },
  stack_lock_live: { meaning: "the stack's lock is held by a run that is alive, or on another host where it cannot be checked; delete the lock only if that run is really gone", thrownBy: "backends/file LiveLockError", exit: 1 },
  file_refused: { meaning: "a file that is not a plain regular file of ours (a link, a device, missing, too large): refused", thrownBy: "automation/backend FileRefusedError", exit: 1 },

  // ---- provider/automation/lease ----
  run_lease_held: { meaning: "another live run holds the stack's run lease; try again when it has finished", thrownBy: "automation/lease RunLeaseHeldError", exit: 1 },
  run_lease_lost: { meaning: "the run lease was lost while this run held it (backend connection broke, not renewed in time); the run stopped, ask again", thrownBy: "automation/lease RunLeaseLostError", exit: 1 },
  run_lease_unreachable: { meaning: "the PostgreSQL backend that holds the run lease cannot be reached, or the lease's connection was cut twice in a row (reset, restart, timeout); ask again; if it lasts, check the backend URL and that it is up", thrownBy: "backends/postgres LeaseUnreachableError (lease-store)", exit: 1 },
  run_record_entry_unproven: { meaning: "a run record's `created` entry (a fleet's sign-up not yet in the state) without a valid proof under the stack's passphrase (planted, tampered, copied from another stack, or a stack whose secrets manager is not the passphrase one): never adopted, dropped from the record, said on the run's output", thrownBy: "automation/lease UnprovenRecordEntryError (created-proof)" },
  run_lease_fence: {
    meaning: "the run fence (a trigger on Pulumi's table) cannot be installed in the PostgreSQL backend: the backend's role must own that table",
    thrownBy: "backends/postgres LeaseFenceError",
    exit: 1,
  },

  // ---- provider/automation/engine ----
  api_key_rejected: { meaning: "every group of the run failed because the service rejected the API key (HTTP 401): set a current key", thrownBy: "automation/engine EngineEdgeError", exit: 1 },
  service_unreachable: { meaning: "every group of the run failed because nothing answered at the base URL (refused, reset, not found): check the URL and the service", thrownBy: "automation/engine EngineEdgeError", exit: 1 },
  service_timeout: { meaning: "every group of the run failed because the service did not answer in time: check the service and its reachability", thrownBy: "automation/engine EngineEdgeError", exit: 1 },
  pulumi_cli_missing: { meaning: "no `pulumi` on PATH; install it and put it on PATH", thrownBy: "automation/engine PulumiCliMissingError", exit: 1 },
  missing_passphrase: { meaning: "PULUMI_CONFIG_PASSPHRASE unset or empty (a fork's pull request gets empty secrets)", thrownBy: "automation/engine MissingPassphraseError", exit: 1 },
  wrong_passphrase: { meaning: "the passphrase is not the one the stack was created with", thrownBy: "automation/engine WrongPassphraseError", exit: 1 },
  secrets_not_readable: { meaning: "the stack's secrets are kept by a secrets manager other than the passphrase (Pulumi Cloud's, a KMS), which this package cannot read without exporting the state with its secrets shown (it never does); nothing was changed: move the stack to the passphrase secrets manager", thrownBy: "automation/engine SecretsNotReadableError (state-document)", exit: 1 },
  backend_unreachable: { meaning: "the state backend cannot be reached, or its connection was cut under the engine or the shard directory (reset, restart, timeout); ask again; if it lasts, check PULUMI_BACKEND_URL (backendUrl) and that it is up", thrownBy: "automation/engine BackendUnreachableError (also the shard directory)", exit: 1 },
  backend_not_found: { meaning: "the state backend does not exist (a file:// backend's directory must exist)", thrownBy: "automation/engine BackendUnreachableError", exit: 1 },
  stack_not_found: { meaning: "`refresh`, `destroy` or `drift` of a stack that does not exist; nothing was changed", thrownBy: "automation/engine StackNotFoundError", exit: 1 },
  base_url_not_allowed: { meaning: "stack config names a base URL the job's environment does not: the key was not sent; remove it from the config, or list it in USER_GROUPS_ALLOWED_BASE_URLS", thrownBy: "logic BaseUrlNotAllowedError", exit: 2 },
  plan_mismatch: { meaning: "`up --plan-file`: the changes found now are not the ones the reviewed preview recorded (each difference is named); preview again and review", thrownBy: "cli PlanMismatchError", exit: 2 },
  plan_file_invalid: { meaning: "`up --plan-file`: the file is not a plan this command wrote for this stack (or was edited after the preview)", thrownBy: "cli PlanMismatchError", exit: 2 },
  plan_origin_mismatch: { meaning: "`up --plan-file` with --plan-commit/--plan-run: the plan is the preview of another commit, or was made by another run, than the one given (the last push was not previewed); preview that commit again", thrownBy: "cli PlanMismatchError", exit: 2 },
  untrusted_provider_code: { meaning: "groups of the state hold provider code (`__provider`) this package did not write, and nothing else is wrong: nothing ran; review it, then `user-groups recover --rewrite-providers`", thrownBy: "automation/engine UntrustedProviderCodeError", exit: 2 },
  untrusted_state: { meaning: "the state holds what this package never writes (a field the engine acts on, such as a provider's `__internal`/`pluginDownloadURL`, a foreign provider reference, an unknown field or resource type), each resource and field named: nothing ran, no request was sent; restore a state you trust or `pulumi state delete` what is not ours", thrownBy: "automation/engine UntrustedStateError", exit: 2 },
  untrusted_workspace: { meaning: "something under `.user-groups/` that this tool did not write (it may have been planted); remove it", thrownBy: "automation/engine UntrustedWorkspaceError", exit: 2 },
  run_failed: { meaning: "the engine ran and groups failed; the message (and `diagnostics`) has one line per group", thrownBy: "automation/engine RunFailedError", exit: 1 },
  run_outside_batch: { meaning: "a targeted run touched a group outside its batch and was stopped: a bug, please report it", thrownBy: "automation/engine OutsideBatchError", exit: 1 },
  pulumi_command_failed: { meaning: "another failure of a Pulumi command; the message has its error lines", thrownBy: "automation/engine PulumiCommandError", exit: 1 },
  config_set_failed: { meaning: "`pulumi config set` on the stack failed; the message has its output", thrownBy: "automation/engine stack-config", exit: 1 },
  invalid_trace_destination: { meaning: "USER_GROUPS_ENGINE_OTEL_TRACES is not a file://, grpc:// or http(s):// URL, or holds a user name, password, query or fragment, which would be on the engine's command line (its value is not shown): nothing ran", thrownBy: "automation/engine engine-trace", exit: 1 },

  // ---- provider/automation/shards ----
  reserved_stack_name: { meaning: "a stack name ending in .shard-<n>, which names a stack's shards; choose another", thrownBy: "automation/shards ReservedStackNameError", exit: 1 },
  shard_name_too_long: { meaning: "the stack needs another shard but <stack>.shard-<n> would pass 100 characters; use a shorter stack name", thrownBy: "automation/shards ShardNameError", exit: 1 },
  shard_directory_invalid: { meaning: "the shard directory in the backend is too large or not one this version wrote", thrownBy: "automation/shards ShardDirectory (backends/file directory-store)", exit: 1 },
  shard_directory_locked: { meaning: "the shard directory stayed locked; remove directory.lock if no run is going on", thrownBy: "automation/shards ShardDirectory (backends/file directory-store)", exit: 1 },

  // ---- provider/automation/fleet ----
  fleet_stack: { meaning: "`up`/`destroy` by the CLI of a stack a UserGroupFleet manages, without `--force`", thrownBy: "automation/fleet FleetStackError", exit: 2 },
  fleet_closed: { meaning: "a UserGroupFleet used after close(); create a new one", thrownBy: "automation/fleet FleetClosedError" },
  fleet_group_failed: { meaning: "one group of a UserGroupFleet batch failed; the message names it and why", thrownBy: "automation/fleet FleetGroupError" },
  fleet_ensure_failed: { meaning: "some groups of UserGroupFleet.ensure failed; the message lists each", thrownBy: "automation/fleet FleetEnsureError" },

  // ---- provider/client (and client/rate-budget; provider/backends) ----
  http: { meaning: "the service answered with a failure and no error code (or, with a code, see that code)", thrownBy: "client UserGroupApiError (kind http)" },
  network: { meaning: "no answer from the service and no system code (with one, the code is the system's: ECONNREFUSED, ...)", thrownBy: "client UserGroupApiError (kind network)" },
  invalid_response: { meaning: "an answer the client cannot read (not the expected JSON)", thrownBy: "client UserGroupApiError (kind invalid_response)" },
  insecure_transport: { meaning: "the API key would go over plain http to a host that is not loopback; use https:// (or allowInsecureHttp)", thrownBy: "client InsecureTransportError" },
  invalid_base_url: { meaning: "a base URL that is not http(s)", thrownBy: "client UserGroupsClient" },
  invalid_tuning: { meaning: "a USER_GROUPS_* timeout or retry variable that is not a positive whole number (USER_GROUPS_OBJECT_LEASE_TTL_MS: not 6000 to 300000)", thrownBy: "client InvalidTuningError; backends objectLeaseTiming" },
  invalid_rate_limit: { meaning: "USER_GROUPS_RATE_LIMIT is not REQUESTS/SECONDS (e.g. 180/60) or off", thrownBy: "client/rate-budget InvalidRateLimitError" },
  invalid_rate_budget_store: { meaning: "the rate budget store is not a postgres:// URL or a file:// URL of an absolute directory", thrownBy: "client/rate-budget InvalidRateBudgetStoreError" },
  rate_budget_dir: { meaning: "the rate budget's directory is not absolute, not a directory or another user's (or a budget's name is malformed): refused", thrownBy: "backends/file RateBudgetDirError" },
  rate_budget_locked: { meaning: "the rate budget's ledger file stayed locked by a live holder", thrownBy: "backends/file slot-store" },
  rate_budget_unreachable: { meaning: "the PostgreSQL table of the rate budget cannot be used, or its connection was cut (the process then paces itself alone)", thrownBy: "backends/postgres slot-store" },
  run_fenced: {
    meaning: "a provider process's request was not sent: its run's lease has a newer holder (or expires within 3 s, or could not be confirmed); ask again",
    thrownBy: "backends RunFencedError",
  },
  invalid_run_fence: { meaning: "USER_GROUPS_RUN_FENCE* in a provider process's environment do not name a lease, a postgres:// URL and a table", thrownBy: "backends/postgres runFenceFromEnv" },
  backend_table_untrusted: { meaning: "a table of ours in the backend's database was made or changed by another role (its owner, a trigger, a rule, its columns): refused, naming the table; drop it and let the next run make it", thrownBy: "backends/postgres BackendTableUntrustedError", exit: 1 },
  shard_directory_conflict: { meaning: "the shard directory and the shards' states disagree in a way a run cannot repair (a group two shards hold, or one that kept moving): nothing was changed; ask again, then look at the shards", thrownBy: "automation/shards, automation/fleet", exit: 1 },
  node_too_old: { meaning: "the Node.js that runs the program, the dynamic provider or the plugin is older than 22: put Node.js 22 or later first on the PATH", thrownBy: "provider NodeTooOldError (node-version.ts)" },
  reserved_value: { meaning: "a UserGroup argument holds a value Pulumi gives meaning to (an unknown-value marker, the secret or asset signature key): refused where it is declared, or once an output's value is known, or by the provider where the engine never sends one (nothing sent); the path is named", thrownBy: "resource ReservedInputError; logic ReservedValueError" },
  backend_table_name: { meaning: "the backend URL's table (or the rate budget's) is not a plain SQL name: refused", thrownBy: "backends/postgres BackendTableNameError", exit: 1 },
  backend_bucket_missing: { meaning: "the object store's bucket (or container) of the backend URL does not exist: create it, or correct the URL", thrownBy: "backends ObjectStoreError (s3, gs, azblob clients)", exit: 1 },
  backend_credentials_rejected: { meaning: "the object store refused the credentials (or none are in the environment): check AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (s3), AZURE_STORAGE_ACCOUNT and AZURE_STORAGE_KEY (azblob), GOOGLE_OAUTH_ACCESS_TOKEN (gs); they are never shown", thrownBy: "backends ObjectStoreError (s3, gs, azblob clients)", exit: 1 },
  backend_conditions_ignored: { meaning: "the object store accepted a write its condition should have refused (If-None-Match, If-Match): two runs could both take one lease, so it is not used; use a store that honours conditional writes", thrownBy: "backends ObjectStoreError (object-client verifyConditions)", exit: 1 },
  backend_url_invalid: { meaning: "an object store's backend URL (or a run fence naming one) is malformed: a bad bucket name, endpoint or region, credentials in the URL, or . and .. in its path; refused", thrownBy: "backends ObjectStoreError (s3, gs, azblob clients; object-adapter runFenceFromEnv)", exit: 1 },

  // ---- provider/logic ----
  missing_credentials: { meaning: "no base URL or API key for a profile the groups use", thrownBy: "logic MissingCredentialsError", exit: 1 },
  user_group_exists: { meaning: "the service already has a group with this userGroupId that this stack did not create; nothing was changed", thrownBy: "logic UserGroupExistsError" },
  user_group_gone: { meaning: "a token rotation of a group the service no longer has; `pulumi refresh`, then `up` creates it again", thrownBy: "logic operations (rotate)" },

  // ---- provider/resource, provider/plugin ----
  import_not_supported: { meaning: "Pulumi's import option on a UserGroup, which dynamic resources cannot use; set adoptExisting: true instead", thrownBy: "resource ImportNotSupportedError" },
  unknown_resource_type: { meaning: "the provider plugin was asked for a resource other than user-groups:index:UserGroup", thrownBy: "plugin UnknownResourceTypeError" },

  // ---- fake-server ----
  client_gone: { meaning: "the fake server's client closed the connection before the answer", thrownBy: "fake-server ClientGone" },
  invalid_options: { meaning: "startFakeServer's options break their schema (each problem named)", thrownBy: "fake-server options" },
  invalid_fault_rule: { meaning: "a fault rule given to the fake server breaks its schema", thrownBy: "fake-server server" },
  invalid_api_keys_file: { meaning: "--api-keys-file unreadable, not a regular file, open to others or owned by another user", thrownBy: "fake-server key-sources" },
  invalid_data_file: { meaning: "the fake server's data file is not JSON or not its state; move it away to start empty", thrownBy: "fake-server persistence" },

  // ---- testing kit, conformance kit ----
  invalid_seed: { meaning: "a seed of the fake server (seed file, `seed` option, `POST /__admin/seed`) breaks its schema, or repeats an id, a token or a team_id; nothing was seeded", thrownBy: "fake-server seed" },
  unknown_namespace: { meaning: "a fake-server namespace that does not exist (or was closed); create one with server.namespace() or POST /__admin/namespaces", thrownBy: "fake-server namespaces" },
  too_many_namespaces: { meaning: "the fake server already holds its most namespaces (maxNamespaces); close some (namespace.close(), DELETE /__admin/namespaces/<id>)", thrownBy: "fake-server namespaces" },
  requests_not_as_expected: { meaning: "a test's assertion on the requests a run sent failed; the message shows expected and sent, redacted", thrownBy: "testing expectRequests" },
  test_stack_failed: { meaning: "a pulumi-user-groups/testing stack could not be set up or its run failed; the message says which step", thrownBy: "testing createTestStack" },
  conformance_not_enabled: { meaning: "user-groups conformance runs only with USER_GROUPS_CONFORMANCE=1 in its environment (it creates and deletes groups on the service)", thrownBy: "conformance kit (cli)", exit: 2 },
  conformance_refused: { meaning: "user-groups conformance refused to start: a Customer key without --allow-customer, a prefix under 3 characters, no key, or a bad base URL", thrownBy: "conformance kit (cli)", exit: 2 },
  conformance_disagreement: { meaning: "user-groups conformance found the target disagreeing with the contract (or a fixture) in at least one check; the table lists each", thrownBy: "conformance kit (cli)", exit: 1 },
  invalid_fixture: { meaning: "a conformance fixture file is not JSON, not a fixture of this version, or larger than its limit", thrownBy: "conformance kit fixture", exit: 2 },

  // ---- the contract's codes (W3) ----
  ...SERVICE_CODES,
} as const satisfies Record<string, ErrorCodeEntry>;

/** A code of the catalogue: what `UserGroupsError`'s constructor accepts. */
export type ErrorCode = keyof typeof ERROR_CODES;

/**
 * A code from outside the catalogue, kept as it came: a service's error code the
 * contract does not list, or a network failure's system code (`ECONNREFUSED`,
 * `UND_ERR_HEADERS_TIMEOUT`). Only a `UserGroupApiError` carries one.
 */
export type ForeignErrorCode = string & { readonly __foreignErrorCode: true };

/** The codes of the catalogue, in its order. */
export const ERROR_CODE_LIST: readonly ErrorCode[] = Object.keys(ERROR_CODES) as ErrorCode[];

export function isErrorCode(code: string): code is ErrorCode {
  return Object.prototype.hasOwnProperty.call(ERROR_CODES, code);
}

/** @internal The one way to a code outside the catalogue: for the HTTP client's errors only (client/errors.ts). */
export function foreignErrorCode(code: string): ErrorCode | ForeignErrorCode {
  return isErrorCode(code) ? code : (code as ForeignErrorCode);
}
