// A would-be plugin a planted state could make the engine fetch (CONTRACT F10):
// archives for each name the engine could ask for, served over HTTP on
// 127.0.0.1 by a server that records every request; started, the plugin leaves
// a marker naming whether the API key was in its environment. A test plants
// `url` in a state, runs what reads it, and expects no request and no marker.
import { execFileSync } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { type FolderServer, serveFolder } from "../plugin/support";

export interface PlantedPlugin {
  /** The plugin download URL to plant. */
  readonly url: string;
  /** Every request the host got. */
  readonly requests: FolderServer["requests"];
  /** Whether a planted plugin process was started. */
  ran(): boolean;
  close(): Promise<void>;
}

/** The names a planted provider resource can make the engine look up (its type's package, or `__internal.name`). */
export const PLANTED_PLUGIN_NAMES = ["evilplug", "pulumi-nodejs"] as const;
export const PLANTED_PLUGIN_VERSION = "1.0.0";

/** Makes the archives under `root` (a directory of the test's own) and serves them. */
export async function servePlantedPlugin(root: string): Promise<PlantedPlugin> {
  const marker = path.join(root, "planted-plugin-ran");
  const files = path.join(root, "plugin");
  const served = path.join(root, "served");
  mkdirSync(files, { recursive: true });
  mkdirSync(served, { recursive: true });
  const platform = `${process.platform}-${process.arch === "x64" ? "amd64" : process.arch}`;
  for (const name of PLANTED_PLUGIN_NAMES) {
    const file = path.join(files, `pulumi-resource-${name}`);
    writeFileSync(file, `#!/bin/sh\necho "ran with key: \${USER_GROUPS_API_KEY:+present}" > '${marker}'\nexit 1\n`);
    chmodSync(file, 0o755);
  }
  for (const name of PLANTED_PLUGIN_NAMES) {
    execFileSync("tar", ["-czf", path.join(served, `pulumi-resource-${name}-v${PLANTED_PLUGIN_VERSION}-${platform}.tar.gz`), "-C", files, "."]);
  }
  const host = await serveFolder(served);
  return { url: host.url, requests: host.requests, ran: () => existsSync(marker), close: host.close };
}
