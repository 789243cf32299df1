// The per-connection memory of the last Authorization header: a key is hashed
// once per keep-alive connection, and a different header is always judged afresh.
import { describe, expect, it } from "vitest";
import { ConnectionAuth, KeyRing } from "../../fake-server/auth.js";

class CountingKeyRing extends KeyRing {
  calls = 0;
  override authenticate(header: string | undefined) {
    this.calls += 1;
    return super.authenticate(header);
  }
}

const keys = () => new CountingKeyRing([
  { key: "customer-key-0001", environment: "Customer" },
  { key: "testing-key-00002", environment: "Testing" },
]);

describe("ConnectionAuth", () => {
  it("judges the same header on the same connection once", () => {
    const ring = keys();
    const auth = new ConnectionAuth(ring);
    const connection = {};
    for (let i = 0; i < 5; i++) expect(auth.authenticate(connection, "Token customer-key-0001")).toMatchObject({ ok: true, key: { environment: "Customer" } });
    expect(ring.calls).toBe(1);
  });

  it("judges a changed header, and every connection, afresh", () => {
    const ring = keys();
    const auth = new ConnectionAuth(ring);
    const a = {};
    const b = {};
    expect(auth.authenticate(a, "Token customer-key-0001")).toMatchObject({ ok: true, key: { environment: "Customer" } });
    expect(auth.authenticate(a, "Token customer-key-0002")).toEqual({ ok: false, reason: "unknown", presented: "customer-key-0002" });
    expect(auth.authenticate(a, undefined)).toEqual({ ok: false, reason: "missing" });
    expect(auth.authenticate(b, "Token customer-key-0001")).toMatchObject({ ok: true, key: { environment: "Customer" } });
    expect(auth.authenticate(a, "Token testing-key-00002")).toMatchObject({ ok: true, key: { environment: "Testing" } });
    expect(ring.calls).toBe(5);
  });
});
