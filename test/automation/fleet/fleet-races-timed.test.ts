// Issue 32 item 3, "linearizable per group", as reported: replica 1 removes a group
// and 1.5 s later replica 2 ensures it (either order is linearizable), as two fleets
// of one process on a file backend, and as two OS processes on PostgreSQL (the
// replicas a service runs: the same race and the same checks, the token included,
// as two fleets of one process on PostgreSQL, which therefore run only with
// FLEET_RACES_ALL=1, to keep npm test within its time). The checker:
// races-support.ts (fleet-races.test.ts forces the order, on both backends).
import { describe, expect, it } from "vitest";
import { UserGroupFleet } from "../../../provider/automation";
import { backends, checkAgreement, optionsOf, postgresUrl, raceReplica, serviceGroup, sleep, useRaceBed } from "./races-support";

useRaceBed("fleet-races-timed");

const timedOn = process.env["FLEET_RACES_ALL"] === "1" ? backends : backends.filter(([label]) => label !== "PostgreSQL");

describe.skipIf(process.platform !== "linux").each(timedOn)("a remove 1.5 s before an ensure of one group, on %s", (label, backendUrlOf) => {
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
    let before: string;
    try {
      await setup.ensure({ name: "Anchor", userGroupId: "anchor-processes" });
      before = (await setup.ensure({ name: `Race ${id}`, userGroupId: id })).token;
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
    expect(history).toHaveLength(5);
    for (const outcome of history) expect(outcome.error, `${outcome.op} at ${outcome.at}`).toBeUndefined();
    expect(one![0]!.change).toBe("delete");
    // The race as reported, either order: p2's ensure ran before p1's remove (it answered the group made before,
    // then removed, and p1's ensure at 9 s made a new one) or after it (it made the group p1's ensure then found).
    const [raced, later] = [two![0]!, one![1]!];
    if (raced.token === before) expect(later).toMatchObject({ change: "create" });
    else expect([raced.change, later.change, later.token]).toEqual(["create", "same", raced.token]);
    expect(later.token).not.toBe(before);
    await checkAgreement(stack, backendUrl, id);
  }, 300_000);
});
