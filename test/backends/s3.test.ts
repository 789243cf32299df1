// The s3:// adapter (provider/backends/s3/) on a real S3 server, moto's (started
// here on 127.0.0.1 by scripts/ensure-moto): the conformance suite and the
// object stores' refusals (object-store-suite.ts), and the S3 client's own.
import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { backendFor } from "../../provider/backends";
import { startS3 } from "../../testkit/object-stores";
import { PROJECT } from "./conformance";
import { describeObjectStore } from "./object-store-suite";

const suite = describeObjectStore("s3 (moto)", startS3, { stripsConditions: true });

describe("the s3:// client's own refusals", () => {
  it("no credentials in the environment: backend_credentials_rejected, nothing sent", async () => {
    const url = suite.store().backendUrl(await suite.freshBucket());
    const secret = process.env.AWS_SECRET_ACCESS_KEY;
    delete process.env.AWS_SECRET_ACCESS_KEY;
    try {
      const error = await backendFor(url)!.shardDirectory(PROJECT, "dev").read().catch((e: unknown) => e);
      expect(error).toMatchObject({ code: "backend_credentials_rejected" });
    } finally {
      process.env.AWS_SECRET_ACCESS_KEY = secret;
    }
  });

  it("a URL with credentials in it is refused, and they are not repeated", () => {
    const secret = randomBytes(12).toString("hex");
    let error: unknown;
    try {
      backendFor(`s3://AKIAX:${secret}@bucket-name?region=us-east-1`);
    } catch (e) {
      error = e;
    }
    expect(error).toMatchObject({ code: "backend_url_invalid" });
    expect((error as Error).message).not.toContain(secret);
  });
});
