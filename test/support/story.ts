// Tests of one file that build on each other (one stack taken through its life:
// up, drift, refresh, destroy) say so: each is a step, and a step runs only when
// every step before it ran and passed. Otherwise it is skipped, naming the step it
// needs, rather than failing for a reason that is not its own, or passing alone
// (vitest -t) with nothing of what it builds on in place.
import { it, type TestContext } from "vitest";

export type Step = (name: string, body: (context: TestContext) => Promise<void> | void, timeoutMs?: number) => void;

/** The `it` of a story: call it, then declare its steps in order. */
export function story(): Step {
  const names: string[] = [];
  const passed = new Set<number>();
  return (name, body, timeoutMs) => {
    const index = names.push(name) - 1;
    it(
      name,
      async (context) => {
        const missing = names.slice(0, index).findIndex((_, before) => !passed.has(before));
        if (missing !== -1) context.skip(`builds on the step "${names[missing]}", which did not run or did not pass`);
        await body(context);
        passed.add(index);
      },
      timeoutMs,
    );
  };
}
