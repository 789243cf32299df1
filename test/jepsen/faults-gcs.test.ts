// Fault histories on Google Cloud Storage (issue 42 item 5; fake-gcs-server,
// reached through STORAGE_EMULATOR_HOST, which each replica's environment points
// at its proxy): npm test's short form, one history of a partition that resets
// every connection of r1's to the store (held until another replica has been
// served) and a pause of r1 (held the same way). The driver:
// object-store-histories.ts; the other kinds: S3's and Azure's short forms, and
// the bench (fault-kinds.ts says which).
import { objectStoreHistory, ROUND } from "./object-store-histories";

objectStoreHistory({ store: "gs", leaseTtlMs: 8_000, rounds: [ROUND["partition-reset"], ROUND.pause] });
