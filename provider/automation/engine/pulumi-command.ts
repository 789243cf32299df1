// The Pulumi CLI, found and version-checked once per process and PATH rather
// than once per workspace: a sharded run opens a workspace per shard, and each
// would otherwise start the CLI once more only to read its version.
import { PulumiCommand } from "@pulumi/pulumi/automation";

const SKIP_VERSION_CHECK = "PULUMI_AUTOMATION_API_SKIP_VERSION_CHECK";
const found = new Map<string, Promise<PulumiCommand>>();

/** The `pulumi` on this process's PATH, as LocalWorkspace would find it (`envVars` may skip the version check, as there). */
export function pulumiCommandOnPath(envVars: Readonly<Record<string, string>> = {}): Promise<PulumiCommand> {
  const skipVersionCheck = Boolean(envVars[SKIP_VERSION_CHECK] || process.env[SKIP_VERSION_CHECK]);
  const key = `${skipVersionCheck}\u0000${process.env.PATH ?? ""}`;
  let command = found.get(key);
  if (command === undefined) {
    command = PulumiCommand.get({ skipVersionCheck });
    found.set(key, command);
    // A missing CLI is asked for again next time (it may have been installed since).
    command.catch(() => {
      if (found.get(key) === command) found.delete(key);
    });
  }
  return command;
}
