// Length limits count Unicode code points (CONTRACT); the shortcut by UTF-16
// length must agree with counting, astral characters (two units each) included.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { hasCharCountBetween, nameSchema, userGroupIdSchema } from "../../provider/wire/schemas";

const codePoints = (s: string) => [...s].length;

describe("hasCharCountBetween", () => {
  it("agrees with counting code points, for any string and bounds", () => {
    const text = fc.string({ unit: fc.constantFrom("a", "é", "😀", "\u{10FFFF}", " "), maxLength: 40 });
    fc.assert(
      fc.property(text, fc.nat(30), fc.nat(30), (s, a, b) => {
        const [min, max] = a <= b ? [a, b] : [b, a];
        const count = codePoints(s);
        expect(hasCharCountBetween(s, min, max)).toBe(count >= min && count <= max);
      }),
      { numRuns: 2000 },
    );
  });

  it("lets the schemas accept 255 emoji as a name and refuse 256", () => {
    expect(nameSchema.safeParse("😀".repeat(255)).success).toBe(true);
    expect(nameSchema.safeParse("😀".repeat(256)).success).toBe(false);
    expect(userGroupIdSchema.safeParse("").success).toBe(false);
  });
});
