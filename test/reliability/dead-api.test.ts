// A dead API fails in bounded time with a message naming the address: nothing
// listening (connection refused), and a server that takes the request and
// never answers (a delay fault far longer than the client's timeouts).
// Retries and timeouts are shortened through the provider's environment
// overrides (USER_GROUPS_HTTP_TIMEOUT_MS, USER_GROUPS_MAX_ATTEMPTS).
import { describe, expect, it } from "vitest";
import { runOnly } from "../../provider/automation/engine/pulumi-cli";
import {
  createGroupStack,
  CUSTOMER_KEY,
  expectNoSecrets,
  failureOf,
  FAST_RETRIES,
  groupsOf,
  placesToScan,
  type ReliabilityServer,
  useReliabilityServer,
} from "./support";
import { refusedPort } from "../../testkit/free-port";
import { waitFor } from "../support/wait-for";

const TUNING = { ...FAST_RETRIES, USER_GROUPS_HTTP_TIMEOUT_MS: "800", USER_GROUPS_MAX_ATTEMPTS: "3" };
let rs: ReliabilityServer;
const stacks = useReliabilityServer((started) => (rs = started));

describe("a dead API", () => {
  it("connection refused: up fails within seconds, naming the address and ECONNREFUSED", async () => {
    // A port nothing listens on: bound once, then released.
    const url = `http://127.0.0.1:${await refusedPort()}`;
    const gs = await createGroupStack("dead-refused", url, CUSTOMER_KEY, TUNING);
    stacks.push(gs);
    gs.declared = groupsOf(2, "refused");
    const started = Date.now();
    const error = await failureOf(gs.stack.up(gs.run));
    const elapsed = Date.now() - started;
    expect(error.message).toContain(`no answer from ${url} (ECONNREFUSED)`);
    expect(error.message).toMatch(/failed after 3 attempts/);
    expect(elapsed).toBeLessThan(30_000);
  });

  it("a server that never answers: up fails within the timeouts, naming the address, and the late requests leave nothing behind after destroy", async () => {
    const gs = await createGroupStack("dead-silent", rs.server.url, CUSTOMER_KEY, TUNING);
    stacks.push(gs);
    rs.server.setFaults([{ method: "GET", action: "delay", delayMs: 4000 }]);
    gs.declared = groupsOf(2, "silent");
    const journalMark = rs.server.journal().length;
    const error = await failureOf(gs.stack.up(gs.run));
    const failedAt = Date.now();
    expect(error.message).toContain(`no answer from ${rs.server.url} (UND_ERR_HEADERS_TIMEOUT)`);
    expect(error.message).toMatch(/failed after 3 attempts/);
    expect(error.message).toMatch(/the request may have been carried out/);

    // The delayed GETs create the groups late, after the client gave up: the documented recovery
    // (adoptExisting) takes them over, and destroy leaves the server empty.
    rs.server.clearFaults();
    await waitFor(() => rs.server.groups().length >= 2, { timeoutMs: 15_000, what: "the delayed GETs to create their groups" });
    expect(rs.server.groups().map((g) => g.user_group_id).sort()).toEqual(["silent-0", "silent-1"]);
    // Bounded by the client's timeouts, counted from the first request (engine start-up, which a
    // busy machine stretches, is not the client's): 3 attempts x 0.8 s + backoff, well below the
    // 3 x 4 s that waiting for the server's answers would take.
    const lateGets = () => rs.server.journal().slice(journalMark).filter((entry) => entry.method === "GET");
    await waitFor(() => lateGets().length >= 2, { timeoutMs: 15_000, what: "the delayed GETs to be journaled" });
    const firstRequestAt = Math.min(...lateGets().map((entry) => Date.parse(entry.time)));
    expect(failedAt - firstRequestAt).toBeLessThan(12_000);
    for (const [id, args] of gs.declared) gs.declared.set(id, { ...args, adoptExisting: true });
    await runOnly(gs.stack).up(gs.run);
    await gs.stack.preview({ expectNoChanges: true, ...gs.run });
    await runOnly(gs.stack).destroy(gs.run);
    expect(rs.server.groups()).toEqual([]);
  });

  it("leaves no token and no API key in the state, the output or the server's log", () => {
    rs.sample();
    const places = placesToScan(rs, stacks);
    expect(rs.tokens.size).toBeGreaterThanOrEqual(2);
    expectNoSecrets(places, [...rs.tokens, CUSTOMER_KEY]);
  });
});
