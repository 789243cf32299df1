// Google Cloud Storage for the tests: fake-gcs-server (github.com/fsouza/fake-gcs-server,
// built from the Go module proxy by scripts/ensure-fake-gcs-server), over plain
// HTTP, its objects on disk in the data directory. Pulumi finds it through
// STORAGE_EMULATOR_HOST, with a dummy GOOGLE_OAUTH_ACCESS_TOKEN (the emulator
// checks none). A conditional create is `ifGenerationMatch=0`. Its public host is
// 127.0.0.1 without a port, so that its XML API (Pulumi's reads) answers on any
// port of it: a Toxiproxy in front of it (the fault histories) sends the proxy's.
import { randomBytes } from "node:crypto";
import path from "node:path";
import { ensured, expectStatus, type ObjectStore, REPO_ROOT, startStoreProcess } from "./server";

export async function startGcs(): Promise<ObjectStore> {
  const command = ensured(path.join(REPO_ROOT, "scripts", "ensure-fake-gcs-server"));
  const server = await startStoreProcess({
    name: "fake-gcs-server",
    command,
    args: (port, dataDir) => ["-scheme", "http", "-host", "127.0.0.1", "-port", String(port), "-public-host", "127.0.0.1", "-external-url", `http://127.0.0.1:${port}`, "-backend", "filesystem", "-filesystem-root", dataDir, "-log-level", "warn"],
    readyPath: "/storage/v1/b",
  });
  const base = `http://127.0.0.1:${server.port}`;
  const token = `dummy-${randomBytes(12).toString("hex")}`;
  const auth = { authorization: `Bearer ${token}` };
  const object = (bucket: string, key: string) => `${base}/storage/v1/b/${encodeURIComponent(bucket)}/o/${encodeURIComponent(key)}`;

  return {
    kind: "gs",
    port: server.port,
    pid: server.pid,
    env: { STORAGE_EMULATOR_HOST: `127.0.0.1:${server.port}`, GOOGLE_OAUTH_ACCESS_TOKEN: token },
    backendUrl: (bucket) => `gs://${bucket}`,
    async createBucket(bucket) {
      await expectStatus(await fetch(`${base}/storage/v1/b?project=test`, { method: "POST", headers: { ...auth, "content-type": "application/json" }, body: JSON.stringify({ name: bucket }) }), [200], `GCS create bucket ${bucket}`);
    },
    async list(bucket, prefix = "") {
      const keys: string[] = [];
      let pageToken: string | undefined;
      do {
        const search = new URLSearchParams({ prefix, ...(pageToken ? { pageToken } : {}) });
        const response = await expectStatus(await fetch(`${base}/storage/v1/b/${encodeURIComponent(bucket)}/o?${search}`, { headers: auth }), [200], `GCS list ${bucket}`);
        const page = (await response.json()) as { items?: Array<{ name: string }>; nextPageToken?: string };
        keys.push(...(page.items ?? []).map((i) => i.name));
        pageToken = page.nextPageToken;
      } while (pageToken);
      return keys;
    },
    async get(bucket, key) {
      const response = await expectStatus(await fetch(`${object(bucket, key)}?alt=media`, { headers: auth }), [200, 404], `GCS get ${key}`);
      return response.status === 404 ? undefined : Buffer.from(await response.arrayBuffer());
    },
    async put(bucket, key, body) {
      const search = new URLSearchParams({ uploadType: "media", name: key });
      const response = await fetch(`${base}/upload/storage/v1/b/${encodeURIComponent(bucket)}/o?${search}`, { method: "POST", headers: { ...auth, "content-type": "application/octet-stream" }, body });
      await (await expectStatus(response, [200], `GCS put ${key}`)).arrayBuffer();
    },
    async putIfAbsent(bucket, key, body) {
      const search = new URLSearchParams({ uploadType: "media", name: key, ifGenerationMatch: "0" });
      const response = await expectStatus(
        await fetch(`${base}/upload/storage/v1/b/${encodeURIComponent(bucket)}/o?${search}`, { method: "POST", headers: { ...auth, "content-type": "application/octet-stream" }, body }),
        [200, 412],
        `GCS conditional put ${key}`,
      );
      await response.arrayBuffer();
      return response.status === 200 ? "created" : "exists";
    },
    stop: () => server.stop(),
  };
}
