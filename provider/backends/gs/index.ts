// gs/: the shared state of a `gs://` backend, in objects beside Pulumi's under
// the same bucket and prefix (`.user-groups/...`), kept with GCS generation
// preconditions (client.ts): the same lease, directory and rate budget as every
// object store (../object-adapter.ts). The provider processes are fenced by the
// lease's epoch; the engine works on a private copy committed with
// ifGenerationMatch (../object-engine-copy.ts, docs/object-stores.md).
import type { BackendAdapter } from "../backend";
import { objectStoreAdapter } from "../object-adapter";
import { GcsClient } from "./client";

export { GcsClient, gcsTarget } from "./client";

export const gsAdapter: BackendAdapter = objectStoreAdapter("gs", "gs", (url, env) => new GcsClient(url, env));
