// UserGroup skips the formatting of the stack traces Pulumi's SDK takes for its
// own promises (shown only with PULUMI_DEBUG_PROMISE_LEAKS), and nothing else.
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { SKIPPED_PROMISE_STACK, skipPulumiPromiseStacks } from "../../provider/resource/promise-stacks";
import { UserGroup } from "../../provider/resource/user-group";

type Formatter = NonNullable<ErrorConstructor["prepareStackTrace"]>;

// Named as in @pulumi/pulumi/runtime/debuggable.js: the name is what is matched.
function debuggablePromise(): string | undefined {
  return new Error().stack;
}
function somethingElse(): string | undefined {
  return new Error("boom").stack;
}

let saved: ErrorConstructor["prepareStackTrace"];
// Stands in for source-map-support: marks what it formatted.
const mapped: Formatter = (error, frames) => `MAPPED ${String(error)} (${frames.length} frames)`;

beforeEach(() => {
  saved = Error.prepareStackTrace;
  Error.prepareStackTrace = mapped;
});
afterEach(() => {
  Error.prepareStackTrace = saved;
});

describe("skipPulumiPromiseStacks", () => {
  it("skips the SDK's promise traces while in place and restores the formatter after", () => {
    const restore = skipPulumiPromiseStacks({});
    expect(debuggablePromise()).toBe(SKIPPED_PROMISE_STACK);
    restore();
    expect(Error.prepareStackTrace).toBe(mapped);
    expect(debuggablePromise()).toMatch(/^MAPPED Error /);
  });

  it("formats every other error with the installed formatter, also the ones read later", () => {
    const restore = skipPulumiPromiseStacks({});
    expect(somethingElse()).toMatch(/^MAPPED Error: boom \(\d+ frames\)$/);
    const createdMeanwhile = new Error("read after");
    restore();
    expect(createdMeanwhile.stack).toMatch(/^MAPPED Error: read after/);
  });

  it("keeps Pulumi's source positions: its traces with an unlimited depth are formatted as before", () => {
    const restore = skipPulumiPromiseStacks({});
    const limit = Error.stackTraceLimit;
    Error.stackTraceLimit = Number.POSITIVE_INFINITY; // as Resource.stackTrace does
    try {
      expect(somethingElse()).toMatch(/^MAPPED /);
    } finally {
      Error.stackTraceLimit = limit;
      restore();
    }
  });

  it("changes nothing when PULUMI_DEBUG_PROMISE_LEAKS asks for the traces", () => {
    const restore = skipPulumiPromiseStacks({ PULUMI_DEBUG_PROMISE_LEAKS: "1" });
    expect(Error.prepareStackTrace).toBe(mapped);
    expect(debuggablePromise()).toMatch(/^MAPPED /);
    restore();
    expect(Error.prepareStackTrace).toBe(mapped);
  });

  it("changes nothing when no formatter is installed (V8 formats natively)", () => {
    Reflect.set(Error, "prepareStackTrace", undefined);
    const restore = skipPulumiPromiseStacks({});
    expect(Error.prepareStackTrace).toBeUndefined();
    expect(debuggablePromise()).toMatch(/at debuggablePromise/);
    restore();
    expect(Error.prepareStackTrace).toBeUndefined();
  });

  it("leaves a formatter installed meanwhile in place", () => {
    const restore = skipPulumiPromiseStacks({});
    const other: Formatter = () => "OTHER";
    Error.prepareStackTrace = other;
    restore();
    expect(Error.prepareStackTrace).toBe(other);
  });
});

describe("UserGroup construction", () => {
  it("puts the formatter back when the SDK refuses the registration", () => {
    expect(() => new UserGroup("", { name: "Acme", userGroupId: "acme" })).toThrow(/name/);
    expect(Error.prepareStackTrace).toBe(mapped);
  });
});

describe("against the installed @pulumi/pulumi", () => {
  it("recognises the SDK's own promise wrapper, so an upgrade that renames it is noticed", async () => {
    const { debuggablePromise } = require("@pulumi/pulumi/runtime/debuggable") as {
      debuggablePromise: <T>(p: Promise<T>, ctx: unknown) => Promise<T>;
    };
    const wrapped = Promise.resolve(1);
    const restore = skipPulumiPromiseStacks({});
    try {
      await debuggablePromise(wrapped, "test");
    } finally {
      restore();
    }
    expect(Object.getOwnPropertyDescriptor(wrapped, "_debugStackTrace")?.value).toBe(SKIPPED_PROMISE_STACK);
  });
});
