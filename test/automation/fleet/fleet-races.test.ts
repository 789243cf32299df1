// Issue 32 item 3, "linearizable per group": replica 1 removes a group while
// replica 2 ensures it again, the reported interleaving forced (replica 2 reads the
// group's directory entry before replica 1's remove has finished, and runs after
// its destroy). Two UserGroupFleets of one stack in one process, each with its own
// directory handle, run leases and stacks, as two replicas have, on PostgreSQL and
// on a file backend; shards of one group. The checker: races-support.ts.
import { describe, expect, it } from "vitest";
import { UserGroupFleet } from "../../../provider/automation";
import { backends, checkAgreement, directoryOf, optionsOf, serviceGroup, useRaceBed } from "./races-support";

useRaceBed("fleet-races");

describe.skipIf(process.platform !== "linux").each(backends)("a remove racing an ensure of one group, on %s", (label, backendUrlOf) => {
  it("replica 2 reads the entry before replica 1's remove finished and runs after its destroy: nothing orphaned", async () => {
    const backendUrl = backendUrlOf();
    const stack = `forced-${label === "PostgreSQL" ? "pg" : "file"}`;
    const id = `race-x-${stack}`;
    const setup = new UserGroupFleet(optionsOf(stack, backendUrl, "setup"));
    try {
      await setup.ensure({ name: "Anchor", userGroupId: `anchor-${stack}` }); // shard 0
      await setup.ensure({ name: `Race ${id}`, userGroupId: id }); // shard 1, alone
    } finally {
      await setup.close();
    }
    const r1 = new UserGroupFleet(optionsOf(stack, backendUrl, "r1"));
    const r2 = new UserGroupFleet(optionsOf(stack, backendUrl, "r2"));
    try {
      // Replica 2's directory tells when it has read the entry; replica 1's forget waits for that.
      const dir2 = (await directoryOf(r2)).directory;
      let entryRead!: () => void;
      const read = new Promise<void>((resolve) => (entryRead = resolve));
      const assign = dir2.assign.bind(dir2);
      dir2.assign = async (...args) => {
        const answer = await assign(...args);
        entryRead();
        return answer;
      };
      const dir1 = (await directoryOf(r1)).directory;
      const forget = dir1.forget.bind(dir1);
      let started!: (ensured: Promise<{ change: string; token: string }>) => void;
      const ensuring = new Promise<Promise<{ change: string; token: string }>>((resolve) => (started = resolve));
      let once = false;
      dir1.forget = async (...args) => {
        if (!once) {
          once = true;
          started(r2.ensure({ name: `Race ${id}`, userGroupId: id }));
          // Replica 2 has read the entry (the event, not a delay): only then does replica 1 forget it.
          await read;
        }
        return forget(...args);
      };
      const removed = await r1.remove(id);
      expect(removed.change).toBe("delete");
      const again = await (await ensuring);
      expect(again.change).toBe("create");
      expect(again.token).toBe(serviceGroup(id)?.token);
    } finally {
      await r1.close();
      await r2.close();
    }
    await checkAgreement(stack, backendUrl, id);
  }, 300_000);
});
