// Command-line parsing for user-groups-fake-server, as a pure function.
import { parseArgs } from "node:util";
import { ENVIRONMENTS, type Environment } from "../provider/wire/schemas.js";
import type { ApiKeyConfig } from "./auth.js";
import { DEFAULT_HOST } from "./options.js";

export const USAGE = `usage: user-groups-fake-server [options]

  --host HOST             interface to listen on (default ${DEFAULT_HOST})
  --port PORT             port, 0 = any free port (default 0)
  --api-key KEY=ENV[:ro]  accept KEY for environment ENV (Customer or Testing);
                          :ro makes it read-only; repeatable. Without any, one
                          Customer read-write key is generated and printed to stderr
  --data-file PATH        keep the state in PATH across restarts (atomic writes)
  --rate-limit N/SECONDS  at most N requests per SECONDS per API key (429 past it)
  --log                   log one line per request to stderr (never tokens or keys)
  --admin-token TOKEN     require X-Admin-Token: TOKEN on /__admin/ (needed off loopback)
  --help                  show this text`;

export interface CliConfig {
  host: string;
  port: number;
  apiKeys: ApiKeyConfig[];
  dataFile?: string;
  rateLimit?: { requests: number; windowSeconds: number };
  log: boolean;
  adminToken?: string;
}

export type CliParse = { kind: "run"; config: CliConfig } | { kind: "help" } | { kind: "error"; message: string };

function parseApiKey(spec: string): ApiKeyConfig | string {
  const eq = spec.lastIndexOf("=");
  if (eq <= 0) return "--api-key must look like KEY=ENV or KEY=ENV:ro";
  const key = spec.slice(0, eq);
  let env = spec.slice(eq + 1);
  const readOnly = env.endsWith(":ro");
  if (readOnly) env = env.slice(0, -3);
  if (!(ENVIRONMENTS as readonly string[]).includes(env)) {
    return `--api-key: environment must be one of ${ENVIRONMENTS.join(", ")} (got "${env}")`;
  }
  if (!/^[\x21-\x7e]+$/.test(key)) return "--api-key: the key must be printable ASCII without spaces";
  return { key, environment: env as Environment, readOnly };
}

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
        "rate-limit": { type: "string" },
        log: { type: "boolean" },
        "admin-token": { type: "string" },
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
    const parsed = parseApiKey(spec);
    if (typeof parsed === "string") return { kind: "error", message: parsed };
    if (config.apiKeys.some((k) => k.key === parsed.key)) return { kind: "error", message: "--api-key: a key is given twice" };
    config.apiKeys.push(parsed);
  }
  if (values["data-file"] !== undefined) {
    if (values["data-file"] === "") return { kind: "error", message: "--data-file must not be empty" };
    config.dataFile = values["data-file"];
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
  return { kind: "run", config };
}
