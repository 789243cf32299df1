// What Pulumi stores as `__provider` for every UserGroup: a tiny module that,
// at run time, loads the installed package's provider by name from the
// program's directory (the dynamic-provider process runs there). It captures
// no credentials and none of our code, so the state stays small, it is the
// same text on every machine (no spurious diffs), and refresh and destroy run
// the current provider code. Pulumi's closure serializer would instead write
// kilobytes of wrappers per resource, twice (inputs and outputs; state sizes in
// docs/performance.md).

/**
 * Resolved by Pulumi's dynamic-provider process as `requireFromString(text).handler()`.
 * When the package is not installed there, Node's own error names the missing
 * module "pulumi-user-groups/provider-runtime". Kept short: it is stored twice per group.
 */
export const PROVIDER_MODULE_TEXT =
  'exports.handler=()=>require("node:module").createRequire(process.cwd()+"/_.js")' +
  '("pulumi-user-groups/provider-runtime").userGroupProvider;';
