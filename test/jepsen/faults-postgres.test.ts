// Fault histories on PostgreSQL (test/jepsen/postgres-histories.ts), the short
// faults: a database restart, partitions that reset or refuse r1's connections
// (its lease session is cut: taken over at once), removes racing ensures.
import { postgresHistories, SERVE_AGAIN_BOUND_MS } from "./postgres-histories";

postgresHistories("fault histories on PostgreSQL: restart, partitions that cut, race", [
  { kind: "pg-restart", faultMs: 0 },
  { kind: "partition-reset", faultMs: 10_000, serveWithinMs: SERVE_AGAIN_BOUND_MS },
  { kind: "partition-refuse", faultMs: 10_000, serveWithinMs: SERVE_AGAIN_BOUND_MS },
  { kind: "race", faultMs: 0 },
]);
