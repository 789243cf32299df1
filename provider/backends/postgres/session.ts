// One lazily opened PostgreSQL session for a store of shared state (the run
// lease, the shard directory, the rate budget): opened on first use with the
// store's name and timeouts, set up once (settings, tables), forgotten when the
// server or the network ends it, and a failed connect turned into the store's
// own error, never the driver's message with the password in it.
//
// A session cut under a query (the server restarted or ended it, the network
// reset it, a black hole that outlasts the query timeout) fails that query with
// the driver's bare `Error: Connection terminated unexpectedly` (no code) or a
// SQLSTATE of class 08 / 57P01-57P03: such an error is turned into the store's
// own `unreachable` error (a coded, retryable one, naming the store, never the
// password), and the session is discarded at once, so that the next use opens a
// new one instead of finding a broken one (issue 32, found by the fault histories).
import type { Client } from "pg";
import { withoutSecret } from "./target";
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
  /** Default DEFAULT_CONNECT_TIMEOUT_MS. */
  readonly connectTimeoutMs?: number;
  /** Default DEFAULT_QUERY_TIMEOUT_MS: a statement that waits longer fails as a cut (the session is discarded). */
  readonly queryTimeoutMs?: number;
  /** Runs once on each new session before it is handed out; its error ends the session and is thrown as is. */
  readonly setup?: (client: SqlClient) => Promise<void>;
  /**
   * The tables of ours this store uses, checked after `setup` on each new
   * session (tables.ts verifyOwnTables): one another role made or changed is
   * refused with BackendTableUntrustedError, thrown as is.
   */
  readonly ownTables?: readonly OwnTableSpec[];
  /**
   * The store's error for a failed connect, or for a session cut under a query
   * (connectionLost): `detail` is the driver's message without the password
   * ("connection refused" for ECONNREFUSED; "its connection was cut (...)" for a
   * cut session). It must be a coded error a caller may retry.
   */
  readonly unreachable: (error: unknown, detail: string, during: "connect" | "query") => Error;
  /** Told when the session in use ends behind the store's back (an error, the server closing it). */
  readonly onDropped?: () => void;
}

/** Connect timeout of a store that names none: a black-holed connect must not hang a caller for good. */
export const DEFAULT_CONNECT_TIMEOUT_MS = 10_000;
/** Query timeout of a store that names none: a black-holed session (bytes dropped, socket open) fails as a cut after this. */
export const DEFAULT_QUERY_TIMEOUT_MS = 30_000;

/** Network errors of the socket (Node's codes): the connection is gone, or never came. */
const SOCKET_CODES = new Set(["ECONNRESET", "ECONNREFUSED", "ECONNABORTED", "ETIMEDOUT", "EPIPE", "EHOSTUNREACH", "ENETUNREACH", "ENETDOWN", "EHOSTDOWN", "ENOTFOUND", "EAI_AGAIN"]);

/** The pg driver's own messages for a session that is gone (errors without a SQLSTATE). */
const DRIVER_GONE = /Connection terminated|Query read timeout|not queryable|Connection (?:ended|closed)|timeout exceeded when trying to connect|read ECONNRESET|write EPIPE|socket hang up/i;

/**
 * Whether a query's error means the session itself is gone or unusable (so the
 * query's outcome is unknown and the session must be discarded): the driver's
 * errors without a SQLSTATE for a cut or timed-out session, the socket's codes,
 * SQLSTATE class 08 (connection exception) and 57P01-57P03 (the server
 * terminating the session, shutting down, starting up). A statement's own error
 * (a constraint, a permission, a syntax error) is not.
 */
export function isConnectionLost(error: unknown): boolean {
  if (error === null || typeof error !== "object") return false;
  const code = (error as { code?: unknown }).code;
  if (typeof code === "string") {
    if (SOCKET_CODES.has(code)) return true;
    if (/^[0-9A-Z]{5}$/.test(code)) return code.startsWith("08") || code === "57P01" || code === "57P02" || code === "57P03";
  }
  const message = (error as { message?: unknown }).message;
  return code === undefined && typeof message === "string" && DRIVER_GONE.test(message);
}

