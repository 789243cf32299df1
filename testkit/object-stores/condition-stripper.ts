// A store that ignores its conditions, for the tests: a proxy in front of a real
// one that drops the conditions of every request (If-None-Match and If-Match
// headers, GCS's ifGenerationMatch), so that the adapters' detection of such a
// store (backend_conditions_ignored) is tried against the attack itself.
import http from "node:http";
import type { AddressInfo } from "node:net";

export async function conditionStripper(target: number): Promise<{ port: number; close: () => Promise<void> }> {
  const server = http.createServer((req, res) => {
    const headers = { ...req.headers };
    delete headers["if-none-match"];
    delete headers["if-match"];
    const url = new URL(req.url ?? "/", "http://127.0.0.1");
    url.searchParams.delete("ifGenerationMatch");
    const out = http.request({ host: "127.0.0.1", port: target, method: req.method, path: `${url.pathname}${url.search}`, headers }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    out.on("error", () => res.destroy());
    req.pipe(out);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
