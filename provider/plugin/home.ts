// The project's one canonical home, and every address derived from it: the
// repository package.json names (`repository`, `homepage`, `bugs`), where the
// engine downloads the plugin from (the schema's `pluginDownloadURL`: the
// repository's GitHub releases, one per version, tagged v{VERSION}), the Go
// SDK's module path and the Python and .NET packages' project URLs (from the
// schema's `homepage` and `repository`). To move the project, change OWNER and
// REPOSITORY here, then `npm run sdk` (it rewrites package.json's three fields
// and the SDKs); test/plugin/sdk-drift.test.ts fails until that is done.

/** The GitHub organisation, and the repository in it. */
export const OWNER = "pulumi-user-groups";
export const REPOSITORY = "pulumi-user-groups";

export const REPOSITORY_URL = `https://github.com/${OWNER}/${REPOSITORY}`;

/** package.json's `repository`, `homepage` and `bugs`, as npm writes them. */
export const PACKAGE_JSON_HOME = {
  repository: { type: "git", url: `git+${REPOSITORY_URL}.git` },
  homepage: `${REPOSITORY_URL}#readme`,
  bugs: { url: `${REPOSITORY_URL}/issues` },
} as const;

/**
 * Where Pulumi downloads `pulumi-resource-user-groups-v{VERSION}-{os}-{arch}.tar.gz`
 * from: the assets of this repository's GitHub release tagged v{VERSION}, the
 * folder `npm run release` writes (sdk/go/common/workspace/plugins.go,
 * githubSource; it can also find the latest release, so a program may leave out
 * the version). A mirror serves the same folder over plain HTTP(S):
 * `https://HOST/PATH/v${VERSION}` (httpSource: the engine replaces `${VERSION}`
 * and appends the archive's name; it cannot find the latest version there).
 */
export const PLUGIN_DOWNLOAD_URL = `github://api.github.com/${OWNER}/${REPOSITORY}`;

/** The same release folder as a plain HTTPS URL (a template: the engine replaces `${VERSION}`). */
export const RELEASE_DOWNLOAD_URL = `${REPOSITORY_URL}/releases/download/v\${VERSION}`;

/** The Go SDK's module (its go.mod is sdk/go.mod, as in Pulumi's own providers) and package. */
export const GO_MODULE = `github.com/${OWNER}/${REPOSITORY}/sdk`;
export const GO_IMPORT_PATH = `${GO_MODULE}/go/usergroups`;
