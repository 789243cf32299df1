// One shape: the zod schemas in provider/logic/inputs.ts are the source of a
// UserGroup's inputs and outputs. The types follow them: shape.test-d.ts (a type
// test). What holds at run time: the keys, and the checked-inputs schema.
import { describe, expect, it } from "vitest";
import { checkedInputsSchema, checkInputs, INPUT_KEYS, userGroupInputsSchema, userGroupOutputsSchema } from "../../provider/logic/inputs";

describe("the schemas' keys", () => {
  it("INPUT_KEYS are the input schema's keys, in order", () => {
    expect([...INPUT_KEYS]).toEqual(Object.keys(userGroupInputsSchema.shape));
  });

  it("the outputs schema holds every input", () => {
    expect(Object.keys(userGroupOutputsSchema.shape)).toEqual(expect.arrayContaining([...INPUT_KEYS]));
  });
});

describe("the checked-inputs schema", () => {
  it("accepts what check returns, unchanged", () => {
    const result = checkInputs({ name: "Acme", userGroupId: "acme", properties: null, profile: "testing" });
    if (!result.ok) throw new Error(JSON.stringify(result.failures));
    expect(checkedInputsSchema.parse(result.inputs)).toEqual(result.inputs);
  });

  it("requires the defaults check fills in", () => {
    expect(checkedInputsSchema.safeParse({ name: "Acme", userGroupId: "acme" }).success).toBe(false);
  });
});
