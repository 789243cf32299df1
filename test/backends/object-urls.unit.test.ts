// The object stores' clients without a server: S3's Signature V4 against AWS's
// published example (the S3 API reference, "Example: GET Object"), and the
// backend URLs each adapter accepts or refuses before any request.
import { describe, expect, it } from "vitest";
import { azureTarget, backendFor, gcsTarget, s3Target, signRequest } from "../../provider/backends";

describe("S3 Signature V4", () => {
  it("signs AWS's documented GET Object example to its documented signature", () => {
    const headers = signRequest({
      method: "GET",
      path: "/test.txt",
      query: {},
      headers: { host: "examplebucket.s3.amazonaws.com", range: "bytes=0-9" },
      body: Buffer.alloc(0),
      region: "us-east-1",
      credentials: { accessKeyId: "AKIAIOSFODNN7EXAMPLE", secretAccessKey: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY" },
      now: new Date("2013-05-24T00:00:00Z"),
    });
    expect(headers.authorization).toBe(
      "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, " +
        "Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41",
    );
    expect(JSON.stringify(headers)).not.toContain("wJalrXUtnFEMI");
  });
});

describe("backend URLs", () => {
  it("s3://: Pulumi's DIY parameters; an endpoint means path style; a prefix from the path", () => {
    expect(s3Target("s3://my-bucket/team/state?endpoint=127.0.0.1:9000&s3ForcePathStyle=true&disableSSL=true&region=eu-west-1")).toEqual({
      bucket: "my-bucket",
      prefix: "team/state/",
      origin: "http://127.0.0.1:9000",
      pathStyle: true,
      region: "eu-west-1",
    });
    expect(s3Target("s3://my-bucket?region=us-east-2")).toMatchObject({ origin: "https://my-bucket.s3.us-east-2.amazonaws.com", pathStyle: false });
  });

  it("gs:// and azblob://: the emulator's endpoint from the environment or the URL, the account from the environment", () => {
    expect(gcsTarget("gs://my-bucket", { STORAGE_EMULATOR_HOST: "127.0.0.1:4443" })).toEqual({ bucket: "my-bucket", prefix: "", origin: "http://127.0.0.1:4443" });
    expect(gcsTarget("gs://my-bucket", {}).origin).toBe("https://storage.googleapis.com");
    expect(azureTarget("azblob://state?domain=127.0.0.1:10000&protocol=http", { AZURE_STORAGE_ACCOUNT: "acct1" })).toMatchObject({ origin: "http://127.0.0.1:10000", accountInPath: true });
    expect(azureTarget("azblob://state", { AZURE_STORAGE_ACCOUNT: "acct1" })).toMatchObject({ origin: "https://acct1.blob.core.windows.net", accountInPath: false });
  });

  it.each([
    ["s3://user:secret-in-url@my-bucket", "backend_url_invalid"],
    ["s3://Bad_Bucket", "backend_url_invalid"],
    ["s3://my-bucket/a%2F..%2Fother", "backend_url_invalid"],
    ["s3://my-bucket?endpoint=evil.example/path%0a", "backend_url_invalid"],
    ["s3://my-bucket?region=us-east-1%0aX", "backend_url_invalid"],
    ["gs://user:secret-in-url@my-bucket", "backend_url_invalid"],
    ["azblob://UPPER", "backend_url_invalid"],
  ])("%s is refused before any request (%s), its secret not repeated", (url, code) => {
    let error: unknown;
    try {
      backendFor(url);
    } catch (e) {
      error = e;
    }
    expect(error).toMatchObject({ code });
    expect((error as Error).message).not.toContain("secret-in-url");
  });
});
