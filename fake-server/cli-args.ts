// Command-line parsing for user-groups-fake-server, as a pure function.
import { parseArgs } from "node:util";
import type { ApiKeyConfig } from "./auth.js";
import { ENV_API_KEYS, parseApiKeySpec } from "./key-sources.js";
import {
  DEFAULT_HEADERS_TIMEOUT_MS,
  DEFAULT_HOST,
  DEFAULT_IDLE_TIMEOUT_MS,
  DEFAULT_MAX_CONNECTIONS,
  DEFAULT_MAX_CONNECTIONS_PER_ADDRESS,
  DEFAULT_MAX_GROUP_BYTES,
  DEFAULT_MAX_GROUPS,
  DEFAULT_MAX_TOTAL_BYTES,
  DEFAULT_REQUEST_TIMEOUT_MS,
} from "./options.js";

export const ENV_ADMIN_TOKEN = "USER_GROUPS_FAKE_ADMIN_TOKEN";

export const USAGE = `usage: user-groups-fake-server [options]

  --host HOST             interface to listen on (default ${DEFAULT_HOST})
  --port PORT             port, 0 = any free port (default 0)
  --api-key KEY=ENV[:ro]  accept KEY for environment ENV (Customer or Testing);
                          :ro makes it read-only; repeatable. Visible to other
                          local users (ps): for real keys use one of these two
  --api-keys-file PATH    one KEY=ENV[:ro] per line (# comments); the file must
                          be yours and mode 600 or stricter
  (env ${ENV_API_KEYS})  the same specs, separated by commas or newlines
                          Without any key, one Customer read-write key is
                          generated and printed to stderr
  --data-file PATH        keep the state in PATH across restarts (atomic writes)
  --pid-file PATH         write the server's process id to PATH before printing
                          "listening on" (removed when it stops), so a script
                          stops it with: kill "$(cat PATH)"
  --seed-file PATH        groups to hold from the start: a JSON array of
                          {user_group_id, name, mapping?, properties?,
                          environment?, team_id?, token?} (fixed tokens and
                          team ids when given), or {"groups": [...]}
  --rate-limit N/SECONDS  at most N requests per SECONDS per API key (429 past it)
  --log                   log one line per request to stderr (never tokens or keys)
  --admin-token TOKEN     require X-Admin-Token: TOKEN on /__admin/ (needed off
                          loopback); or set ${ENV_ADMIN_TOKEN}, which ps does not show
  --headers-timeout MS    a request's headers must arrive within MS (default ${DEFAULT_HEADERS_TIMEOUT_MS})
  --request-timeout MS    the whole request must arrive within MS (default ${DEFAULT_REQUEST_TIMEOUT_MS})
  --idle-timeout MS       close a connection that sends nothing for MS while no
                          request is in progress (default ${DEFAULT_IDLE_TIMEOUT_MS})
  --max-connections N     connections open at once (default ${DEFAULT_MAX_CONNECTIONS})
  --max-connections-per-address N
                          connections open at once from one address; loopback
                          clients all share one (default ${DEFAULT_MAX_CONNECTIONS_PER_ADDRESS}). At a
                          cap a new connection replaces the oldest idle one, or
                          is refused when none is idle
  --max-groups N          groups the store holds at most, both environments
                          (default ${DEFAULT_MAX_GROUPS}); a create past it: 507 storage_full
  --max-group-bytes N     one group's name, id, mapping and properties as JSON,
                          at most (default ${DEFAULT_MAX_GROUP_BYTES}); past it: 413 group_too_large
  --max-total-bytes N     all groups' bytes together, at most (default ${DEFAULT_MAX_TOTAL_BYTES});
                          a write past it: 507 storage_full
  --help                  show this text`;

export interface CliConfig {
  host: string;
  port: number;
  apiKeys: ApiKeyConfig[];
  dataFile?: string;
  /** Where the process id goes once listening (the CLI's own, not a server option). */
  pidFile?: string;
  seedFile?: string;
  rateLimit?: { requests: number; windowSeconds: number };
  log: boolean;
  adminToken?: string;
  apiKeysFile?: string;
  headersTimeoutMs?: number;
  requestTimeoutMs?: number;
  maxConnections?: number;
  maxConnectionsPerAddress?: number;
  idleTimeoutMs?: number;
  maxGroups?: number;
  maxGroupBytes?: number;
  maxTotalBytes?: number;
}

export type CliParse = { kind: "run"; config: CliConfig } | { kind: "help" } | { kind: "error"; message: string };

