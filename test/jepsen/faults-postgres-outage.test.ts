// Fault histories on PostgreSQL (test/jepsen/postgres-histories.ts), the bounded
// outage of issue 32 item 2: r1 killed, paused (SIGSTOP) or behind a black hole
// (its connections stay open, nothing arrives) while it holds the stack; the
// pause and the black hole last 45 s (as long as the bench's), past the bound, so
// that another replica must serve before they heal: within SERVE_AGAIN_BOUND_MS
// (45 s) of r1's last lease renewal. (The kill is the bench's: fault-kinds.ts.)
import { postgresHistories, SERVE_AGAIN_BOUND_MS } from "./postgres-histories";

postgresHistories("fault histories on PostgreSQL: death, pause, black hole", [
  { kind: "kill", faultMs: 0, serveWithinMs: SERVE_AGAIN_BOUND_MS },
  { kind: "pause", faultMs: 45_000, serveWithinMs: SERVE_AGAIN_BOUND_MS },
  { kind: "partition-blackhole", faultMs: 45_000, serveWithinMs: SERVE_AGAIN_BOUND_MS },
]);
