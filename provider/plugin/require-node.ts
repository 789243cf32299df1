// Imported first by the plugin's executable: the engine starts the plugin on
// whichever `node` is on PATH, and an older one fails later with an error that
// names nothing useful (undici needs Node >= 22).
import { MINIMUM_NODE_MAJOR, nodeTooOld, nodeTooOldMessage } from "../node-version";

export { MINIMUM_NODE_MAJOR };

if (nodeTooOld()) {
  process.stderr.write(`${nodeTooOldMessage("pulumi-resource-user-groups", "Put a newer node first on PATH, or set PULUMI_USER_GROUPS_NODE to its path.")}\n`);
  process.exit(1);
}
