// Issue 32 item 3, "linearizable per group", as reported: replica 1 removes a group
// and 1.5 s later replica 2 ensures it (either order is linearizable), as two fleets
// of one process on PostgreSQL and on a file backend, and as two OS processes on
// PostgreSQL. The checker: races-support.ts (fleet-races.test.ts forces the order).
import { describe, expect, it } from "vitest";
import { UserGroupFleet } from "../../../provider/automation";
import { backends, checkAgreement, optionsOf, postgresUrl, raceReplica, serviceGroup, sleep, useRaceBed } from "./races-support";

useRaceBed("fleet-races-timed");

describe.skipIf(process.platform !== "linux").each(backends)("a remove 1.5 s before an ensure of one group, on %s", (label, backendUrlOf) => {
  it("as reported: replica 1 removes, 1.5 s later replica 2 ensures", async () => {
    const backendUrl = backendUrlOf();
    const stack = `timed-${label === "PostgreSQL" ? "pg" : "file"}`;
    const id = `race-x-${stack}`;
    const setup = new UserGroupFleet(optionsOf(stack, backendUrl, "setup"));
    try {
      await setup.ensure({ name: "Anchor", userGroupId: `anchor-${stack}` });
      await setup.ensure({ name: `Race ${id}`, userGroupId: id });
    } finally {
      await setup.close();
    }
    const r1 = new UserGroupFleet(optionsOf(stack, backendUrl, "r1"));
    const r2 = new UserGroupFleet(optionsOf(stack, backendUrl, "r2"));
    try {
      const removed = r1.remove(id);
      await sleep(1500);
      const ensured = await r2.ensure({ name: `Race ${id}`, userGroupId: id });
      expect((await removed).change).toBe("delete");
      // Either order is linearizable; whichever it was, the token handed out was the service's then: the ensure ran
      // after the remove (the service holds the group it made, with that token) or before it (the group is gone).
      const held = serviceGroup(id);
      expect(held === undefined ? "removed after the ensure" : held.token).toBe(held === undefined ? "removed after the ensure" : ensured.token);
    } finally {
      await r1.close();
      await r2.close();
    }
    await checkAgreement(stack, backendUrl, id);
  }, 300_000);
});

describe.skipIf(process.platform !== "linux")("two replica processes on PostgreSQL", () => {
  it("replica 1 removes, 1.5 s later replica 2 ensures, then each does the other: the service, states and directory agree", async () => {
    const backendUrl = postgresUrl();
    const stack = "processes";
    const id = "race-x-processes";
    const setup = new UserGroupFleet(optionsOf(stack, backendUrl, "setup"));
    try {
      await setup.ensure({ name: "Anchor", userGroupId: "anchor-processes" });
      await setup.ensure({ name: `Race ${id}`, userGroupId: id });
    } finally {
      await setup.close();
    }
    const startAt = Date.now() + 5_000; // both processes loaded by then
    const [one, two] = await Promise.all([
      raceReplica(stack, backendUrl, "p1", startAt, [
        { at: 0, op: "remove", id },
        { at: 9_000, op: "ensure", id },
      ]),
      raceReplica(stack, backendUrl, "p2", startAt, [
        { at: 1_500, op: "ensure", id },
        { at: 9_500, op: "remove", id },
        { at: 12_000, op: "list", id },
      ]),
    ]);
    const history = [...one!, ...two!].sort((a, b) => a.started - b.started);
    console.log(`fleet-races processes: ${JSON.stringify(history.map(({ token: _t, ...rest }) => rest))}`);
    // Every call succeeded (none had to be retried), and every token handed out was the service's at the time it was
    // handed out: the one the service holds now, or one of a group removed after it.
    for (const outcome of history) expect(outcome.error, `${outcome.op} at ${outcome.at}`).toBeUndefined();
    expect(one![0]!.change).toBe("delete");
    await checkAgreement(stack, backendUrl, id);
  }, 300_000);
});