export function parseCli(argv: readonly string[]): CliParse {
  let values;
  try {
    ({ values } = parseArgs({
      args: [...argv],
      strict: true,
      allowPositionals: false,
      options: {
        host: { type: "string" },
        port: { type: "string" },
        "api-key": { type: "string", multiple: true },
        "data-file": { type: "string" },
        "pid-file": { type: "string" },
        "seed-file": { type: "string" },
        "rate-limit": { type: "string" },
        log: { type: "boolean" },
        "admin-token": { type: "string" },
        "api-keys-file": { type: "string" },
        "headers-timeout": { type: "string" },
        "request-timeout": { type: "string" },
        "max-connections": { type: "string" },
        "max-connections-per-address": { type: "string" },
        "idle-timeout": { type: "string" },
        "max-groups": { type: "string" },
        "max-group-bytes": { type: "string" },
        "max-total-bytes": { type: "string" },
        help: { type: "boolean", short: "h" },
      },
    }));
  } catch (error) {
    // parseArgs messages can quote the argument; an API key could be in it.
    const message = error instanceof Error ? error.message : String(error);
    return { kind: "error", message: message.replace(/'[^']*=[^']*'/g, "'…'") };
  }
  if (values.help === true) return { kind: "help" };

  const config: CliConfig = { host: values.host ?? DEFAULT_HOST, port: 0, apiKeys: [], log: values.log === true };
  if (config.host === "") return { kind: "error", message: "--host must not be empty" };
  if (values.port !== undefined) {
    if (!/^\d{1,5}$/.test(values.port) || Number(values.port) > 65535) {
      return { kind: "error", message: `--port must be an integer from 0 to 65535 (got "${values.port}")` };
    }
    config.port = Number(values.port);
  }
  for (const spec of values["api-key"] ?? []) {
    const parsed = parseApiKeySpec(spec, "--api-key");
    if (typeof parsed === "string") return { kind: "error", message: parsed };
    if (config.apiKeys.some((k) => k.key === parsed.key)) return { kind: "error", message: "--api-key: a key is given twice" };
    config.apiKeys.push(parsed);
  }
  if (values["data-file"] !== undefined) {
    if (values["data-file"] === "") return { kind: "error", message: "--data-file must not be empty" };
    config.dataFile = values["data-file"];
  }
  if (values["pid-file"] !== undefined) {
    if (values["pid-file"] === "") return { kind: "error", message: "--pid-file must not be empty" };
    config.pidFile = values["pid-file"];
  }
  if (values["seed-file"] !== undefined) {
    if (values["seed-file"] === "") return { kind: "error", message: "--seed-file must not be empty" };
    config.seedFile = values["seed-file"];
  }
  if (values["rate-limit"] !== undefined) {
    const m = /^(\d+)\/(\d+(?:\.\d+)?)$/.exec(values["rate-limit"]);
    const requests = Number(m?.[1]);
    const windowSeconds = Number(m?.[2]);
    if (m === null || !(requests > 0) || !(windowSeconds > 0)) {
      return { kind: "error", message: `--rate-limit must look like N/SECONDS with both above 0, e.g. 180/60 (got "${values["rate-limit"]}")` };
    }
    config.rateLimit = { requests, windowSeconds };
  }
  if (values["admin-token"] !== undefined) {
    if (values["admin-token"] === "") return { kind: "error", message: "--admin-token must not be empty" };
    config.adminToken = values["admin-token"];
  }
  if (values["api-keys-file"] !== undefined) {
    if (values["api-keys-file"] === "") return { kind: "error", message: "--api-keys-file must not be empty" };
    config.apiKeysFile = values["api-keys-file"];
  }
  const limits = [
    ["headers-timeout", "headersTimeoutMs"],
    ["request-timeout", "requestTimeoutMs"],
    ["max-connections", "maxConnections"],
    ["max-connections-per-address", "maxConnectionsPerAddress"],
    ["idle-timeout", "idleTimeoutMs"],
    ["max-groups", "maxGroups"],
    ["max-group-bytes", "maxGroupBytes"],
    ["max-total-bytes", "maxTotalBytes"],
  ] as const;
  // Timeouts stay below what a timer holds (2^31 ms); byte limits may pass a GiB.
  for (const [flag, field] of limits) {
    const text = values[flag];
    if (text === undefined) continue;
    if (!(flag.endsWith("-bytes") ? /^\d{1,12}$/ : /^\d{1,9}$/).test(text) || Number(text) < 1) return { kind: "error", message: `--${flag} must be a whole number of 1 or more (got "${text}")` };
    config[field] = Number(text);
  }
  return { kind: "run", config };
}
