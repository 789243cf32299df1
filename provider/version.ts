// The package's own version, for the User-Agent header. Found by walking up to
// our package.json, so it works from the sources (tests) and from dist/.
import { readFileSync } from "node:fs";
import path from "node:path";

function findPackageVersion(start: string): string {
  let dir = start;
  for (;;) {
    try {
      const pkg = JSON.parse(readFileSync(path.join(dir, "package.json"), "utf8")) as { name?: string; version?: string };
      if (pkg.name === "pulumi-user-groups" && typeof pkg.version === "string") return pkg.version;
    } catch {
      // no package.json here: keep walking up
    }
    const parent = path.dirname(dir);
    if (parent === dir) return "0.0.0";
    dir = parent;
  }
}

export const PACKAGE_VERSION = findPackageVersion(__dirname);
export const USER_AGENT = `pulumi-user-groups/${PACKAGE_VERSION}`;
