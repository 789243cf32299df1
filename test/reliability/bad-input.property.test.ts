// Bad and hostile input, property-based (fast-check): `checkInputs` refuses
// invalid inputs with failures that name the property, and through a real stack
// no request is sent for them; hostile but valid strings (unicode, control
// characters, very long, JSON-injection-like) round-trip unchanged through the
// client and the fake server, and through Pulumi for a handful.
import fc from "fast-check";
import { afterAll, describe, expect, it } from "vitest";
import { runOnly } from "../../provider/automation/engine/pulumi-cli";
import { UserGroupsClient } from "../../provider/client/http-client";
import { checkInputs } from "../../provider/logic/inputs";
import type { UserGroupArgs } from "../../provider/resource/user-group";
import type { JsonValue } from "../../provider/wire/schemas";

const asJson = <T>(value: T): T => JSON.parse(JSON.stringify(value)) as T;
import {
  createGroupStack,
  CUSTOMER_KEY,
  expectConverged,
  failureOf,
  type ReliabilityServer,
  useReliabilityServer,
} from "./support";

let rs: ReliabilityServer;
let client: UserGroupsClient;
const stacks = useReliabilityServer((started) => {
  rs = started;
  client = new UserGroupsClient({ baseUrl: rs.server.url, apiKey: CUSTOMER_KEY });
});
afterAll(async () => {
  await client?.close();
});

const charCount = (s: string) => [...s].length;
/** Well-formed unicode (no lone surrogates: they cannot travel as UTF-8), control characters included. */
const hostileChar = fc.oneof(
  fc.string({ unit: "binary", minLength: 1, maxLength: 1 }),
  fc.constantFrom("\u0000", "\n", "\r", "\t", "\u001b", "\u007f", "\u200b", "\u202e", "\ufeff", "\"", "\\", "{", "}", "'", "<", "%s", "${x}"),
);
const hostileString = (min: number, max: number) => fc.array(hostileChar, { minLength: min, maxLength: max }).map((parts) => parts.join(""));
const jsonInjection = fc.constantFrom('","token":"x', '"}], "success": 1, "x": [{"', "\\u0000\\\"", "</script><script>", "'; DROP TABLE groups; --", "constructor");
const validName = fc
  .oneof(hostileString(1, 40), jsonInjection, fc.constant("é".repeat(255)), fc.constant("😀".repeat(255)))
  .filter((s) => s.trim().length > 0 && charCount(s) <= 255);
const mappingArb = fc.dictionary(fc.oneof(hostileString(1, 12), jsonInjection), fc.oneof(hostileString(0, 20), jsonInjection), { maxKeys: 5 });
const jsonValue = fc
  .jsonValue({ maxDepth: 3 })
  .filter((v) => !JSON.stringify(v).includes("__proto__"))
  .map((v) => v as JsonValue);
const propertiesArb = fc.dictionary(fc.oneof(hostileString(1, 12), jsonInjection).filter((k) => k !== "__proto__"), fc.oneof(jsonValue, hostileString(0, 30)), { maxKeys: 5 });

/** Inputs with exactly one thing wrong, and the property a failure must name. */
const invalidInputs: fc.Arbitrary<{ raw: Record<string, unknown>; property: string }> = fc.oneof(
  fc.constantFrom("", "   ", "\t\n", "x".repeat(256), "😀".repeat(256)).map((name) => ({ raw: { name, userGroupId: "ok" }, property: "name" })),
  fc.oneof(fc.integer(), fc.boolean(), fc.constant(null), fc.array(fc.string())).map((name) => ({ raw: { name, userGroupId: "ok" }, property: "name" })),
  fc.constantFrom("", "y".repeat(256)).map((userGroupId) => ({ raw: { name: "ok", userGroupId }, property: "userGroupId" })),
  fc.oneof(fc.integer(), fc.constant(null), fc.constant({})).map((userGroupId) => ({ raw: { name: "ok", userGroupId }, property: "userGroupId" })),
  fc
    .tuple(fc.string({ minLength: 1, maxLength: 8 }).filter((k) => k !== "__proto__"), fc.oneof(fc.integer(), fc.boolean(), fc.constant(null), fc.object()))
    .map(([key, value]) => ({ raw: { name: "ok", userGroupId: "ok", mapping: { [key]: value } }, property: "mapping" })),
  fc.oneof(fc.string(), fc.integer(), fc.array(fc.integer())).map((properties) => ({ raw: { name: "ok", userGroupId: "ok", properties }, property: "properties" })),
  fc.oneof(fc.constantFrom("", "1abc", "a b", "a/b", "é", "x".repeat(65)), fc.integer()).map((profile) => ({ raw: { name: "ok", userGroupId: "ok", profile }, property: "profile" })),
  fc.oneof(fc.string(), fc.integer()).map((adoptExisting) => ({ raw: { name: "ok", userGroupId: "ok", adoptExisting }, property: "adoptExisting" })),
  fc.oneof(fc.integer(), fc.boolean()).map((rotationTrigger) => ({ raw: { name: "ok", userGroupId: "ok", rotationTrigger }, property: "rotationTrigger" })),
);

