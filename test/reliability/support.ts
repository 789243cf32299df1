// Shared pieces of the reliability suite: a fake server whose every log line is
// kept, a stack whose program declares whatever the test holds, convergence
// checks, and a scan for secrets in everything a run leaves behind.
import type { Stack } from "@pulumi/pulumi/automation";
import { readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, expect } from "vitest";
import { type FakeServer, startFakeServer } from "../../fake-server";
import type { UserGroupArgs } from "../../provider/resource/user-group";
import { stackOutputs } from "../support/run-results";
import { createUserGroupStack, loadPackage, type StackHandle } from "../support/user-group-stack";

export const CUSTOMER_KEY = "reliability-customer-key-0001";
export const CUSTOMER_RO_KEY = "reliability-customer-ro-key-0002";
export const TESTING_KEY = "reliability-testing-key-0003";
export const API_KEYS = [CUSTOMER_KEY, CUSTOMER_RO_KEY, TESTING_KEY];

/** Fast retries so that a fault costs milliseconds, not seconds (the policy's shape is unchanged). */
export const FAST_RETRIES: Record<string, string> = {
  USER_GROUPS_RETRY_BASE_DELAY_MS: "40",
  USER_GROUPS_RETRY_MAX_DELAY_MS: "400",
  USER_GROUPS_DEBUG: "1",
};

export interface ReliabilityServer {
  readonly server: FakeServer;
  /** Every line the fake server logged. */
  readonly log: string[];
  /** Every token the server held at any sampled moment. */
  readonly tokens: Set<string>;
  /** Samples the server's tokens now. */
  sample(): void;
  close(): Promise<void>;
}

export async function startReliabilityServer(options: { rateLimit?: { requests: number; windowSeconds: number } } = {}): Promise<ReliabilityServer> {
  const log: string[] = [];
  const server = await startFakeServer({
    apiKeys: [
      { key: CUSTOMER_KEY, environment: "Customer" },
      { key: CUSTOMER_RO_KEY, environment: "Customer", readOnly: true },
      { key: TESTING_KEY, environment: "Testing" },
    ],
    log: (line) => log.push(line),
    journalSize: 100_000,
    ...(options.rateLimit ? { rateLimit: options.rateLimit } : {}),
  });
  const tokens = new Set<string>();
  const sample = () => {
    for (const g of server.groups()) tokens.add(g.token);
  };
  // Tokens can live for milliseconds (a rotation followed by another): sample often.
  const timer = setInterval(sample, 20);
  timer.unref();
  return {
    server,
    log,
    tokens,
    sample,
    close: async () => {
      clearInterval(timer);
      sample();
      await server.close();
    },
  };
}

export interface GroupStack {
  readonly handle: StackHandle;
  readonly stack: Stack;
  /** userGroupId -> args; the program declares exactly these (resource name = userGroupId). */
  declared: Map<string, UserGroupArgs>;
  /** Engine stdout and stderr of every run. */
  readonly output: string[];
  readonly run: { onOutput: (line: string) => void; onError: (line: string) => void };
}

export function tokenExport(id: string): string {
  return `token_${id.replace(/[^A-Za-z0-9]/g, "_")}`;
}

export async function createGroupStack(
  label: string,
  baseUrl: string,
  apiKey: string,
  env: Record<string, string> = {},
  /** "env": credentials from USER_GROUPS_BASE_URL / USER_GROUPS_API_KEY only, none in stack config. */
  credentials: "config" | "env" = "config",
): Promise<GroupStack> {
  const { UserGroup } = loadPackage();
  const state: { declared: Map<string, UserGroupArgs> } = { declared: new Map() };
  const handle = await createUserGroupStack(
    label,
    async () => {
      const exports: Record<string, unknown> = {};
      for (const [id, args] of state.declared) exports[tokenExport(id)] = new UserGroup(id, args).token;
      return exports;
    },
    credentials === "config" ? { "user-groups:baseUrl": { value: baseUrl }, "user-groups:apiKey": { value: apiKey, secret: true } } : {},
    credentials === "config" ? env : { ...env, USER_GROUPS_BASE_URL: baseUrl, USER_GROUPS_API_KEY: apiKey },
  );
  const output = handle.output;
  return {
    handle,
    stack: handle.stack,
    get declared() {
      return state.declared;
    },
    set declared(value) {
      state.declared = value;
    },
    output,
    run: { onOutput: (line) => output.push(line), onError: (line) => output.push(line) },
  };
}

