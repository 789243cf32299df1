// azblob/: the shared state of an `azblob://` backend, in blobs beside Pulumi's
// under the same container and prefix (`.user-groups/...`), kept with ETag
// conditions (If-None-Match: *, If-Match) over Shared Key (client.ts): the same
// lease, directory and rate budget as every object store (../object-adapter.ts).
// The provider processes are fenced by the lease's epoch; the engine works on a
// private copy committed with If-Match (../object-engine-copy.ts, docs/object-stores.md).
import type { BackendAdapter } from "../backend";
import { objectStoreAdapter } from "../object-adapter";
import { AzureBlobClient } from "./client";

export { AzureBlobClient, azureTarget } from "./client";

export const azblobAdapter: BackendAdapter = objectStoreAdapter("azblob", "azblob", (url, env) => new AzureBlobClient(url, env));
