// Issue #41 item 4: what a failed create, read, update or delete says once it
// leaves the provider for the engine: one line naming the operation (a refresh
// reads with a PUT, and is called a read), the cause and the fix for who runs
// the engine; no stack trace, and the host's echo of it dropped. The texts stay
// readable by the CLI's grouping of service failures (change-tracker.ts).
import { afterEach, describe, expect, it, vi } from "vitest";
import { ChangeTracker, serviceFailure } from "../../provider/automation/engine/change-tracker";
import { type ApiErrorDetails, UserGroupApiError } from "../../provider/client/errors";
import { MissingCredentialsError } from "../../provider/logic/credentials";
import { engineFacingError, quietHostEcho } from "../../provider/logic/engine-facing";

const URL = "http://127.0.0.1:4010";

function apiError(details: Partial<ApiErrorDetails>): UserGroupApiError {
  return new UserGroupApiError({ kind: "http", method: "PUT", baseUrl: URL, userGroupId: "acme", attempts: 1, ambiguous: false, ...details });
}

const rejected = () => apiError({ status: 401, code: "unauthorized", serverMessage: "Unknown API key." });
const refused = () => apiError({ kind: "network", code: "ECONNREFUSED", serverMessage: "connect ECONNREFUSED 127.0.0.1:4010", attempts: 8 });
const timedOut = () => apiError({ kind: "network", method: "GET", code: "UND_ERR_HEADERS_TIMEOUT", attempts: 3, ambiguous: true });
const badName = () => apiError({ method: "GET", status: 400, code: "invalid_name", serverMessage: "name must not be blank" });

const program = { env: {} };

function message(error: unknown): string {
  return (error as Error).message;
}

describe("a service failure as the engine prints it", () => {
  it("a refresh's read is called a read, not the PUT it is made with, with the key's fix for a `pulumi` user", () => {
    const text = message(engineFacingError("read", rejected(), { ...program, stateOnly: "refresh" }));
    expect(text).toBe(
      `Reading the user group (PUT ${URL}/api/user) for user_group_id "acme" failed after 1 attempt: HTTP 401 unauthorized: Unknown API key. ` +
        "The service rejected the API key (wrong, revoked or rotated): set USER_GROUPS_API_KEY or the stack's config user-groups:apiKey to a current key of that environment. " +
        "A plain `pulumi refresh` uses the config the last `pulumi up` recorded: after changing the stack's config, run `pulumi refresh --run-program`.",
    );
    expect(text).not.toContain("Update User");
    expect(text).not.toContain("\n");
  });

  it("names each operation as what it was", () => {
    expect(message(engineFacingError("create", rejected(), program))).toMatch(/^Creating the user group \(PUT /);
    expect(message(engineFacingError("update", rejected(), program))).toMatch(/^Updating the user group \(PUT /);
    expect(message(engineFacingError("delete", rejected(), program))).toMatch(/^Deleting the user group \(PUT /);
  });

  it("an unreachable service: the address, the system's code, and what to check", () => {
    expect(message(engineFacingError("create", refused(), program))).toBe(
      `Creating the user group (PUT ${URL}/api/user) for user_group_id "acme" failed after 8 attempts: no answer from ${URL} (ECONNREFUSED): connect ECONNREFUSED 127.0.0.1:4010. ` +
        "Nothing answered there: check the base URL (USER_GROUPS_BASE_URL or the stack's config user-groups:baseUrl) and that the service is up and reachable from here. Then run again.",
    );
  });

  it("a timeout: the wait's variable, and a refresh first since the request may have been carried out", () => {
    const text = message(engineFacingError("create", timedOut(), program));
    expect(text).toContain(`no answer from ${URL} (UND_ERR_HEADERS_TIMEOUT); the request may have been carried out. The service did not answer in time`);
    expect(text).toContain("USER_GROUPS_HTTP_TIMEOUT_MS sets how long each attempt waits. Then run again (a refresh first, if the request may have been carried out).");
  });

  it("a refused input names the input to change", () => {
    expect(message(engineFacingError("create", badName(), program))).toBe(
      `Creating the user group (GET ${URL}/api/user) for user_group_id "acme" failed after 1 attempt: HTTP 400 invalid_name: name must not be blank. ` +
        "The service refused the group's name: change name of this UserGroup to meet the service's rules; nothing was changed.",
    );
  });

  it("is worded for who runs the engine: the user-groups command and a library name their own places", () => {
    expect(message(engineFacingError("read", rejected(), { env: { USER_GROUPS_HINTS: "cli" } }))).toContain("set USER_GROUPS_API_KEY in the environment of user-groups to a current key");
    expect(message(engineFacingError("create", refused(), { env: { USER_GROUPS_HINTS: "automation" }, profile: "eu-west" }))).toContain(
      "check the base URL (USER_GROUPS_BASE_URL_EU_WEST (the environment or the `envVars` option))",
    );
    expect(message(engineFacingError("create", rejected(), { env: {}, profile: "eu" }))).toContain("USER_GROUPS_API_KEY_EU or the stack's config user-groups:profiles.eu.apiKey");
  });

  it("a read-only key keeps the client's words", () => {
    const text = message(engineFacingError("update", apiError({ status: 403, code: "forbidden", serverMessage: "read-only key" }), program));
    expect(text).toBe(`Updating the user group (PUT ${URL}/api/user) for user_group_id "acme" failed after 1 attempt: HTTP 403 forbidden: read-only key (this API key is read-only; use a read-write key to change groups)`);
  });

  it("stays what the user-groups command groups per run (one error, with its code)", () => {
    const tracker = (make: () => UserGroupApiError) => {
      const t = new ChangeTracker();
      t.diagnostics.set("default.acme", message(engineFacingError("read", make(), { env: { USER_GROUPS_HINTS: "cli" } })));
      t.diagnostics.set("default.globex", message(engineFacingError("read", make(), { env: { USER_GROUPS_HINTS: "cli" } })));
      return t;
    };
    expect(serviceFailure(tracker(rejected), "prod")?.code).toBe("api_key_rejected");
    expect(serviceFailure(tracker(refused), "prod")?.code).toBe("service_unreachable");
    expect(serviceFailure(tracker(timedOut), "prod")?.code).toBe("service_timeout");
    expect(serviceFailure(tracker(refused), "prod")?.message).toContain(`nothing answered at ${URL}`);
  });
});

describe("no stack trace", () => {
  afterEach(() => vi.restoreAllMocks());

  it("an error of ours loses its stack; the host's echo of it is dropped, once, and other lines pass", () => {
    const written: unknown[][] = [];
    const original = console.error;
    console.error = (...args: unknown[]) => void written.push(args);
    try {
      quietHostEcho();
      const error = engineFacingError("read", new MissingCredentialsError("No base URL for the default profile: set USER_GROUPS_BASE_URL."), program) as Error;
      expect(error.stack).toBe("MissingCredentialsError: No base URL for the default profile: set USER_GROUPS_BASE_URL.");
      // What Pulumi's provider hosts write for a failed read or delete.
      console.error(`${error}: ${error.stack}`);
      expect(written).toEqual([]);
      console.error(`${error}: ${error.stack}`);
      console.error("something else");
      expect(written).toEqual([[`${error}: ${error.stack}`], ["something else"]]);
    } finally {
      console.error = original;
    }
  });

  it("anything not ours (a bug) keeps its stack", () => {
    const bug = new TypeError("x is undefined");
    const stack = bug.stack;
    expect(engineFacingError("create", bug, program)).toBe(bug);
    expect(bug.stack).toBe(stack);
  });
});
