// The layering of provider/ and fake-server/ (docs/architecture.md), checked by
// dependency-cruiser in `npm test` (test/architecture/layers.unit.test.ts):
//   wire -> backends -> client -> logic -> resource / plugin -> automation -> cli
// never upward, no import cycles, the automation folders one way
// (telemetry -> model -> backend -> lease -> engine -> shards -> operations, fleet), each
// folder entered through its index.ts, and cli/ and the repository's tools using
// automation only through its entry points (index.ts, internal.ts, offline.ts); backends/
// (the shared state backends) entered through its registry, index.ts, its
// adapter folders apart from each other.
/** Paths below provider/ a layer must not import. */
const LAYERS = [
  ["wire", ["backends", "client", "logic", "resource", "plugin", "automation", "cli", "conformance"]],
  // The shared state backends sit below the client: the provider processes' rate budget and run fence are theirs.
  ["backends", ["client", "logic", "resource", "plugin", "automation", "cli", "conformance"]],
  ["client", ["logic", "resource", "plugin", "automation", "cli", "conformance"]],
  ["logic", ["resource", "plugin", "automation", "cli", "conformance"]],
  ["resource", ["plugin", "automation", "cli", "conformance"]],
  ["plugin", ["automation", "cli", "conformance"]],
  ["automation", ["plugin", "cli", "conformance"]],
  // The conformance kit speaks the wire over HTTP itself: it stands beside the client, on the wire only.
  ["conformance", ["backends", "client", "logic", "resource", "plugin", "automation", "cli"]],
];
/** Folders of provider/automation/ a folder must not import (the ones below it in the table in its README). */
const AUTOMATION = [
  ["telemetry", ["model", "backend", "lease", "engine", "shards", "operations", "fleet"]],
  ["model", ["backend", "lease", "engine", "shards", "operations", "fleet"]],
  ["backend", ["lease", "engine", "shards", "operations", "fleet"]],
  ["lease", ["engine", "shards", "operations", "fleet"]],
  ["engine", ["shards", "operations", "fleet"]],
  ["shards", ["operations", "fleet"]],
  ["fleet", ["operations"]],
];
const either = (names) => `(${names.join("|")})`;

