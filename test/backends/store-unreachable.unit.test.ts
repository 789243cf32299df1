// A request to an object store that failed on its way (provider/backends/object-client.ts
// unreachableStore): every cut or refused connection undici reports is the
// catalogue's backend_unreachable (ask again), named by its code, never by a
// message that may carry the request's (signed) URL.
import { describe, expect, it } from "vitest";
import { ObjectStoreError, unreachableStore } from "../../provider/backends/object-client";
import { isRetryableError } from "../../testkit/jepsen/retryable";

const PLACE = "s3://bucket/ at http://127.0.0.1:9000";
const SIGNED = "http://127.0.0.1:9000/bucket/key?X-Amz-Signature=abcdef0123456789&X-Amz-Credential=AKIAX";
const coded = (code: string, message = `${code} ${SIGNED}`) => Object.assign(new Error(message), { code });

describe("a failed request to an object store", () => {
  const cases: Array<[string, unknown, string]> = [
    ["fetch failed, connection refused", new TypeError("fetch failed", { cause: coded("ECONNREFUSED") }), "ECONNREFUSED"],
    ["fetch failed, reset", new TypeError("fetch failed", { cause: coded("ECONNRESET") }), "ECONNRESET"],
    ["fetch failed, connect timeout", new TypeError("fetch failed", { cause: coded("UND_ERR_CONNECT_TIMEOUT") }), "UND_ERR_CONNECT_TIMEOUT"],
    ["fetch failed, cause without a code", new TypeError("fetch failed", { cause: new Error(`getaddrinfo ${SIGNED}`) }), "TypeError"],
    ["an answer cut mid-body, its socket's error under it", new TypeError("terminated", { cause: coded("UND_ERR_SOCKET", "other side closed") }), "UND_ERR_SOCKET"],
    ["an answer cut mid-body, bare (no cause, no code)", new TypeError("terminated"), "terminated"],
    ["a socket error itself", coded("UND_ERR_SOCKET"), "UND_ERR_SOCKET"],
    ["an aborted body read", Object.assign(new Error(`aborted ${SIGNED}`), { name: "AbortError" }), "AbortError"],
    ["a code nested two causes deep", new TypeError("fetch failed", { cause: new Error("x", { cause: coded("EPIPE") }) }), "EPIPE"],
    ["something not an Error at all", "boom", "error"],
  ];
  for (const [what, error, code] of cases) {
    it(`${what}: backend_unreachable (${code}), retryable, no URL in it`, () => {
      const mapped = unreachableStore(PLACE, error);
      expect(mapped).toBeInstanceOf(ObjectStoreError);
      expect(mapped.code).toBe("backend_unreachable");
      expect(isRetryableError(mapped)).toBe(true);
      expect(mapped.message).toContain(`(${code})`);
      expect(mapped.message).toContain(PLACE);
      expect(mapped.message).not.toMatch(/Signature|Credential|AKIAX|\/key/);
      expect(mapped.cause).toBeUndefined();
    });
  }

  it("a code that is not a plain word is not repeated (outside data never becomes the message)", () => {
    const mapped = unreachableStore(PLACE, new TypeError("fetch failed", { cause: coded("E\u001b[31mEVIL") }));
    expect(mapped.message).not.toContain("\u001b");
    expect(mapped.message).toContain("(TypeError)");
  });

  it("the request's own deadline is named as such, whatever undici threw", () => {
    expect(unreachableStore(PLACE, Object.assign(new Error("aborted"), { name: "AbortError" }), true).message).toContain("(no answer in 15 s)");
  });

  it("an error of ours passes unchanged (an answer too large)", () => {
    const own = new ObjectStoreError("backend_unreachable", "too large");
    expect(unreachableStore(PLACE, own)).toBe(own);
  });
});
