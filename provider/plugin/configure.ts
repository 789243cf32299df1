// The provider's config (`user-groups:baseUrl`, `user-groups:apiKey`, ...)
// reaches a plugin in the Configure call. The server that
// `@pulumi/pulumi/provider`'s `main` runs answers Configure itself and passes
// nothing on to the Provider, so this hooks the service implementation as
// `main` registers it and hands each Configure request to a listener first.
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

type Handler = (call: { request: ConfigureRequestLike }, callback: (error: unknown, value?: unknown) => void) => void;
interface GrpcServerPrototype {
  addService(service: unknown, implementation: Record<string, unknown>): void;
}

let listener: ((config: ConfigLookup) => void) | undefined;

/** Calls `onConfig` with each Configure request's config, before `main`'s own answer. Call before `main`. */
export function listenForConfigure(onConfig: (config: ConfigLookup) => void): void {
  const first = listener === undefined;
  listener = onConfig;
  if (!first) return;
  // The grpc-js that @pulumi/pulumi itself loads (it may not be ours).
  const pulumiRequire = createRequire(require.resolve("@pulumi/pulumi"));
  const grpc = pulumiRequire("@grpc/grpc-js") as { Server: { prototype: GrpcServerPrototype } };
  const prototype = grpc.Server.prototype;
  const addService = prototype.addService;
  prototype.addService = function (this: GrpcServerPrototype, service, implementation) {
    const configure = implementation.configure as Handler | undefined;
    if (typeof configure === "function") {
      implementation.configure = ((call, callback) => {
        try {
          listener?.(configLookupFrom(call.request));
        } catch (error) {
          callback(error);
          return;
        }
        configure.call(implementation, call, callback);
      }) satisfies Handler;
    }
    addService.call(this, service, implementation);
  };
}
