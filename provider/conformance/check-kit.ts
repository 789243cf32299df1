// The pieces the conformance checks are made of (checks.ts, checks-wire-tests.ts):
// what a check is, and requests reduced to facts that never hold a token or a key.
import type { Environment } from "../wire/schemas";
import type { Answer, SendOptions } from "./session";

/** A fact about the answers: never a token or a key. */
export type FactValue = string | number | boolean | null | readonly string[];
export type Facts = Record<string, FactValue>;

export interface CheckContext {
  send(method: string, body: unknown, options?: SendOptions): Promise<Answer>;
  /** A group id for this check: `<prefix>-<run id>-<slug>`, written to the ledger before it is returned. */
  id(slug: string): Promise<string>;
  readonly readOnly: boolean;
  /** The key's environment, when known. */
  readonly environment: Environment | undefined;
}

export type CheckMode = "any" | "write" | "read-only";

export interface Check {
  /** Stable, kebab-case: the fixture's key. */
  readonly id: string;
  /** The contract's clause (W1...). */
  readonly clause: string;
  readonly title: string;
  readonly mode: CheckMode;
  /** What the contract says the facts are. */
  expected(ctx: CheckContext): Facts;
  run(ctx: CheckContext): Promise<Facts>;
}

export type Json = Record<string, unknown>;
export const obj = (v: unknown): Json => (v !== null && typeof v === "object" && !Array.isArray(v) ? (v as Json) : {});
export const TOKEN = /^[0-9a-f]{64}$/;

/** `{ status, code }`: the error's code, or "ok" for `success: 1`, or "(none)". */
export function outcome(answer: Answer): Facts {
  const body = obj(answer.json);
  const code = body["success"] === 1 ? "ok" : typeof obj(body["error"])["code"] === "string" ? String(obj(body["error"])["code"]) : "(none)";
  return { status: answer.status, code };
}

/** The W3 shape of a failure: success 0, an error with a code and a message. */
export function errorShape(answer: Answer): boolean {
  const body = obj(answer.json);
  const error = obj(body["error"]);
  return body["success"] === 0 && typeof error["code"] === "string" && /^[a-z][a-z0-9_]*$/.test(error["code"]) && typeof error["message"] === "string";
}

export const fields = (value: unknown): string[] => Object.keys(obj(value)).sort();
export const group = (answer: Answer): Json => obj(obj(answer.json)["user_group"]);
export const tokenOf = (answer: Answer): string => String(group(answer)["token"] ?? "");

/** A failure check of one request: its status and code. */
export function failure(
  id: string,
  clause: string,
  title: string,
  mode: CheckMode,
  status: number,
  code: string,
  send: (ctx: CheckContext) => Promise<Answer>,
  extra?: { expected: Facts; observe: (answer: Answer) => Facts },
): Check {
  return {
    id,
    clause,
    title,
    mode,
    expected: () => ({ status, code, "W3 error body": true, ...extra?.expected }),
    run: async (ctx) => {
      const answer = await send(ctx);
      return { ...outcome(answer), "W3 error body": errorShape(answer), ...extra?.observe(answer) };
    },
  };
}

/**
 * The id every request that must not create sends: prefixed and in the ledger like the
 * others, so a target that wrongly accepts one leaves nothing the clean-up misses.
 */
export const NOT_CREATED = "must-not-exist";
export const valid = async (ctx: CheckContext): Promise<Json> => ({ name: "Conformance", user_group_id: await ctx.id(NOT_CREATED) });

/** Creates a group for a check; the id is in the ledger first. */
export async function create(ctx: CheckContext, slug: string, extra: Json = {}): Promise<{ id: string; answer: Answer }> {
  const id = await ctx.id(slug);
  return { id, answer: await ctx.send("GET", { name: `Conformance ${slug}`, user_group_id: id, ...extra }) };
}

export const authFailure = (id: string, title: string, header: (key: string) => string | null): Check =>
  failure(id, "W1", title, "any", 401, "unauthorized", async (ctx) => ctx.send("GET", await valid(ctx), { authorization: header("") }), {
    expected: { "WWW-Authenticate": true },
    observe: (a) => ({ "WWW-Authenticate": a.headers["www-authenticate"] !== undefined }),
  });

/** A request that breaks a field rule; `body` gets the check's (never created) id. */
/** A request of `method` without Authorization: 401 comes before any other refusal. */
export const authFailureOn = (id: string, title: string, method: string): Check =>
  failure(id, "W1", title, "any", 401, "unauthorized", async (ctx) => ctx.send(method, { user_group_id: await ctx.id(NOT_CREATED), current_token: "0".repeat(64) }, { authorization: null }));

export const field400 = (id: string, title: string, code: string, body: (groupId: string) => Json): Check =>
  failure(id, "W4", title, "any", 400, code, async (ctx) => ctx.send("GET", body(await ctx.id(NOT_CREATED))));

/** Facts of one request per variant: `{ <label>: "<status> <code>" }`. */
export function variants(
  id: string,
  clause: string,
  title: string,
  mode: CheckMode,
  rows: ReadonlyArray<readonly [label: string, expected: string, send: (ctx: CheckContext) => Promise<Answer>]>,
): Check {
  return {
    id,
    clause,
    title,
    mode,
    expected: () => Object.fromEntries(rows.map(([label, expected]) => [label, expected])),
    run: async (ctx) => {
      const facts: Facts = {};
      for (const [label, , send] of rows) {
        const o = outcome(await send(ctx));
        facts[label] = `${o["status"]} ${o["code"]}`;
      }
      return facts;
    },
  };
}

/** A body of exactly `size` bytes: `body` with a pad field. */
export function padded(body: Json, size: number): string {
  const base = JSON.stringify({ ...body, pad: "" });
  return JSON.stringify({ ...body, pad: "x".repeat(size - base.length) });
}

/** `{"a":{"a":...1}}` nested `depth` objects deep. */
export const nested = (depth: number): string => `${'{"a":'.repeat(depth - 1)}{"a":1}${"}".repeat(depth - 1)}`;

/** A body that passes auth, media type and JSON and stops at the name: 400 invalid_name, nothing created. */
export const noName = async (ctx: CheckContext): Promise<Json> => ({ user_group_id: await ctx.id(NOT_CREATED) });

