// The Automation API's `up`, `refresh` and `destroy` read the stack again once
// the engine has ended: its outputs (two `pulumi stack output` calls) and its
// last history entry (`pulumi stack history`). Three more CLI processes, two
// of them decrypting the stack's secrets with the passphrase: about as much CPU
// as the engine run itself spends on a small stack, for values our runs never
// read (the change tracker hears every step, and an inline program hands its
// outputs over in process). Measured on a
// warm 2-core machine: an `up` of one group 3.3 s with them, 2.0 s without.
import type { Stack } from "@pulumi/pulumi/automation";

/** A stack whose runs return once the engine has ended: an `up`'s result carries no outputs and no summary. */
export function runOnly(stack: Stack): Pick<Stack, "up" | "refresh" | "destroy" | "preview"> {
  // Stack's methods reach everything through `this` (workspace, name, runPulumiCmd): a view whose two readers
  // answer nothing runs the very same commands otherwise.
  return Object.create(stack, {
    outputs: { value: () => Promise.resolve({}) },
    info: { value: () => Promise.resolve(undefined) },
  }) as Stack;
}
