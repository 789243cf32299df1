// The azblob:// adapter (provider/backends/azblob/) on Azurite (the npm
// devDependency, started here on 127.0.0.1 with an account made for it): the
// conformance suite and the object stores' refusals (object-store-suite.ts).
// A store that drops conditions is not played here: Shared Key signs the
// condition headers, so a proxy that strips them is refused as a bad signature.
import { describe, expect, it } from "vitest";
import { backendFor } from "../../provider/backends";
import { startAzurite } from "../../testkit/object-stores";
import { PROJECT } from "./conformance";
import { describeObjectStore } from "./object-store-suite";

const suite = describeObjectStore("azblob (Azurite)", startAzurite, { stripsConditions: false });

describe("the azblob:// client's own refusals", () => {
  it("a wrong key: backend_credentials_rejected, the key never in the message", async () => {
    const url = suite.store().backendUrl(await suite.freshBucket());
    const key = process.env.AZURE_STORAGE_KEY!;
    const wrong = Buffer.alloc(32, 7).toString("base64");
    process.env.AZURE_STORAGE_KEY = wrong;
    try {
      const error = await backendFor(url)!.shardDirectory(PROJECT, "dev").read().catch((e: unknown) => e);
      expect(error).toMatchObject({ code: "backend_credentials_rejected" });
      expect((error as Error).message).not.toContain(wrong);
      expect((error as Error).message).not.toContain(key);
    } finally {
      process.env.AZURE_STORAGE_KEY = key;
    }
  });
});
