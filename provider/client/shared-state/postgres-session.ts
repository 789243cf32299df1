// One lazily opened PostgreSQL session for a store of shared state (the run
// lease, the shard directory, the rate budget): opened on first use with the
// store's name and timeouts, set up once (settings, tables), forgotten when the
// server or the network ends it, and a failed connect turned into the store's
// own error, never the driver's message with the password in it.
import type { Client } from "pg";
import { withoutSecret } from "./postgres-target";
import { type OwnTableSpec, verifyOwnTables } from "./tables";

/**
 * The part of a `pg` client the stores use. Written out because pg's own types are
 * a devDependency: the package's declarations must compile without them.
 */
export interface SqlClient {
  query<R extends object = Record<string, unknown>>(statement: string, values?: unknown[]): Promise<{ readonly rows: R[]; readonly rowCount: number | null }>;
}

export interface PostgresSessionOptions {
  readonly connectionString: string;
  /** What `pg_stat_activity` shows for the session: which store of ours holds it. */
  readonly applicationName: string;
  /** TCP keepalive on the client's socket (a store that holds a session-level lock wants it). */
  readonly keepAlive?: boolean;
  readonly connectTimeoutMs?: number;
  readonly queryTimeoutMs?: number;
  /** Runs once on each new session before it is handed out; its error ends the session and is thrown as is. */
  readonly setup?: (client: SqlClient) => Promise<void>;
  /**
   * The tables of ours this store uses, checked after `setup` on each new
   * session (tables.ts verifyOwnTables): one another role made or changed is
   * refused with BackendTableUntrustedError, thrown as is.
   */
  readonly ownTables?: readonly OwnTableSpec[];
  /** The store's error for a failed connect: `detail` is the driver's message without the password ("connection refused" for ECONNREFUSED). */
  readonly unreachable: (error: unknown, detail: string) => Error;
  /** Told when the session in use ends behind the store's back (an error, the server closing it). */
  readonly onDropped?: () => void;
}

export class PostgresSession {
  private client: Client | undefined;
  private connecting: Promise<Client> | undefined;

  constructor(private readonly options: PostgresSessionOptions) {}

  /** The open session, if any (no connect). */
  get current(): SqlClient | undefined {
    return this.client;
  }

  /** The session, opened and set up on first use; one connect at a time. */
  connection(): Promise<SqlClient> {
    if (this.client) return Promise.resolve(this.client);
    this.connecting ??= this.open().finally(() => {
      this.connecting = undefined;
    });
    return this.connecting;
  }

  private async open(): Promise<Client> {
    const { Client } = await import("pg");
    const options = this.options;
    const client = new Client({
      connectionString: options.connectionString,
      application_name: options.applicationName,
      ...(options.keepAlive ? { keepAlive: true } : {}),
      ...(options.connectTimeoutMs !== undefined ? { connectionTimeoutMillis: options.connectTimeoutMs } : {}),
      ...(options.queryTimeoutMs !== undefined ? { query_timeout: options.queryTimeoutMs } : {}),
    });
    const dropped = () => {
      if (this.client !== client) return;
      this.client = undefined;
      options.onDropped?.();
    };
    client.on("error", dropped);
    client.on("end", dropped);
    try {
      await client.connect();
    } catch (error) {
      await client.end().catch(() => undefined);
      const code = (error as { code?: string }).code;
      const detail = code === "ECONNREFUSED" ? "connection refused" : withoutSecret(String((error as Error)?.message ?? error), options.connectionString);
      throw options.unreachable(error, detail);
    }
    try {
      await options.setup?.(client);
      if (options.ownTables !== undefined) await verifyOwnTables(client, options.ownTables);
    } catch (error) {
      await client.end().catch(() => undefined);
      throw error;
    }
    this.client = client;
    return client;
  }

  /** Ends the session (a session-level lock on it with it); the next use opens a new one. */
  async close(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    await client?.end().catch(() => undefined);
  }
}
