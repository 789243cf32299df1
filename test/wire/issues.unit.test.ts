// One wording for validation failures, from each zod issue's data: what the
// provider's check, the CLI, the client and the fake server all say.
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { formatIssues, WORDED_ISSUES } from "../../provider/wire/issues";

function wording(schema: z.ZodType, value: unknown): string[] {
  const parsed = schema.safeParse(value, WORDED_ISSUES);
  if (parsed.success) throw new Error("expected the parse to fail");
  return formatIssues(parsed.error, "the value");
}

describe("formatIssues", () => {
  it.each([
    ["a missing field", z.object({ name: z.string() }), {}, "name is required"],
    ["a wrong type, naming what came", z.object({ n: z.record(z.string(), z.string()) }), { n: { a: 3 } }, "n.a must be a string, received number"],
    ["a list where an object belongs", z.object({ m: z.record(z.string(), z.string()) }), { m: ["a"] }, "m must be an object, received array"],
    ["null", z.object({ flag: z.boolean() }), { flag: null }, "flag must be a boolean, received null"],
    ["a fraction where a whole number belongs", z.object({ n: z.number().int() }), { n: 1.5 }, "n must be a whole number, received number"],
    ["a short string", z.string().min(3), "ab", "the value must be at least 3 characters"],
    ["a long list", z.array(z.number()).max(1), [1, 2], "the value must be at most 1 item"],
    ["a number out of range", z.number().positive(), 0, "the value must be more than 0"],
    ["an unknown key", z.strictObject({ a: z.number() }), { a: 1, color: "red" }, 'the value has an unknown key "color"'],
    ["an enum", z.object({ env: z.enum(["Customer", "Testing"]) }), { env: "Prod" }, 'env must be one of "Customer", "Testing"'],
    ["a literal", z.literal(1), 0, "the value must be 1"],
    ["a list index", z.object({ rules: z.array(z.object({ status: z.number() })) }), { rules: [{ status: "x" }] }, "rules.0.status must be a number, received string"],
  ])("words %s from the issue's data", (_what, schema, value, expected) => {
    expect(wording(schema, value)).toEqual([expected]);
  });

  it("keeps a message the schema sets itself", () => {
    const schema = z.object({ name: z.string().refine((s) => s.trim() !== "", { message: "must not be blank" }) });
    expect(wording(schema, { name: " " })).toEqual(["name must not be blank"]);
  });

  it("never echoes the value (it may be a secret)", () => {
    const secret = "a".repeat(64);
    const messages = wording(z.object({ token: z.number(), env: z.enum(["Customer"]), pin: z.string().regex(/^\d+$/) }), {
      token: secret,
      env: secret,
      pin: secret,
    });
    expect(messages).toHaveLength(3);
    for (const message of messages) expect(message).not.toContain(secret);
  });
});
