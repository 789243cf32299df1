// Pulumi's Node.js dynamic-provider host loads the whole of @pulumi/pulumi, and
// its closure serializer requires TypeScript's compiler and npm's Arborist (with
// pacote, sigstore and more) when it is loaded: 780 modules where the host needs
// 333, about 0.7 s of CPU of its 1 s start, paid by every engine run of a
// UserGroup. A provider process never serializes a function (it reads the
// provider's text with require-from-string), so there both are loaded on first
// use instead. The provider preload (telemetry-preload.ts) calls this in that
// process only; anything else Pulumi's files or anyone else require is untouched.
import Module from "node:module";

type Load = (request: string, parent: NodeJS.Module | undefined, isMain: boolean) => unknown;
const PULUMI_SDK_FILE = /[\\/]@pulumi[\\/]pulumi[\\/]/;
let deferred = false;

/** Makes @pulumi/pulumi's own `require("typescript")` and `require("@npmcli/arborist")` load on first use. Idempotent. */
export function deferClosureSerializerModules(): void {
  if (deferred) return;
  deferred = true;
  const loader = Module as unknown as { _load: Load };
  const load = loader._load;
  loader._load = function (request, parent, isMain) {
    if ((request === "typescript" || request === "@npmcli/arborist") && parent && PULUMI_SDK_FILE.test(parent.filename)) {
      let real: unknown;
      const actual = () => (real ??= load.call(this, request, parent, isMain));
      return request === "typescript" ? lazyNamespace(actual) : lazyArborist(actual);
    }
    return load.call(this, request, parent, isMain);
  };
}

/** TypeScript's namespace, read property by property: the closure serializer uses it only inside its functions. */
function lazyNamespace(actual: () => unknown): object {
  const target = () => actual() as Record<PropertyKey, unknown>;
  return new Proxy(
    {},
    {
      get: (_, key) => target()[key],
      has: (_, key) => key in target(),
    },
  );
}

/**
 * Arborist's module as codePaths.js uses it: its `__importStar` copies the
 * module's own properties when loaded, and it only ever calls `new
 * arborist.Arborist(...)`; a constructor that builds the real one stands in.
 */
function lazyArborist(actual: () => unknown): object {
  function Arborist(...args: unknown[]): object {
    const Real = (actual() as { Arborist: new (...a: unknown[]) => object }).Arborist;
    return new Real(...args);
  }
  return { Arborist };
}