module.exports = {
  forbidden: [
    {
      name: "no-cycles",
      severity: "error",
      comment: "An import cycle (anywhere: the product, the benches, the scripts, the test kit): one of the files belongs a layer lower.",
      from: { path: "^(provider|fake-server|testing|bench|scripts|testkit)/" },
      to: { circular: true },
    },
    ...LAYERS.map(([layer, above]) => ({
      name: `layer-${layer}`,
      severity: "error",
      comment: `provider/${layer} imports a layer above it.`,
      from: { path: `^provider/${layer}/` },
      to: { path: `^provider/${either(above)}/` },
    })),
    {
      name: "provider-root-stays-low",
      severity: "error",
      comment: "The package entry and helpers at provider/ import no automation or cli.",
      from: { path: "^provider/[^/]+\\.ts$" },
      to: { path: "^provider/(automation|cli|plugin)/" },
    },
    {
      name: "fake-server-shares-only-wire",
      severity: "error",
      comment: "The emulator shares the wire schemas with the client, and nothing else of provider/.",
      from: { path: "^fake-server/" },
      to: { path: "^provider/", pathNot: "^provider/wire/" },
    },
    ...AUTOMATION.map(([folder, above]) => ({
      name: `automation-${folder}`,
      severity: "error",
      comment: `provider/automation/${folder} imports a folder above it.`,
      from: { path: `^provider/automation/${folder}/` },
      to: { path: `^provider/automation/${either(above)}/` },
    })),
    {
      name: "automation-folder-through-index",
      severity: "error",
      comment: "Another folder's file is imported directly: go through that folder's index.ts.",
      from: { path: "^provider/automation/([^/]+)/" },
      to: { path: "^provider/automation/[^/]+/[^/]+\\.ts$", pathNot: ["^provider/automation/$1/", "/index\\.ts$"] },
    },
    {
      name: "automation-subfolder-through-index",
      severity: "error",
      comment: "A sub-folder of an automation folder (engine/state/, engine/pulumi-cli/) is entered through its index.ts from outside it.",
      from: { path: "^provider/", pathNot: "^provider/automation/[^/]+/[^/]+/" },
      to: { path: "^provider/automation/[^/]+/[^/]+/[^/]+\\.ts$", pathNot: "/index\\.ts$" },
    },
    {
      name: "automation-entry-points-only",
      severity: "error",
      comment: "cli/, bench/, scripts/ and testkit/ use automation only through its entry points: index.ts, internal.ts, offline.ts (what runs no engine).",
      from: { path: "^(provider/cli|bench|scripts|testkit)/" },
      to: { path: "^provider/automation/", pathNot: "^provider/automation/(index|internal|offline)\\.ts$" },
    },
    {
      name: "client-folder-through-index",
      severity: "error",
      comment: "A client/ sub-folder's file is imported directly from outside it: go through its index.ts.",
      from: { path: "^provider/", pathNot: "^provider/client/rate-budget/" },
      to: { path: "^provider/client/rate-budget/[^/]+\\.ts$", pathNot: "/index\\.ts$" },
    },
    {
      name: "backends-through-registry",
      severity: "error",
      comment: "A file of provider/backends/ is imported from outside it past its registry: go through provider/backends/index.ts.",
      from: { path: "^provider/", pathNot: "^provider/backends/" },
      to: { path: "^provider/backends/.+\\.ts$", pathNot: "^provider/backends/index\\.ts$" },
    },
    {
      name: "backends-adapters-apart",
      severity: "error",
      comment: "An adapter of provider/backends/ imports another adapter's folder: what they share belongs in provider/backends/ itself.",
      from: { path: "^provider/backends/([^/]+)/" },
      to: { path: "^provider/backends/[^/]+/", pathNot: "^provider/backends/$1/" },
    },
    {
      name: "backends-interface-below-adapters",
      severity: "error",
      comment: "A shared file of provider/backends/ (the interface, the run record) imports an adapter: only the registry (index.ts) knows them.",
      from: { path: "^provider/backends/[^/]+\\.ts$", pathNot: "^provider/backends/index\\.ts$" },
      to: { path: "^provider/backends/[^/]+/" },
    },
    {
      name: "cli-output-through-index",
      severity: "error",
      comment: "A file of provider/cli/output/ is imported directly from outside it: go through its index.ts.",
      from: { path: "^provider/", pathNot: "^provider/cli/output/" },
      to: { path: "^provider/cli/output/[^/]+\\.ts$", pathNot: "/index\\.ts$" },
    },
    {
      name: "otel-sdk-only-in-setup",
      severity: "error",
      comment:
        "An OpenTelemetry SDK package (anything of @opentelemetry/ but the API) outside provider/cli/telemetry-setup.ts: the library uses @opentelemetry/api only, " +
        "the one setup module loads the SDK when OTEL_* asks for it (bench/ too: it measures the cost with an SDK); provider/telemetry-sdk.ts " +
        "is the provider processes' counterpart (it loads the SDK through createRequire, which this rule cannot see, so it is named here).",
      from: { path: "^(provider|fake-server|scripts|testkit)/", pathNot: "^provider/(cli/telemetry-setup|telemetry-sdk)\\.ts$" },
      to: { path: "(^|/)@opentelemetry/(?!api(/|$))" },
    },
    {
      name: "testing-through-entries",
      severity: "error",
      comment:
        "testing/ (pulumi-user-groups/testing) stands on the public entries: the fake server's index.ts, the package's index.ts, " +
        "the resource, the wire, the clock and the conformance kit's index.ts.",
      from: { path: "^testing/" },
      to: {
        path: "^(provider|fake-server)/",
        pathNot: "^(fake-server/index\\.ts|provider/(index|clock)\\.ts|provider/wire/[^/]+\\.ts|provider/resource/user-group\\.ts|provider/conformance/index\\.ts)$",
      },
    },
    {
      name: "product-not-from-testing",
      severity: "error",
      comment: "The product (provider/, fake-server/) never imports the testing entry: it is built on them.",
      from: { path: "^(provider|fake-server)/" },
      to: { path: "^testing/" },
    },
    {
      name: "tools-not-from-tests",
      severity: "error",
      comment: "bench/, scripts/ and testkit/ never import test/: the harness they share with the tests is testkit/.",
      from: { path: "^(bench|scripts|testkit)/" },
      to: { path: "^test/" },
    },
  ],
  options: {
    doNotFollow: { path: "node_modules" },
    exclude: { path: "(^|/)(node_modules|dist|build)/" },
    tsConfig: { fileName: "tsconfig.json" },
    tsPreCompilationDeps: true,
  },
};
