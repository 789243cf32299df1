// Azure Blob Storage for the tests: Azurite (npm `azurite`, a devDependency),
// its blob service alone, with an account made for this server (a random name
// and key, given to Azurite in AZURITE_ACCOUNTS and to Pulumi in AZURE_STORAGE_*:
// the environment only). Requests are signed with Shared Key like any Azure
// client's; a conditional create is `If-None-Match: *` (a blob lease is the other
// primitive issue 42 names).
import { createHmac, randomBytes } from "node:crypto";
import path from "node:path";
import { expectStatus, type ObjectStore, REPO_ROOT, startStoreProcess } from "./server";

const VERSION = "2021-10-04";

export async function startAzurite(): Promise<ObjectStore> {
  const account = `ug${randomBytes(6).toString("hex")}`;
  const key = randomBytes(32).toString("base64");
  const bin = path.join(REPO_ROOT, "node_modules", "azurite", "dist", "src", "blob", "main.js");
  const server = await startStoreProcess({
    name: "azurite",
    command: process.execPath,
    args: (port, dataDir) => [bin, "--blobHost", "127.0.0.1", "--blobPort", String(port), "--location", dataDir, "--silent", "--skipApiVersionCheck", "--disableProductStyleUrl", "--disableTelemetry"],
    env: { AZURITE_ACCOUNTS: `${account}:${key}` },
  });
  const host = `127.0.0.1:${server.port}`;

  /** A Shared Key request to /<account>/<container>[/<blob>] (the emulator's path style). */
  const request = (method: string, container: string, blob: string | undefined, options: { query?: Record<string, string>; body?: Buffer; headers?: Record<string, string> } = {}) => {
    const uri = `/${account}/${container}${blob !== undefined ? `/${blob.split("/").map(encodeURIComponent).join("/")}` : ""}`;
    const query = options.query ?? {};
    const headers: Record<string, string> = { "x-ms-date": new Date().toUTCString(), "x-ms-version": VERSION, ...options.headers };
    const length = options.body?.length ?? 0;
    const h = (name: string) => headers[name] ?? "";
    const canonicalHeaders = Object.keys(headers)
      .filter((n) => n.startsWith("x-ms-"))
      .sort()
      .map((n) => `${n}:${headers[n]!.trim()}\n`)
      .join("");
    const canonicalResource =
      `/${account}${uri}` +
      Object.keys(query)
        .sort()
        .map((k) => `\n${k.toLowerCase()}:${query[k]}`)
        .join("");
    const toSign = [method, "", "", length > 0 ? String(length) : "", "", h("content-type"), "", "", h("if-match"), h("if-none-match"), "", "", canonicalHeaders + canonicalResource].join("\n");
    const signature = createHmac("sha256", Buffer.from(key, "base64")).update(toSign, "utf8").digest("base64");
    const search = new URLSearchParams(query).toString();
    return fetch(`http://${host}${uri}${search ? `?${search}` : ""}`, {
      method,
      headers: { ...headers, authorization: `SharedKey ${account}:${signature}` },
      ...(options.body !== undefined ? { body: options.body } : {}),
    });
  };

  return {
    kind: "azblob",
    port: server.port,
    pid: server.pid,
    env: { AZURE_STORAGE_ACCOUNT: account, AZURE_STORAGE_KEY: key },
    backendUrl: (container) => `azblob://${container}?domain=${host}&protocol=http`,
    async createBucket(container) {
      await expectStatus(await request("PUT", container, undefined, { query: { restype: "container" } }), [201], `Azure create container ${container}`);
    },
    async list(container, prefix = "") {
      const response = await expectStatus(await request("GET", container, undefined, { query: { restype: "container", comp: "list", prefix } }), [200], `Azure list ${container}`);
      return [...(await response.text()).matchAll(/<Name>([^<]*)<\/Name>/g)].map((m) => m[1]!.replace(/&amp;/g, "&").replace(/&lt;/g, "<").replace(/&gt;/g, ">"));
    },
    async get(container, blob) {
      const response = await expectStatus(await request("GET", container, blob), [200, 404], `Azure get ${blob}`);
      return response.status === 404 ? undefined : Buffer.from(await response.arrayBuffer());
    },
    async put(container, blob, body) {
      const headers = { "x-ms-blob-type": "BlockBlob", "content-type": "application/octet-stream" };
      await (await expectStatus(await request("PUT", container, blob, { body, headers }), [201], `Azure put ${blob}`)).arrayBuffer();
    },
    async putIfAbsent(container, blob, body) {
      const response = await expectStatus(
        await request("PUT", container, blob, { body, headers: { "x-ms-blob-type": "BlockBlob", "if-none-match": "*", "content-type": "application/octet-stream" } }),
        [201, 409, 412],
        `Azure conditional put ${blob}`,
      );
      await response.arrayBuffer();
      return response.status === 201 ? "created" : "exists";
    },
    stop: () => server.stop(),
  };
}