/** What a cut session's error says: the driver's words (no connection string), or a SQLSTATE. */
function lostDetail(error: unknown, connectionString: string): string {
  const code = (error as { code?: unknown }).code;
  const message = String((error as { message?: unknown }).message ?? "");
  const said = withoutSecret(message.split("\n")[0]!.slice(0, 200), connectionString);
  return `its connection was cut (${typeof code === "string" ? `${code}: ` : ""}${said || "no reason given"}); ask again`;
}

/** A store error's code or class, never its message (a driver's message may quote a connection string). */
export function errorCode(error: unknown): string {
  const code = (error as { code?: unknown } | undefined)?.code;
  if (typeof code === "string" && /^[\w.-]{1,40}$/.test(code)) return code;
  return error instanceof Error ? error.name : "error";
}

export class PostgresSession {
  private client: Client | undefined;
  private connecting: Promise<Client> | undefined;
  /** The clients handed out, wrapped so that a cut session's error is the store's (one wrapper per client). */
  private readonly wrapped = new WeakMap<Client, SqlClient>();

  constructor(private readonly options: PostgresSessionOptions) {}

  /** The open session, if any (no connect). */
  get current(): SqlClient | undefined {
    return this.client ? this.wrap(this.client) : undefined;
  }

  /** The session, opened and set up on first use; one connect at a time. */
  connection(): Promise<SqlClient> {
    if (this.client) return Promise.resolve(this.wrap(this.client));
    this.connecting ??= this.open().finally(() => {
      this.connecting = undefined;
    });
    return this.connecting.then((client) => this.wrap(client));
  }

  /** The client as the stores see it: a query whose session is gone fails with the store's error, and the session is discarded. */
  private wrap(client: Client): SqlClient {
    let sql = this.wrapped.get(client);
    if (sql === undefined) {
      sql = {
        query: async <R extends object>(statement: string, values?: unknown[]) => {
          try {
            return await client.query<R>(statement, values);
          } catch (error) {
            throw this.lost(client, error);
          }
        },
      };
      this.wrapped.set(client, sql);
    }
    return sql;
  }

  /** A query's error: the session discarded and the store's error if the session is gone, else the error as it is. */
  private lost(client: Client, error: unknown): unknown {
    if (!isConnectionLost(error)) return error;
    this.discard(client);
    return this.options.unreachable(error, lostDetail(error, this.options.connectionString), "query");
  }

  /**
   * Forgets a session that is gone or unusable (told to onDropped), and ends it
   * without waiting: a black-holed socket would never answer the goodbye.
   */
  private discard(client: Client): void {
    if (this.client === client) {
      this.client = undefined;
      this.options.onDropped?.();
    }
    const socket = (client as unknown as { connection?: { stream?: { destroy?: () => void } } }).connection?.stream;
    void client.end().catch(() => undefined);
    socket?.destroy?.();
  }

  private async open(): Promise<Client> {
    const { Client } = await import("pg");
    const options = this.options;
    const client = new Client({
      connectionString: options.connectionString,
      application_name: options.applicationName,
      ...(options.keepAlive ? { keepAlive: true } : {}),
      connectionTimeoutMillis: options.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS,
      query_timeout: options.queryTimeoutMs ?? DEFAULT_QUERY_TIMEOUT_MS,
    });
    const dropped = () => this.discard(client);
    client.on("error", dropped);
    client.on("end", dropped);
    try {
      await client.connect();
    } catch (error) {
      await client.end().catch(() => undefined);
      const code = (error as { code?: string }).code;
      const detail = code === "ECONNREFUSED" ? "connection refused" : withoutSecret(String((error as Error)?.message ?? error), options.connectionString);
      throw options.unreachable(error, detail, "connect");
    }
    try {
      await options.setup?.(client);
      if (options.ownTables !== undefined) await verifyOwnTables(client, options.ownTables);
    } catch (error) {
      this.discard(client);
      // Cut while being set up: the store's error, as for a failed connect.
      throw isConnectionLost(error) ? options.unreachable(error, lostDetail(error, options.connectionString), "query") : error;
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
