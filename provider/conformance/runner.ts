// Runs the contract's checks (checks.ts) against a target, safely, as providers'
// acceptance tests do: a prefix of 3+ characters and a run id on every id it
// creates (in the ledger before the request), a Customer key refused unless
// allowed, paced under the documented rate limit (180 a minute; default 150),
// the read-only subset for a read-only key, and a clean-up of everything it
// created on every way out. Reports each disagreement: check, fact, expected,
// observed. The switch that must be on (USER_GROUPS_CONFORMANCE=1) is the
// command's (cli/conformance-command.ts); a library caller opts in by calling.
import { randomBytes } from "node:crypto";
import { isDeepStrictEqual } from "node:util";
import { type Clock, systemClock } from "../clock";
import { UserGroupsError } from "../wire/errors";
import { isLoopbackHost } from "../wire/loopback";
import type { Environment } from "../wire/schemas";
import { CHECKS, type Check, type CheckContext, type Facts, type FactValue } from "./checks";
import type { Fixture } from "./fixture";
import { DEFAULT_LEDGER, Ledger } from "./ledger";
import { type Pace, Session } from "./session";

/** The service's documented limit: 180 requests a minute per key. */
export const DOCUMENTED_RATE_LIMIT: Pace = { requests: 180, windowSeconds: 60 };
/** The pace a run keeps by default: under the documented limit, with room for the key's other users. */
export const DEFAULT_PACE: Pace = { requests: 150, windowSeconds: 60 };
export const DEFAULT_PREFIX = "ugconf";
/** A prefix: 3 to 32 lowercase letters, digits and dashes, starting with a letter or digit. */
export const PREFIX_PATTERN = /^[a-z0-9][a-z0-9-]{2,31}$/;

export interface ConformanceOptions {
  readonly baseUrl: string;
  readonly apiKey: string;
  /** Default `ugconf`. */
  readonly prefix?: string;
  /** The environment the key belongs to, if you know it: a declared Customer is refused before any request. */
  readonly environment?: Environment;
  /** Run with a key of the Customer environment (production groups live there). */
  readonly allowCustomer?: boolean;
  /** Default 150 a minute; above the documented 180 a minute, or "off", only for a loopback target. */
  readonly pace?: Pace | "off";
  /** The ledger file (default `.user-groups-conformance-ledger.json` in the current directory). */
  readonly ledger?: string;
  /** Compare with these facts (a recorded fixture) instead of the contract's. */
  readonly fixture?: Fixture;
  /** Only these checks (ids). */
  readonly only?: readonly string[];
  readonly clock?: Clock;
}

export interface CheckResult {
  readonly id: string;
  readonly clause: string;
  readonly title: string;
  readonly expected: Facts;
  readonly observed: Facts;
  /** A check that could not run to its end (a network failure...): why. */
  readonly error?: string;
  readonly skipped?: string;
}

export interface Disagreement {
  readonly check: string;
  readonly clause: string;
  readonly fact: string;
  readonly expected: FactValue | undefined;
  readonly observed: FactValue | undefined;
}

export interface ConformanceReport {
  readonly target: string;
  readonly runId: string;
  readonly prefix: string;
  readonly readOnly: boolean;
  readonly environment: Environment | undefined;
  readonly results: CheckResult[];
  readonly disagreements: Disagreement[];
  /** Requests sent, clean-up included. */
  readonly requests: number;
  /** Ids this run made that the clean-up could not delete (still in the ledger, for --sweep). */
  readonly leftovers: string[];
}

function refused(message: string): UserGroupsError {
  return new UserGroupsError("conformance_refused", message);
}

/** Checks the target and pace; the base URL's origin. */
function targetOf(options: ConformanceOptions): { origin: string; pace: Pace | undefined } {
  let url: URL;
  try {
    url = new URL(options.baseUrl);
  } catch {
    throw refused("--base-url is not a URL");
  }
  const loopback = isLoopbackHost(url.hostname.replace(/^\[|\]$/g, ""));
  if (url.protocol !== "https:" && !(url.protocol === "http:" && loopback)) throw refused("--base-url must be https:// (http:// only for a loopback host)");
  if (url.username !== "" || url.password !== "") throw refused("--base-url must not hold credentials");
  const pace = options.pace ?? DEFAULT_PACE;
  if (pace === "off" || pace.requests / pace.windowSeconds > DOCUMENTED_RATE_LIMIT.requests / DOCUMENTED_RATE_LIMIT.windowSeconds) {
    if (!loopback) throw refused(`the pace must stay within the documented rate limit (${DOCUMENTED_RATE_LIMIT.requests}/${DOCUMENTED_RATE_LIMIT.windowSeconds}) for a target that is not loopback`);
  }
  if (pace !== "off" && !(pace.requests > 0 && pace.windowSeconds > 0)) throw refused("the pace must be above 0");
  return { origin: `${url.origin}${url.pathname.replace(/\/+$/, "")}`, pace: pace === "off" ? undefined : pace };
}

