// Stack names become parts of paths (the file backend's stacks, locks, history;
// the recovery file) before Pulumi itself looks at them, so every entry point
// checks them first: `user-groups recover --stack ../x` must not reach a path.
// Pulumi's documented rule, per segment: letters, digits, `-`, `_` and `.`, at
// most 100 characters; a name is `stack`, `org/stack` or `org/project/stack`.
// `.` and `..` are refused as segments (they match the characters but mean
// "here" and "up" in a path).
import { UserGroupsError } from "../wire/errors";

const SEGMENT = /^[A-Za-z0-9_.-]{1,100}$/;

export class InvalidStackNameError extends UserGroupsError {
  constructor(readonly stackName: string) {
    super(
      "invalid_stack_name",
      `Invalid stack name ${JSON.stringify(stackName.slice(0, 120))}: use letters, digits, "-", "_" and "." (at most 100), ` +
        `optionally as org/stack or org/project/stack; "." and ".." are not names.`,
    );
    this.name = "InvalidStackNameError";
  }
}

/** Whether Pulumi would accept `name` as a stack name and it is safe in a path. */
export function isValidStackName(name: string): boolean {
  const segments = name.split("/");
  return segments.length <= 3 && segments.every((s) => SEGMENT.test(s) && s !== "." && s !== "..");
}

/** Returns `name`, or throws InvalidStackNameError. */
export function assertValidStackName(name: string): string {
  if (!isValidStackName(name)) throw new InvalidStackNameError(name);
  return name;
}
