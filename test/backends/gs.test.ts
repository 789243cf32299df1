// The gs:// adapter (provider/backends/gs/) on fake-gcs-server (started here on
// 127.0.0.1 by scripts/ensure-fake-gcs-server, found through STORAGE_EMULATOR_HOST):
// the conformance suite and the object stores' refusals (object-store-suite.ts).
import { describe, expect, it } from "vitest";
import { backendFor } from "../../provider/backends";
import { startGcs } from "../../testkit/object-stores";
import { PROJECT } from "./conformance";
import { describeObjectStore } from "./object-store-suite";

const suite = describeObjectStore("gs (fake-gcs-server)", startGcs, { stripsConditions: true });

describe("the gs:// client's own refusals", () => {
  it("no token in the environment: backend_credentials_rejected, nothing sent", async () => {
    const url = suite.store().backendUrl(await suite.freshBucket());
    const token = process.env.GOOGLE_OAUTH_ACCESS_TOKEN;
    delete process.env.GOOGLE_OAUTH_ACCESS_TOKEN;
    try {
      const error = await backendFor(url)!.shardDirectory(PROJECT, "dev").read().catch((e: unknown) => e);
      expect(error).toMatchObject({ code: "backend_credentials_rejected" });
    } finally {
      process.env.GOOGLE_OAUTH_ACCESS_TOKEN = token;
    }
  });
});
