// Where a file:// backend keeps its files.
import { homedir } from "node:os";
import path from "node:path";

/** The directory of a file backend URL, or undefined for any other backend. */
export function fileBackendDir(backendUrl: string): string | undefined {
  if (!backendUrl.startsWith("file://")) return undefined;
  // Pulumi's file URLs are plain paths after the scheme (`file://~/x` included), with optional query options.
  const raw = decodeURIComponent(backendUrl.slice("file://".length).split("?")[0]!);
  return raw === "~" || raw.startsWith("~/") ? path.join(homedir(), raw.slice(1)) : raw;
}
