// The dynamic provider that actually runs, inside Pulumi's dynamic-provider
// process. It is loaded there by name (see provider-shell.ts), never serialized,
// so refresh and destroy always run the installed package's code. Each method
// is a thin shell over ../logic/lifecycle.ts, which the provider plugin
// (../plugin) runs too.
import "./require-node"; // first: on a Node.js older than 22, say so instead of failing obscurely later
import { saveCompileCache } from "../compile-cache"; // it covers the modules loaded after it
import type * as pulumi from "@pulumi/pulumi";
import { quietHostEcho } from "../logic/engine-facing";
import { PROCESS_ENVIRONMENT, type ProviderEnvironment, UserGroupLifecycle } from "../logic/lifecycle";
import { watchEngineOfThisProcess } from "./engine-watchdog";

export { DEBUG_ENV, type ProviderEnvironment } from "../logic/lifecycle";

type Props = Record<string, unknown>;

export class UserGroupProvider implements pulumi.dynamic.ResourceProvider {
  private readonly lifecycle: UserGroupLifecycle;

  constructor(surroundings: ProviderEnvironment = PROCESS_ENVIRONMENT) {
    this.lifecycle = new UserGroupLifecycle(surroundings);
  }

  async configure(req: pulumi.dynamic.ConfigureRequest): Promise<void> {
    this.lifecycle.configure((key) => req.config.get(key));
  }

  async check(_olds: Props, news: Props): Promise<pulumi.dynamic.CheckResult> {
    const result = this.lifecycle.check(news);
    return result.ok ? { inputs: result.inputs } : { inputs: news, failures: result.failures };
  }

  async diff(_id: string, olds: Props, news: Props): Promise<pulumi.dynamic.DiffResult> {
    const outcome = this.lifecycle.diff(olds, news);
    return { changes: outcome.changes, replaces: outcome.replaces, deleteBeforeReplace: outcome.deleteBeforeReplace };
  }

  async create(inputs: Props): Promise<pulumi.dynamic.CreateResult> {
    const outs = await this.lifecycle.create(inputs);
    return { id: outs.userGroupId, outs };
  }

  async read(id: string, props: Props): Promise<pulumi.dynamic.ReadResult> {
    const outcome = await this.lifecycle.read(props);
    // A blank id tells the engine the group is gone.
    if (!outcome.found) return { id: "", props: {} };
    return { id, props: outcome.outputs, inputs: outcome.inputs };
  }

  async update(_id: string, olds: Props, news: Props): Promise<pulumi.dynamic.UpdateResult> {
    return { outs: await this.lifecycle.update(olds, news) };
  }

  async delete(_id: string, props: Props): Promise<void> {
    await this.lifecycle.delete(props);
  }
}

/** The one instance the dynamic-provider process uses for every UserGroup. */
export const userGroupProvider = new UserGroupProvider();
// Pulumi's dynamic-provider host echoes a failed read or delete with its stack trace: the engine prints our one line instead.
quietHostEcho();
// A provider whose engine was killed exits within seconds instead of working on alone.
watchEngineOfThisProcess();
saveCompileCache();