/** Runs the checks; every disagreement is in the report (the run itself fails only when it is refused). */
export async function runConformance(options: ConformanceOptions): Promise<ConformanceReport> {
  const prefix = options.prefix ?? DEFAULT_PREFIX;
  if (!PREFIX_PATTERN.test(prefix)) throw refused("--prefix must be 3 to 32 lowercase letters, digits or dashes (ids it creates start with it)");
  if (options.apiKey === "") throw refused("no API key: set USER_GROUPS_API_KEY");
  if (options.environment === "Customer" && options.allowCustomer !== true) {
    throw refused("the key is declared a Customer key: production groups live there; pass --allow-customer to run anyway");
  }
  const { origin, pace } = targetOf(options);
  const runId = randomBytes(4).toString("hex");
  const session = new Session(origin, options.apiKey, pace, options.clock ?? systemClock);
  const ledger = new Ledger(options.ledger ?? DEFAULT_LEDGER);
  const used: string[] = [];
  const id = async (slug: string): Promise<string> => {
    const full = slug.startsWith(`${prefix}-`) || slug.startsWith(`${prefix.toUpperCase()}-`) ? slug : `${prefix}-${runId}-${slug}`;
    ledger.add(prefix, full);
    used.push(full);
    return full;
  };
  try {
    const { readOnly, environment } = await probe(session, id, options);
    const ctx: CheckContext = { send: (m, b, o) => session.send(m, b, o), id, readOnly, environment };
    const results: CheckResult[] = [];
    for (const check of CHECKS) {
      if (options.only !== undefined && !options.only.includes(check.id)) continue;
      if ((check.mode === "write" && readOnly) || (check.mode === "read-only" && !readOnly)) continue;
      results.push(await runCheck(check, ctx, options.fixture));
    }
    const leftovers = await cleanUp(session, ledger, prefix, used);
    return { target: origin, runId, prefix, readOnly, environment, results, disagreements: disagreementsOf(results), requests: session.sent, leftovers };
  } catch (error) {
    await cleanUp(session, ledger, prefix, used).catch(() => []);
    throw error;
  }
}

/** Whether the key is read-only (a PUT of an unknown id: 403, else 404), and its environment (a probe group's tag). */
async function probe(session: Session, id: (slug: string) => Promise<string>, options: ConformanceOptions): Promise<{ readOnly: boolean; environment: Environment | undefined }> {
  const probeId = await id("probe");
  const kind = await session.send("PUT", { user_group_id: probeId });
  if (kind.status === 401) throw refused("the target refuses the key (401): check USER_GROUPS_API_KEY and --base-url");
  if (kind.status !== 403 && kind.status !== 404) throw refused(`the target answered the key probe with ${kind.status}, not 403 or 404: is --base-url the service?`);
  if (kind.status === 403) return { readOnly: true, environment: options.environment };
  // A read-write key: the probe group's tag tells its environment; it is deleted at once.
  const created = await session.send("GET", { name: "Conformance probe", user_group_id: probeId });
  const tagged = await session.send("PUT", { user_group_id: probeId });
  const token = (created.json as { user_group?: { token?: unknown } } | undefined)?.user_group?.token;
  if (typeof token === "string") await session.send("DELETE", { current_token: token });
  const tag = (tagged.json as { user_group?: { api_environment_tag?: unknown } } | undefined)?.user_group?.api_environment_tag;
  const environment = tag === "Customer" || tag === "Testing" ? tag : undefined;
  if (environment === "Customer" && options.allowCustomer !== true) {
    throw refused("the key belongs to the Customer environment (production groups live there): refused; pass --allow-customer to run anyway");
  }
  if (options.environment !== undefined && environment !== undefined && environment !== options.environment) {
    throw refused(`the key was declared ${options.environment} but belongs to ${environment}`);
  }
  return { readOnly: false, environment: environment ?? options.environment };
}

async function runCheck(check: Check, ctx: CheckContext, fixture: Fixture | undefined): Promise<CheckResult> {
  const recorded = fixture === undefined ? undefined : Object.hasOwn(fixture.checks, check.id) ? fixture.checks[check.id] : null;
  const base = { id: check.id, clause: check.clause, title: check.title };
  if (recorded === null) return { ...base, expected: {}, observed: {}, skipped: "not in the fixture" };
  const expected = recorded ?? check.expected(ctx);
  try {
    return { ...base, expected, observed: await check.run(ctx) };
  } catch (error) {
    return { ...base, expected, observed: {}, error: error instanceof Error ? `${error.name}: ${error.message}`.slice(0, 300) : "failed" };
  }
}

