// The conformance suite of the shared backend interface (conformance.ts) against
// the PostgreSQL adapter (provider/backends/postgres/), on a real server
// (testkit/postgres.ts). Its leases expire on the database's clock: the checks'
// stores live 1.5 s past a renewal, and a holder that stops is waited out.
import { randomUUID } from "node:crypto";
import { Client } from "pg";
import { afterAll, beforeAll } from "vitest";
import { postgresTarget } from "../../provider/backends";
import { type PostgresServer, startPostgres } from "../../testkit/postgres";
import { type ConformanceSubject, describeConformance, PROJECT } from "./conformance";

const TTL_MS = 1_500;

let postgres: PostgresServer;
beforeAll(async () => {
  postgres = await startPostgres();
});
afterAll(() => postgres?.stop());

const postgresSubject = (): ConformanceSubject => ({
  kind: "postgres",
  freshUrl: async () => postgres.backendUrl,
  leaseOptions: { timing: { ttlMs: TTL_MS, renewEveryMs: 500 } },
  stopping: (claim) => claim,
  // Past the expiry on the database's clock, with a margin for a loaded machine.
  expire: () => new Promise((resolve) => setTimeout(resolve, TTL_MS + 700)),
  fenced: true,
  plantPulumiLock: async (url, stack, lock) => {
    const target = postgresTarget(url);
    const client = new Client({ connectionString: target.connectionString });
    await client.connect();
    try {
      // As Pulumi's diy backend keeps a blob: the key under the URL's path, the bytes base64 in `data`.
      const key = `${target.keyPrefix}.pulumi/locks/organization/${PROJECT}/${stack}/${randomUUID()}.json`;
      const data = { data: Buffer.from(JSON.stringify({ ...lock, username: "someone" })).toString("base64") };
      await client.query(`INSERT INTO ${target.pulumiTable} (key, data) VALUES ($1, $2)`, [key, JSON.stringify(data)]);
    } finally {
      await client.end();
    }
  },
});

describeConformance("postgres", postgresSubject, 60_000);
