// s3/: the shared state of an `s3://` backend, in objects beside Pulumi's under
// the same bucket and prefix (`.user-groups/...`): the run lease with epochs
// expiring on the store's clock and its queue of waiters, the shard directory,
// the rate budget (../object-lease.ts, ../object-stores.ts, ../object-adapter.ts),
// all kept with S3's conditional writes over a SigV4 client of our own
// (client.ts, sigv4.ts); Pulumi's lock objects of a stack. The provider
// processes are fenced by the lease's epoch; the engine works on a private copy
// committed with If-Match on the ETag (../object-engine-copy.ts, docs/object-stores.md).
import type { BackendAdapter } from "../backend";
import { objectStoreAdapter } from "../object-adapter";
import { S3Client } from "./client";

export { S3Client, s3Credentials, s3Target } from "./client";
export { signRequest } from "./sigv4";

export const s3Adapter: BackendAdapter = objectStoreAdapter("s3", "s3", (url, env) => new S3Client(url, env));
