// Two gaps in the gRPC server that `@pulumi/pulumi/provider`'s `main` runs,
// closed by wrapping its service implementation as `main` registers it:
// 1. The provider's config (`user-groups:baseUrl`, `user-groups:apiKey`, ...)
//    reaches a plugin in the Configure call, which that server answers itself,
//    passing nothing on to the Provider: each request goes to a listener first.
// 2. Its Read calls `getProperties().toJavaScript()`, but an import's Read
//    carries no properties at all (only the id): the server would crash with
//    "Cannot read properties of undefined". An empty struct is put in first.
import { createRequire } from "node:module";
import type { ConfigLookup } from "../logic/credentials";
import { CONFIG_NAMESPACE } from "../logic/credentials";
import { unwrapSecrets } from "./secrets";

/** The part of a pulumirpc.ConfigureRequest read here. */
export interface ConfigureRequestLike {
  getArgs(): { toJavaScript(): Record<string, unknown> } | undefined;
  getVariablesMap(): { toArray(): [string, string][] };
}

/**
 * Stack config as the engine sends it: `args` holds each key's value (objects
 * for structured config, secrets wrapped); the older `variables` map holds
 * strings keyed `user-groups:config:<key>`. Lookups use the full key
 * (`user-groups:apiKey`), as credentials.ts does.
 */
export function configLookupFrom(request: ConfigureRequestLike): ConfigLookup {
  const args = unwrapSecrets(request.getArgs()?.toJavaScript()).plain;
  const variables = new Map(request.getVariablesMap().toArray());
  const prefix = `${CONFIG_NAMESPACE}:`;
  return (key) => {
    if (!key.startsWith(prefix)) return undefined;
    const name = key.slice(prefix.length);
    if (Object.hasOwn(args, name)) return args[name];
    return variables.get(`${CONFIG_NAMESPACE}:config:${name}`);
  };
}

type Handler<Request> = (call: { request: Request }, callback: (error: unknown, value?: unknown) => void) => void;
/** The part of a pulumirpc.ReadRequest touched here. */
interface ReadRequestLike {
  getProperties(): unknown;
  setProperties(value: unknown): void;
}
interface GrpcServerPrototype {
  addService(service: unknown, implementation: Record<string, unknown>): void;
}

let listener: ((config: ConfigLookup) => void) | undefined;

/**
 * Hooks the provider server `main` is about to start (call before `main`):
 * `onConfig` gets each Configure request's config before `main`'s own answer,
 * and an import's Read gets the empty properties the server expects.
 */
export function hookProviderServer(onConfig: (config: ConfigLookup) => void): void {
  const first = listener === undefined;
  listener = onConfig;
  if (!first) return;
  // The grpc-js and protobuf runtime that @pulumi/pulumi itself loads (they may not be ours).
  const pulumiRequire = createRequire(require.resolve("@pulumi/pulumi"));
  const grpc = pulumiRequire("@grpc/grpc-js") as { Server: { prototype: GrpcServerPrototype } };
  const { Struct } = pulumiRequire("google-protobuf/google/protobuf/struct_pb") as { Struct: new () => unknown };
  const prototype = grpc.Server.prototype;
  const addService = prototype.addService;
  prototype.addService = function (this: GrpcServerPrototype, service, implementation) {
    const configure = implementation.configure as Handler<ConfigureRequestLike> | undefined;
    if (typeof configure === "function") {
      implementation.configure = ((call, callback) => {
        try {
          listener?.(configLookupFrom(call.request));
        } catch (error) {
          callback(error);
          return;
        }
        configure.call(implementation, call, callback);
      }) satisfies Handler<ConfigureRequestLike>;
    }
    const read = implementation.read as Handler<ReadRequestLike> | undefined;
    if (typeof read === "function") {
      implementation.read = ((call, callback) => {
        if (call.request.getProperties() === undefined) call.request.setProperties(new Struct());
        return read.call(implementation, call, callback);
      }) satisfies Handler<ReadRequestLike>;
    }
    addService.call(this, service, implementation);
  };
}
