// Fault histories on PostgreSQL (test/jepsen/postgres-histories.ts), the bounded
// outage of issue 32 item 2: r1 killed, paused (SIGSTOP) or behind a black hole
// (its connections stay open, nothing arrives) while it holds the stack; the
// pause and the black hole last past 30 s, so that another replica must serve
// before they heal: within 30 s of r1's last lease renewal.
import { postgresHistories } from "./postgres-histories";

postgresHistories("fault histories on PostgreSQL: death, pause, black hole", [
  { kind: "kill", faultMs: 0, serveWithinMs: 30_000 },
  { kind: "pause", faultMs: 30_000, serveWithinMs: 30_000 },
  { kind: "partition-blackhole", faultMs: 30_000, serveWithinMs: 30_000 },
]);
