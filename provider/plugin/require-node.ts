// Imported first by the plugin's executable: the engine starts the plugin on
// whichever `node` is on PATH, and an older one fails later with an error that
// names nothing useful (undici needs Node >= 22).
export const MINIMUM_NODE_MAJOR = 22;

const major = Number(process.versions.node.split(".")[0]);
if (!(major >= MINIMUM_NODE_MAJOR)) {
  process.stderr.write(
    `pulumi-resource-user-groups needs Node.js ${MINIMUM_NODE_MAJOR} or newer; it was started with ${process.version} (${process.execPath}). ` +
      "Put a newer node first on PATH, or set PULUMI_USER_GROUPS_NODE to its path.\n",
  );
  process.exit(1);
}
