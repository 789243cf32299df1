// R1: every input is validated before any request, and each failure names the
// property and the rule it broke.
import { describe, expect, it } from "vitest";
import { checkInputs, UNKNOWN_VALUE } from "../../provider/logic/inputs";
import { SIGNATURE_KEY } from "../../provider/logic/reserved-values";
import { PROTO_KEY_REFUSED } from "../../provider/wire/issues";

function failuresOf(raw: Record<string, unknown>) {
  const result = checkInputs(raw);
  if (result.ok) throw new Error("expected check to fail");
  return result.failures;
}

describe("checkInputs", () => {
  it("accepts a full declaration and fills defaults", () => {
    const result = checkInputs({ name: "Acme Corp", userGroupId: "acme", __provider: "serialized" });
    expect(result).toEqual({
      ok: true,
      inputs: { name: "Acme Corp", userGroupId: "acme", mapping: {}, adoptExisting: false },
    });
  });

  it("keeps every optional input that is given", () => {
    const result = checkInputs({
      name: "Acme",
      userGroupId: "acme",
      mapping: { sales: "warehouse-eu" },
      properties: { region: "eu", seats: 40, nested: { ok: [1, null, "x"] } },
      rotationTrigger: "2026-11",
      adoptExisting: true,
      profile: "testing",
    });
    expect(result.ok && result.inputs).toEqual({
      name: "Acme",
      userGroupId: "acme",
      mapping: { sales: "warehouse-eu" },
      properties: { region: "eu", seats: 40, nested: { ok: [1, null, "x"] } },
      rotationTrigger: "2026-11",
      adoptExisting: true,
      profile: "testing",
    });
  });

  it.each([
    [{ userGroupId: "acme" }, "name", /name is required/],
    [{ name: "", userGroupId: "acme" }, "name", /1 to 255 characters/],
    [{ name: "   ", userGroupId: "acme" }, "name", /must not be blank/],
    [{ name: "x".repeat(256), userGroupId: "acme" }, "name", /1 to 255/],
    [{ name: "Acme" }, "userGroupId", /userGroupId is required/],
    [{ name: "Acme", userGroupId: 42 }, "userGroupId", /string/],
    [{ name: "Acme", userGroupId: "acme", mapping: { sales: 3 } }, "mapping.sales", /string/],
    [{ name: "Acme", userGroupId: "acme", mapping: ["a"] }, "mapping", /record|object/],
    [{ name: "Acme", userGroupId: "acme", properties: "region=eu" }, "properties", /record|object/],
    [{ name: "Acme", userGroupId: "acme", properties: [1, 2] }, "properties", /record|object/],
    [{ name: "Acme", userGroupId: "acme", adoptExisting: "yes" }, "adoptExisting", /boolean/],
    [{ name: "Acme", userGroupId: "acme", profile: "has space" }, "profile", /letters, digits/],
    [{ name: "Acme", userGroupId: "acme", rotationTrigger: 7 }, "rotationTrigger", /string/],
  ])("rejects %j naming %s", (raw, property, reason) => {
    const failures = failuresOf(raw);
    const failure = failures.find((f) => f.property === property);
    expect(failure, JSON.stringify(failures)).toBeDefined();
    expect(failure?.reason).toMatch(reason);
  });

  it("rejects a mapping with more than 256 keys", () => {
    const mapping = Object.fromEntries(Array.from({ length: 257 }, (_, i) => [`k${i}`, "v"]));
    expect(failuresOf({ name: "A", userGroupId: "a", mapping })[0]).toMatchObject({ property: "mapping" });
  });

  it("reports every broken property at once", () => {
    const properties = failuresOf({ name: "", userGroupId: "", mapping: { a: 1 } }).map((f) => f.property);
    expect(properties).toEqual(expect.arrayContaining(["name", "userGroupId", "mapping.a"]));
  });

  it("passes values still unknown in a preview through unchecked", () => {
    const result = checkInputs({ name: UNKNOWN_VALUE, userGroupId: "acme", mapping: { sales: UNKNOWN_VALUE } });
    expect(result).toEqual({
      ok: true,
      inputs: { name: UNKNOWN_VALUE, userGroupId: "acme", mapping: { sales: UNKNOWN_VALUE }, adoptExisting: false },
    });
  });

  it("treats null properties as none", () => {
    const result = checkInputs({ name: "A", userGroupId: "a", properties: null });
    expect(result.ok && "properties" in result.inputs).toBe(false);
  });
});

describe("checkInputs and JSON", () => {
  it("refuses a __proto__ key rather than dropping it silently", () => {
    const properties = JSON.parse('{"a": {"__proto__": {"x": 1}}}') as Record<string, unknown>;
    const mapping = JSON.parse('{"__proto__": "x"}') as Record<string, unknown>;
    expect(failuresOf({ name: "A", userGroupId: "a", properties, mapping })).toEqual([
      { property: "mapping.__proto__", reason: `mapping.__proto__ ${PROTO_KEY_REFUSED}` },
      { property: "properties.a.__proto__", reason: `properties.a.__proto__ ${PROTO_KEY_REFUSED}` },
    ]);
  });

  it("refuses an asset or archive as the engine hands one to check (properties at any depth, mapping)", () => {
    // What the dynamic provider receives for `new pulumi.asset.RemoteAsset(uri)` in properties: the engine has already read it.
    const asset = () => ({ [SIGNATURE_KEY]: "c44067f5952c0a294b673a41bacd8c17", hash: "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824", uri: "http://127.0.0.1:9/" });
    const failures = failuresOf({ name: "A", userGroupId: "a", mapping: { sales: asset() }, properties: { list: [1, { file: asset() }] } });
    expect(failures.map((f) => f.property)).toEqual([`mapping.sales["${SIGNATURE_KEY}"]`, `properties.list[1].file["${SIGNATURE_KEY}"]`]);
    expect(failures[1]!.reason).toBe(
      `properties.list[1].file holds the key "${SIGNATURE_KEY}", which Pulumi reserves: it would read this object as an asset, archive, secret or resource reference, not as data`,
    );
  });

  it("refuses the unknown marker as a key (a key is never computed), but passes it as a value still unknown", () => {
    const failures = failuresOf({ name: "A", userGroupId: "a", mapping: { [UNKNOWN_VALUE]: "x" }, properties: { a: { [UNKNOWN_VALUE]: 1 } } });
    expect(failures.map((f) => f.property)).toEqual([`mapping["${UNKNOWN_VALUE}"]`, `properties.a["${UNKNOWN_VALUE}"]`]);
    expect(failures[0]!.reason).toMatch(/unknown-value marker, which Pulumi reserves/);
    expect(checkInputs({ name: "A", userGroupId: "a", properties: { deep: [{ x: UNKNOWN_VALUE }] } }).ok).toBe(true);
  });

  it("refuses properties nested 100000 deep with a message, not a stack overflow", () => {
    let deep: unknown = 1;
    for (let i = 0; i < 100_000; i++) deep = { a: deep };
    const failures = failuresOf({ name: "A", userGroupId: "a", properties: deep as Record<string, unknown> });
    expect(failures).toHaveLength(1);
    expect(failures[0]!.reason).toMatch(/^properties(\.a){256} is nested deeper than 256 levels$/);
  });

  it("normalises -0 in properties to 0, as JSON on the wire does (no diff after a refresh)", () => {
    const result = checkInputs({ name: "A", userGroupId: "a", properties: { n: -0, list: [-0] } });
    expect(result.ok && Object.is(result.inputs.properties?.n, 0)).toBe(true);
    expect(result.ok && result.inputs.properties?.list).toEqual([0]);
  });
});
