// Fault histories on Azure Blob Storage (issue 42 item 5; Azurite): npm test's
// short form, one history of a black hole between r1 and the store (Toxiproxy:
// its connections stay open, every byte dropped; held until another replica has
// been served) and a kill of r1 mid-run. The driver: object-store-histories.ts;
// the other kinds: S3's and GCS's short forms, and the bench (fault-kinds.ts says which).
import { objectStoreHistory, ROUND } from "./object-store-histories";

objectStoreHistory({ store: "azblob", leaseTtlMs: 8_000, rounds: [ROUND["partition-blackhole"], ROUND.kill] });