export function groupsOf(count: number, prefix: string, extra: Partial<UserGroupArgs> = {}): Map<string, UserGroupArgs> {
  const declared = new Map<string, UserGroupArgs>();
  for (let i = 0; i < count; i++) {
    const id = `${prefix}-${i}`;
    declared.set(id, { name: `Group ${prefix} ${i}`, userGroupId: id, mapping: { sales: `dw-${i}` }, properties: { n: i }, ...extra });
  }
  return declared;
}

/**
 * The server holds exactly one group per declared group (nothing else in the
 * environment), with the declared fields, and every token output is the server's.
 */
export async function expectConverged(server: FakeServer, gs: GroupStack, environment = "Customer"): Promise<void> {
  const held = server.groups().filter((g) => g.environment === environment);
  expect(held.map((g) => g.user_group_id).sort()).toEqual([...gs.declared.keys()].sort());
  const outputs = await stackOutputs(gs.stack);
  for (const [id, args] of gs.declared) {
    const group = held.find((g) => g.user_group_id === id)!;
    expect(group.name).toBe(args.name);
    expect(group.mapping).toEqual(args.mapping ?? {});
    const out = outputs[tokenExport(id)];
    expect(out?.secret).toBe(true);
    expect(out?.value).toBe(group.token);
  }
}

/** Every file a file backend holds (state, history, backups, locks), concatenated. */
export function readBackendFiles(backendDir: string): string {
  const parts: string[] = [];
  for (const file of readdirSync(backendDir, { recursive: true, encoding: "utf8" })) {
    const full = path.join(backendDir, file);
    if (statSync(full).isFile()) parts.push(readFileSync(full, "latin1"));
  }
  return parts.join("\n");
}

/**
 * Every place a secret could leak to, by name: the server's log and journal,
 * and each stack's backend files and engine output.
 */
export function placesToScan(rs: ReliabilityServer, stacks: readonly GroupStack[]): Record<string, string> {
  const places: Record<string, string> = { "server log": rs.log.join("\n"), "server journal": JSON.stringify(rs.server.journal()) };
  for (const gs of stacks) {
    places[`${gs.handle.env.backendDir} files`] = readBackendFiles(gs.handle.env.backendDir);
    places[`${gs.handle.env.workDir} engine output`] = gs.output.join("");
  }
  return places;
}

/** Fails naming where a secret was found (never the secret itself). */
export function expectNoSecrets(places: Record<string, string>, secrets: Iterable<string>): void {
  const found: string[] = [];
  let count = 0;
  for (const secret of secrets) {
    count += 1;
    for (const [where, text] of Object.entries(places)) if (text.includes(secret)) found.push(`secret #${count} in ${where}`);
  }
  expect(count).toBeGreaterThan(0);
  expect(found).toEqual([]);
}

export async function failureOf(promise: Promise<unknown>): Promise<Error> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(Error);
  return error as Error;
}

/**
 * One reliability server for the whole file (`onStart` receives it) and the
 * stacks its tests create, all cleaned up after the file. Returns that list:
 * push every stack made.
 */
export function useReliabilityServer(onStart: (rs: ReliabilityServer) => void): GroupStack[] {
  let rs: ReliabilityServer | undefined;
  const stacks: GroupStack[] = [];
  beforeAll(async () => {
    rs = await startReliabilityServer();
    onStart(rs);
  });
  afterAll(async () => {
    await rs?.close();
    for (const gs of stacks) await gs.handle.cleanup();
  });
  return stacks;
}