describe("checkInputs", () => {
  it("refuses every invalid input with a failure naming the property", () => {
    fc.assert(
      fc.property(invalidInputs, ({ raw, property }) => {
        const result = checkInputs(raw);
        expect(result.ok).toBe(false);
        if (result.ok) return;
        expect(result.failures.length).toBeGreaterThan(0);
        expect(result.failures.some((f) => f.property.split(".")[0] === property && f.reason.startsWith(f.property))).toBe(true);
      }),
      { numRuns: 400 },
    );
  });

  it("accepts hostile but valid strings and keeps them unchanged", () => {
    fc.assert(
      fc.property(validName, hostileString(1, 60), mappingArb, propertiesArb, (name, userGroupId, mapping, properties) => {
        const result = checkInputs({ name, userGroupId, mapping, properties });
        expect(result.ok).toBe(true);
        if (!result.ok) return;
        // Properties are JSON: -0 becomes 0, as on the wire.
        expect(result.inputs).toEqual({ name, userGroupId, mapping, properties: asJson(properties), adoptExisting: false });
      }),
      { numRuns: 300 },
    );
  });
});

describe("hostile strings through the client and the fake server", () => {
  it("name, id, mapping and properties round-trip unchanged", async () => {
    let n = 0;
    try {
      await fc.assert(
        fc.asyncProperty(validName, mappingArb, propertiesArb, async (name, mapping, raw) => {
          // JSON cannot say -0: what the wire carries is the JSON form.
          const properties = asJson(raw);
          const userGroupId = `rt-${n++}-${name.slice(0, 10)}`;
          const created = await client.getOrCreate({ name, user_group_id: userGroupId, mapping, properties });
          expect(created.response.user_group).toMatchObject({ name, provided_id: userGroupId, properties });
          const stored = rs.server.groups().find((g) => g.user_group_id === userGroupId);
          expect(stored).toMatchObject({ name, mapping, properties });
          const read = await client.getOrCreate({ name: "ignored", user_group_id: userGroupId });
          expect(read.response.new_user_group).toBe(false);
          expect(read.response.user_group).toMatchObject({ name, properties });
        }),
        { numRuns: 150 },
      );
    } finally {
      await rs.server.reset();
    }
  });
});

describe("through a stack", () => {
  it("hostile but valid groups round-trip through Pulumi; invalid ones send no request", async () => {
    const gs = await createGroupStack("bad-input", rs.server.url, CUSTOMER_KEY);
    stacks.push(gs);
    // fast-check builds some objects without a prototype; Pulumi's SDK cannot serialize those
    // ("Cannot convert object to primitive value"), and a program's own objects always have one.
    const samples = fc.sample(fc.tuple(validName, mappingArb, propertiesArb), { numRuns: 4, seed: 42 }).map(asJson);
    const declared = new Map<string, UserGroupArgs>();
    samples.forEach(([name, mapping, properties], i) => declared.set(`hostile-${i}`, { name, userGroupId: `hostile-${i}`, mapping, properties }));
    declared.set("injection", {
      name: '"}, "token": "0000", "x": {"\u0000\n\u202e😀',
      userGroupId: "injection",
      mapping: { '"; rm -rf /': "\\u0000", "\u0000": "" },
      properties: { html: "</script><script>alert(1)</script>", nested: { deep: ["\u0001", 1e308, 0.1, null, true] } /* -0 comes back as 0: see docs/reliability.md */ },
    });
    declared.set("long", { name: "名".repeat(255), userGroupId: "long", properties: { text: "x".repeat(100_000) } });
    gs.declared = declared;
    await runOnly(gs.stack).up(gs.run);
    await expectConverged(rs.server, gs);
    for (const [id, args] of declared) {
      expect(rs.server.groups().find((g) => g.user_group_id === id)?.properties).toEqual(JSON.parse(JSON.stringify(args.properties)));
    }
    await gs.stack.preview({ expectNoChanges: true, ...gs.run });
    await runOnly(gs.stack).refresh({ expectNoChanges: true, ...gs.run });

    const before = rs.server.journal().length;
    const invalid = fc.sample(invalidInputs, { numRuns: 3, seed: 7 });
    invalid.forEach(({ raw }, i) => gs.declared.set(`invalid-${i}`, raw as unknown as UserGroupArgs));
    const printedBefore = gs.output.length;
    await failureOf(gs.stack.up(gs.run));
    const printed = gs.output.slice(printedBefore).join("");
    // The engine stops at the first resource whose check fails; that one must name its property.
    const named = invalid.filter(({ property }, i) => new RegExp(`resource 'invalid-${i}': property ${property}\\b`).test(printed));
    expect(named.length).toBeGreaterThan(0);
    expect(rs.server.journal().length).toBe(before);
  });
});
