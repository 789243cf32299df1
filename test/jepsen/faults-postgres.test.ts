// Fault histories on PostgreSQL (test/jepsen/postgres-histories.ts), npm test's
// short form: one history whose replica r1 is hit by one fault after another
// while it holds the stack (each a round: r1 in a run, the fault, the heal, load),
// then checked once by both checkers, and a history of removes racing ensures.
// - The bounded outage of issue 32 item 2: r1 paused (SIGSTOP), then behind a black
//   hole (its connections stay open, nothing arrives); each holds until another
//   replica has been served (healed on that event; 45 s at most, the bench's fixed
//   hold), so another replica serves while it lasts: within SERVE_AGAIN_BOUND_MS
//   (45 s) of r1's last lease renewal.
// - The short faults: a partition that resets r1's connections (its lease session
//   is cut: taken over at once), a database restart.
// A kill and the refused partition are the bench's (fault-kinds.ts says why; with
// JEPSEN_RUN_ALL=1 they are rounds of this history too, the kill last).
import { postgresHistories, SERVE_AGAIN_BOUND_MS } from "./postgres-histories";

postgresHistories("fault histories on PostgreSQL: pause, black hole, partitions that cut, restart, death; race", [
  {
    kind: "pause",
    faultMs: 45_000,
    serveWithinMs: SERVE_AGAIN_BOUND_MS,
    servedWhileHeld: true,
    then: [
      { kind: "partition-blackhole", faultMs: 45_000, serveWithinMs: SERVE_AGAIN_BOUND_MS, servedWhileHeld: true },
      { kind: "partition-reset", faultMs: 10_000, serveWithinMs: SERVE_AGAIN_BOUND_MS },
      { kind: "partition-refuse", faultMs: 10_000, serveWithinMs: SERVE_AGAIN_BOUND_MS },
      { kind: "pg-restart", faultMs: 0 },
      { kind: "kill", faultMs: 0, serveWithinMs: SERVE_AGAIN_BOUND_MS },
    ],
  },
  { kind: "race", faultMs: 0 },
]);
