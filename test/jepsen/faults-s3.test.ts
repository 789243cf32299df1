// Fault histories on S3 (issue 42 item 5; moto's server): npm test's short form,
// one history of a store restart (every replica's connections reset and refused
// for 2 s while r1 is in a run: moto keeps its objects in memory only, so to its
// clients a restart is this; the calls it cuts fail backend_unreachable, retried)
// and a kill (SIGKILL of r1's process group mid-run: taken over, what it created
// adopted from the checkpoint it committed before each request). The driver:
// object-store-histories.ts; the other kinds: Azure's and GCS's short forms, and
// the bench (fault-kinds.ts says which).
import { objectStoreHistory, ROUND } from "./object-store-histories";

objectStoreHistory({ store: "s3", leaseTtlMs: 8_000, rounds: [ROUND["store-restart"], ROUND.kill] });
