// Repair of a file backend after a kill in the middle of a checkpoint write.
// The backend writes each blob through gocloud's fileblob: the data goes to a
// temporary file that is renamed into place (atomic), but its metadata sidecar
// `<file>.attrs` is truncated and rewritten in place first (not atomic). A kill
// between the two leaves an empty sidecar, and from then on every command on
// the stack fails with "failed to load checkpoint: EOF" (seen in bench/crash.ts).
// The sidecar is optional (fileblob treats a missing one as "no metadata"), and
// the data file beside it is whole: the old or the new checkpoint. So a sidecar
// that is not valid JSON is removed, as are temporary files of the dead writer.
import { existsSync, readdirSync, readFileSync, rmSync } from "node:fs";
import path from "node:path";
import { type Clock, systemClock } from "../../clock";
import { assertValidStackName } from "../stack-name";

function isTorn(file: string): boolean {
  try {
    JSON.parse(readFileSync(file, "utf8"));
    return false;
  } catch {
    return true;
  }
}

/** Call only once the stack's lock is known stale (no writer alive). Returns the removed files. */
export function repairTornWrites(backendDir: string, project: string, stack: string): string[] {
  assertValidStackName(stack); // joined into paths below
  const pulumiDir = path.join(backendDir, ".pulumi");
  const removed: string[] = [];
  const sweep = (dir: string, belongs: (name: string) => boolean) => {
    if (!existsSync(dir)) return;
    for (const name of readdirSync(dir)) {
      if (!belongs(name)) continue;
      const file = path.join(dir, name);
      if ((name.endsWith(".attrs") && isTorn(file)) || name.endsWith(".tmp")) {
        rmSync(file, { force: true });
        removed.push(file);
      }
    }
  };
  // `<stack>.json`, `<stack>.json.bak`, their sidecars and temporaries live beside other stacks' files.
  sweep(path.join(pulumiDir, "stacks", project), (name) => name.startsWith(`${stack}.json`));
  sweep(path.join(pulumiDir, "history", project, stack), () => true);
  sweep(path.join(pulumiDir, "backups", project, stack), () => true);
  return removed;
}

/** How long a torn sidecar must stay torn to be a dead writer's: a live one rewrites it within milliseconds. */
export const TORN_FOR_MS = 2_000;

/**
 * For a stack that cannot even be selected ("failed to load checkpoint: EOF")
 * before any run could take it over: removes the stack file's sidecars that are
 * torn and stay torn for TORN_FOR_MS (their writer is dead; the data file is
 * whole). Returns the removed files (none: the failure is something else).
 */
export async function removeLingeringTornSidecars(
  backendDir: string,
  project: string,
  stack: string,
  tornForMs = TORN_FOR_MS,
  clock: Clock = systemClock,
): Promise<string[]> {
  assertValidStackName(stack);
  const dir = path.join(backendDir, ".pulumi", "stacks", project);
  const org = stack.split("/");
  const name = org.at(-1)!;
  if (!existsSync(dir)) return [];
  const torn = () =>
    readdirSync(dir)
      .filter((file) => file.startsWith(`${name}.json`) && file.endsWith(".attrs"))
      .map((file) => path.join(dir, file))
      .filter(isTorn);
  const first = torn();
  if (first.length === 0) return [];
  await clock.sleep(tornForMs);
  const still = new Set(torn());
  const removed = first.filter((file) => still.has(file));
  for (const file of removed) rmSync(file, { force: true });
  return removed;
}