function disagreementsOf(results: readonly CheckResult[]): Disagreement[] {
  const out: Disagreement[] = [];
  for (const r of results) {
    if (r.skipped !== undefined) continue;
    if (r.error !== undefined) {
      out.push({ check: r.id, clause: r.clause, fact: "(the check failed)", expected: "to run", observed: r.error });
      continue;
    }
    const names = [...new Set([...Object.keys(r.expected), ...Object.keys(r.observed)])];
    for (const fact of names) {
      const expected = Object.hasOwn(r.expected, fact) ? r.expected[fact] : undefined;
      const observed = Object.hasOwn(r.observed, fact) ? r.observed[fact] : undefined;
      if (!isDeepStrictEqual(expected, observed)) out.push({ check: r.id, clause: r.clause, fact, expected, observed });
    }
  }
  return out;
}

/** Deletes every id given that still exists (PUT tells its token, DELETE removes it); strikes the gone ones off the ledger. Returns those left. */
async function cleanUp(session: Session, ledger: Ledger, prefix: string, ids: readonly string[]): Promise<string[]> {
  const gone: string[] = [];
  const left: string[] = [];
  for (const id of [...new Set(ids)]) {
    try {
      const found = await session.send("PUT", { user_group_id: id });
      if (found.status === 404) {
        gone.push(id);
        continue;
      }
      const token = (found.json as { user_group?: { token?: unknown } } | undefined)?.user_group?.token;
      if (found.status === 200 && typeof token === "string") {
        const deleted = await session.send("DELETE", { current_token: token, user_group_id: id });
        (deleted.status === 200 || deleted.status === 404 ? gone : left).push(id);
      } else {
        left.push(id);
      }
    } catch {
      left.push(id);
    }
  }
  ledger.remove(prefix, gone);
  return left;
}

export interface SweepOptions {
  readonly baseUrl: string;
  readonly apiKey: string;
  readonly prefix?: string;
  readonly pace?: Pace | "off";
  readonly ledger?: string;
  readonly clock?: Clock;
}

/** Removes the leftovers of earlier runs with this prefix (the ledger's ids): deleted where they exist, struck off where gone. */
export async function sweepConformance(options: SweepOptions): Promise<{ swept: number; left: string[] }> {
  const prefix = options.prefix ?? DEFAULT_PREFIX;
  if (!PREFIX_PATTERN.test(prefix)) throw refused("--prefix must be 3 to 32 lowercase letters, digits or dashes");
  if (options.apiKey === "") throw refused("no API key: set USER_GROUPS_API_KEY");
  const { origin, pace } = targetOf({ ...options, prefix });
  const ledger = new Ledger(options.ledger ?? DEFAULT_LEDGER);
  const ids = ledger.ids(prefix).filter((id) => id.toLowerCase().startsWith(`${prefix}-`));
  const session = new Session(origin, options.apiKey, pace, options.clock ?? systemClock);
  const left = await cleanUp(session, ledger, prefix, ids);
  return { swept: ids.length - left.length, left };
}

/** The disagreements as a table (plain text; the caller makes it safe for its terminal). */
export function formatDisagreements(report: ConformanceReport): string {
  const ran = report.results.filter((r) => r.skipped === undefined).length;
  const head = `${ran} checks against ${report.target} (${report.readOnly ? "read-only key: the read-only subset" : "read-write key"}${report.environment === undefined ? "" : `, ${report.environment}`}), run ${report.runId}, ${report.requests} requests`;
  if (report.disagreements.length === 0) return `${head}: all agree.\n`;
  const show = (v: FactValue | undefined): string => (v === undefined ? "(absent)" : JSON.stringify(v).slice(0, 80));
  const rows = [["check", "clause", "fact", "expected", "observed"], ...report.disagreements.map((d) => [d.check, d.clause, d.fact, show(d.expected), show(d.observed)])];
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  const line = (r: string[]): string => `| ${r.map((c, i) => c.padEnd(widths[i]!)).join(" | ")} |`;
  const checks = new Set(report.disagreements.map((d) => d.check)).size;
  return [
    `${head}: ${checks} disagree.`,
    line(rows[0]!),
    `|${widths.map((w) => "-".repeat(w + 2)).join("|")}|`,
    ...rows.slice(1).map(line),
    report.leftovers.length > 0 ? `${report.leftovers.length} groups could not be deleted; user-groups conformance --sweep removes them.` : "",
  ]
    .filter((l) => l !== "")
    .join("\n")
    .concat("\n");
}
