// A backend URL's password never reaches a result, a message or a summary, in
// any spelling: as written, percent-decoded, or re-encoded as Go's net/url
// prints it. (With a real PostgreSQL backend: credentials.test.ts.)
import { describe, expect, it } from "vitest";
import { backendUrlSecrets, engineBackendEnv, withApplicationName, withoutCredentials } from "../../../provider/backends/backend-url";
import { RunFailedError } from "../../../provider/automation/engine/change-tracker";
import { scrubSecrets } from "../../../provider/client/redact";
import { secretValuesOf } from "../../../provider/automation/engine/stack-config";

/** Passwords with every character a URL treats specially, and non-ASCII. */
const PASSWORDS = ["p@ss:w/rd", "100%#sure?", "ünïcödé✓ pass", "a$&+,;=b", "'(!*)'", "%41%"];

/** How a user may write it in a URL: Go parses a raw "@" and ":" in a password; "/", "?", "#", "%", space and non-ASCII must be encoded. */
function written(password: string): string {
  return password.replace(/[^A-Za-z0-9\-_.~!$&'()*+,;=:@]/gu, (c) => encodeURIComponent(c));
}

/** Go's url.UserPassword(...).String() escaping (what Pulumi's own messages would print). */
function goEscaped(password: string): string {
  return [...Buffer.from(password, "utf8")]
    .map((b) => (/[A-Za-z0-9\-_.~$&+,;=]/.test(String.fromCharCode(b)) ? String.fromCharCode(b) : `%${b.toString(16).toUpperCase().padStart(2, "0")}`))
    .join("");
}

describe("withoutCredentials", () => {
  it.each(PASSWORDS)("leaves out user and password %j, keeps host, path and options", (password) => {
    const url = `postgres://app_user:${written(password)}@db.internal:5432/state?sslmode=require`;
    expect(withoutCredentials(url)).toBe("postgres://db.internal:5432/state?sslmode=require");
  });

  it("takes more for credentials when in doubt (a raw / or # in the password), never less", () => {
    expect(withoutCredentials("postgres://u:pa/ss#w@db/x")).toBe("postgres://db/x");
    expect(withoutCredentials("postgres://u:pa?ss@db/x")).toBe("postgres://db/x");
  });

  it("hides a password given as a query option, and leaves URLs without credentials as they are", () => {
    expect(withoutCredentials("postgres://db/x?sslmode=disable&password=hunter%402&sslpassword=x")).toBe("postgres://db/x?sslmode=disable&password=REDACTED&sslpassword=REDACTED");
    for (const url of ["file:///home/me/.user-groups/state", "s3://bucket/prefix?region=eu-west-1", "https://api.pulumi.com"]) {
      expect(withoutCredentials(url)).toBe(url);
    }
    expect(withoutCredentials("postgres://postgres@127.0.0.1:5432/postgres")).toBe("postgres://127.0.0.1:5432/postgres");
  });
});

describe("scrubbing a backend password from errors", () => {
  it.each(PASSWORDS)("removes %j in every spelling, through the cause chain and captured output", (password) => {
    const url = `postgres://app_user:${written(password)}@db.internal:5432/state`;
    const secrets = secretValuesOf({ backendUrl: url }, {});
    const spellings = [password, written(password), encodeURIComponent(password), goEscaped(password), goEscaped(password).toLowerCase()];
    expect(backendUrlSecrets(url).length).toBeGreaterThan(0);
    const pulumiError = Object.assign(new Error(`could not connect to ${url}: ${spellings.join(" | ")}`), {
      commandResult: { stdout: "", stderr: `error: failed to open postgres://app_user:${goEscaped(password)}@db.internal:5432/state` },
    });
    const wrapped = scrubSecrets(new RunFailedError("up", "prod", [`x: ${spellings[2]}`], { cause: pulumiError }), secrets) as RunFailedError;
    const everything = [wrapped.message, wrapped.stack, pulumiError.message, pulumiError.stack, pulumiError.commandResult.stderr].join("\n");
    for (const spelling of spellings) expect(everything, spelling).not.toContain(spelling);
    expect(everything).toContain("postgres://app_user:[REDACTED]@db.internal:5432/state");
    expect(wrapped).toBeInstanceOf(RunFailedError);
  });

  it("takes the password from the option, envVars and the process environment", () => {
    const secrets = (options: Parameters<typeof secretValuesOf>[0], env: NodeJS.ProcessEnv) => secretValuesOf(options, env);
    expect(secrets({ backendUrl: "postgres://u:one@h/d" }, {})).toContain("one");
    expect(secrets({ envVars: { PULUMI_BACKEND_URL: "postgres://u:two@h/d" } }, {})).toContain("two");
    expect(secrets({}, { PULUMI_BACKEND_URL: "postgres://u:three@h/d" })).toContain("three");
    // A user name alone is no secret (the scheme "postgres" must stay readable).
    expect(secrets({ backendUrl: "postgres://postgres@h/d" }, {})).toEqual([]);
  });
});

describe("engineBackendEnv: what Pulumi gets", () => {
  it.each(PASSWORDS)("moves the password %j of a postgres URL to PGPASSWORD, decoded; the URL keeps the user", (password) => {
    expect(engineBackendEnv(`postgres://app_user:${written(password)}@db:5432/state?sslmode=require`)).toEqual({
      PULUMI_BACKEND_URL: "postgres://app_user@db:5432/state?sslmode=require",
      PGPASSWORD: password,
    });
  });

  it("moves a password query option too, and leaves every other URL as it is", () => {
    expect(engineBackendEnv("postgres://db/x?password=s%40cret&sslmode=disable")).toEqual({ PULUMI_BACKEND_URL: "postgres://db/x?sslmode=disable", PGPASSWORD: "s@cret" });
    expect(engineBackendEnv("postgresql://u@db/x?sslmode=disable&password=p")).toEqual({ PULUMI_BACKEND_URL: "postgresql://u@db/x?sslmode=disable", PGPASSWORD: "p" });
    for (const url of ["postgres://u@db/x", "file:///tmp/state", "s3://b/p?region=x", "postgres://u:pa/ss@db/x", "postgres://u:%zz@db/x"]) {
      expect(engineBackendEnv(url), url).toEqual({ PULUMI_BACKEND_URL: url });
    }
  });
});

describe("withApplicationName: the engine's sessions named by its run's epoch (the run fence)", () => {
  it("adds or replaces application_name and keeps every other option and the fragment", () => {
    expect(withApplicationName("postgres://u@db:5432/state", "ug-run:0123456789abcdef:7")).toBe("postgres://u@db:5432/state?application_name=ug-run:0123456789abcdef:7");
    expect(withApplicationName("postgres://u@db/state?sslmode=disable&table=s.t", "ug-run:0123456789abcdef:7")).toBe(
      "postgres://u@db/state?sslmode=disable&table=s.t&application_name=ug-run:0123456789abcdef:7",
    );
    expect(withApplicationName("postgres://u@db/state?application_name=mine&sslmode=disable#x", "ug-run:0123456789abcdef:8")).toBe(
      "postgres://u@db/state?sslmode=disable&application_name=ug-run:0123456789abcdef:8#x",
    );
    expect(withApplicationName("postgres://u@db/state?sslmode=disable&application_name=mine", "ug-run:0123456789abcdef:8")).toBe(
      "postgres://u@db/state?sslmode=disable&application_name=ug-run:0123456789abcdef:8",
    );
    // Only our own names: nothing from outside becomes part of the URL.
    expect(() => withApplicationName("postgres://u@db/state", "x&password=y")).toThrow();
  });
});
