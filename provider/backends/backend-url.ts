// A backend URL may hold credentials (postgres://user:password@host/db, or a
// `password=` query option). They travel to Pulumi in the environment only, and
// not even in its URL: Pulumi writes the backend URL into files of its own
// ($PULUMI_HOME/logs, workspaces/), so a postgres password moves to PGPASSWORD,
// which Pulumi's driver (lib/pq) reads when the URL has none. Any text shown to
// someone (a result, a message, a summary) carries the URL without credentials,
// and errors are scrubbed of every spelling of the password (as written,
// percent-decoded, and re-encoded the way Go's net/url prints a URL).
//
// Where the user information ends is read as Go reads it (the last "@" of the
// authority), and when in doubt more is taken for credentials, never less: a
// password holding a raw "/", "?" or "#" (which Go itself cannot parse) still
// counts as credentials up to the last "@" of the whole URL.

/** Query options whose values are credentials (pgx's `password`, `sslpassword`, and the like). */
const SECRET_QUERY_KEY = /pass|secret|token|key|credential/i;

interface UrlParts {
  readonly scheme: string;
  /** Between "//" and the last "@" (undefined: none). */
  readonly userinfo?: string;
  /** The rest: host, path, query, fragment. */
  readonly rest: string;
}

function partsOf(url: string): UrlParts | undefined {
  const match = /^([a-z][a-z0-9+.-]*:\/\/)([\s\S]*)$/i.exec(url);
  if (!match) return undefined;
  const [, scheme, afterScheme] = match as unknown as [string, string, string];
  const at = afterScheme.lastIndexOf("@");
  if (at < 0) return { scheme, rest: afterScheme };
  return { scheme, userinfo: afterScheme.slice(0, at), rest: afterScheme.slice(at + 1) };
}

function decoded(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

/** Go's url.UserPassword(...).String() escaping of a password: all but unreserved and `$&+,;=`. */
function goUserinfoEscape(text: string): string {
  let out = "";
  for (const byte of Buffer.from(text, "utf8")) {
    const c = String.fromCharCode(byte);
    out += /[A-Za-z0-9\-_.~$&+,;=]/.test(c) ? c : `%${byte.toString(16).toUpperCase().padStart(2, "0")}`;
  }
  return out;
}

function queryWithoutSecrets(rest: string): string {
  return rest.replace(/([?&])([^=&#]*)=([^&#]*)/g, (whole, separator: string, key: string) =>
    SECRET_QUERY_KEY.test(decoded(key)) ? `${separator}${key}=REDACTED` : whole,
  );
}

/** The URL fit for a message or a report: no user, no password, no secret query option. */
export function withoutCredentials(backendUrl: string): string {
  const parts = partsOf(backendUrl);
  if (parts === undefined) return backendUrl;
  return `${parts.scheme}${queryWithoutSecrets(parts.rest)}`;
}

/**
 * Every spelling of the URL's secrets to scrub from a text: the password as
 * written, decoded, and encoded as JavaScript and Go would, and the values of
 * secret query options. (A user name alone is not a secret.)
 */
export function backendUrlSecrets(backendUrl: string | undefined): string[] {
  if (!backendUrl) return [];
  const parts = partsOf(backendUrl);
  if (parts === undefined) return [];
  const secrets = new Set<string>();
  const add = (raw: string) => {
    if (raw === "") return;
    const plain = decoded(raw);
    for (const form of [raw, plain, encodeURIComponent(plain), goUserinfoEscape(plain)]) {
      secrets.add(form);
      secrets.add(form.replace(/%[0-9A-F]{2}/g, (escape) => escape.toLowerCase()));
    }
  };
  const colon = parts.userinfo?.indexOf(":") ?? -1;
  if (colon >= 0) add(parts.userinfo!.slice(colon + 1));
  for (const match of parts.rest.matchAll(/[?&]([^=&#]*)=([^&#]*)/g)) {
    if (SECRET_QUERY_KEY.test(decoded(match[1]!))) add(match[2]!);
  }
  return [...secrets];
}

/** A secret query option's key=value, to drop from the URL Pulumi gets. */
const PASSWORD_QUERY = /([?&])password=([^&#]*)/i;

/**
 * The environment that gives Pulumi this backend: for a postgres:// URL with a
 * password, the URL without it and the password in PGPASSWORD; any other URL as
 * it is. A URL whose user information Go could not parse either (a raw "/", "?"
 * or "#" in it) is passed as it is, for Pulumi to refuse.
 */
export function engineBackendEnv(backendUrl: string): { PULUMI_BACKEND_URL: string; PGPASSWORD?: string } {
  const parts = partsOf(backendUrl);
  if (parts === undefined || !/^postgres(ql)?:\/\/$/i.test(parts.scheme)) return { PULUMI_BACKEND_URL: backendUrl };
  let rest = parts.rest;
  let user = parts.userinfo;
  let password: string | undefined;
  if (user !== undefined) {
    if (/[/?#]/.test(user)) return { PULUMI_BACKEND_URL: backendUrl };
    const colon = user.indexOf(":");
    if (colon >= 0) {
      password = strictDecoded(user.slice(colon + 1));
      if (password === undefined) return { PULUMI_BACKEND_URL: backendUrl };
      user = user.slice(0, colon);
    }
  }
  const option = PASSWORD_QUERY.exec(rest);
  if (option) {
    const fromQuery = strictDecoded(option[2]!);
    if (fromQuery === undefined) return { PULUMI_BACKEND_URL: backendUrl };
    password ??= fromQuery;
    // "?password=x&a=b" -> "?a=b"; "&password=x" -> "".
    rest = rest.replace(PASSWORD_QUERY, (_whole, separator: string) => (separator === "?" ? "?" : "")).replace("?&", "?").replace(/\?$/, "");
  }
  if (password === undefined) return { PULUMI_BACKEND_URL: backendUrl };
  return { PULUMI_BACKEND_URL: `${parts.scheme}${user !== undefined && user !== "" ? `${user}@` : ""}${rest}`, PGPASSWORD: password };
}

function strictDecoded(text: string): string | undefined {
  try {
    return decodeURIComponent(text);
  } catch {
    return undefined;
  }
}

/**
 * A postgres:// URL for Pulumi's driver (lib/pq) whose sessions carry this
 * application_name (any of the URL's own is replaced): what the run fence on
 * Pulumi's table recognises a run's engine by (postgres/lease-store.ts). The
 * name is ours (letters, digits, `:-`), so it needs no escaping.
 */
export function withApplicationName(url: string, name: string): string {
  if (!/^[A-Za-z0-9:_-]{1,63}$/.test(name)) throw new Error("an application_name of letters, digits, ':', '_' and '-' only");
  const hash = url.indexOf("#");
  const base = hash >= 0 ? url.slice(0, hash) : url;
  const fragment = hash >= 0 ? url.slice(hash) : "";
  const cleaned = base.replace(/([?&])application_name=[^&]*(&|$)/gi, (_whole, separator: string, after: string) => (after === "&" ? separator : "")).replace(/[?&]$/, "");
  return `${cleaned}${cleaned.includes("?") ? "&" : "?"}application_name=${name}${fragment}`;
}
