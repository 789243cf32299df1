// The oldest Node.js this package runs on (package.json "engines"), and the
// sentence that names it. Pulumi starts the program, the dynamic provider and
// the plugin with whichever `node` is first on PATH; an older one fails later
// with an error that names nothing useful (undici needs Node >= 22: on Node 20
// every group fails with "Cannot read properties of undefined (reading 'bind')").
// Written for old runtimes: nothing here needs more than Node 12.
import { UserGroupsError } from "./wire/errors";

export const MINIMUM_NODE_MAJOR = 22;

/** True when this process's Node.js is older than MINIMUM_NODE_MAJOR. */
export function nodeTooOld(version: string = process.versions.node): boolean {
  const major = Number(version.split(".")[0]);
  return !(major >= MINIMUM_NODE_MAJOR);
}

/** `<who> needs Node.js 22 or newer; it was started with v20.1.0 (/usr/bin/node). <fix>` */
export function nodeTooOldMessage(who: string, fix: string): string {
  return `${who} needs Node.js ${MINIMUM_NODE_MAJOR} or newer; it was started with ${process.version} (${process.execPath}). ${fix}`;
}

export class NodeTooOldError extends UserGroupsError {
  constructor(message: string) {
    super("node_too_old", message);
    this.name = "NodeTooOldError";
  }
}

/** What Pulumi runs the program and the dynamic provider with: the first `node` on PATH. */
export const DYNAMIC_PROVIDER_FIX =
  "Pulumi runs the program and its dynamic providers with the first node on PATH: put Node.js 22 or newer first on PATH (e.g. `nvm use 22`) and run again.";

/** Throws NodeTooOldError naming `who` when this process's Node.js is too old. */
export function assertNodeVersion(who: string): void {
  if (nodeTooOld()) throw new NodeTooOldError(nodeTooOldMessage(who, DYNAMIC_PROVIDER_FIX));
}
