// One error base: every error class the package exports (and the CLI's and the
// fake server's own) is a UserGroupsError with a stable code, keeps its name,
// and keeps the error underneath as `cause`.
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import ts from "typescript";
import { describe, expect, it } from "vitest";
import * as automation from "../../provider/automation";
import { UsageError } from "../../provider/cli/args";
import { InvalidTuningError } from "../../provider/client/tuning";
import { InvalidRateLimitError } from "../../provider/client/rate-budget/budget";
import { RateBudgetDirError } from "../../provider/backends/file/slot-store";
import { InvalidRateBudgetStoreError } from "../../provider/client/rate-budget/stores";
import { InsecureTransportError } from "../../provider/client/transport";
import * as entry from "../../provider";
import { UserGroupsError } from "../../provider/wire/errors";
import { ApiError } from "../../fake-server/errors";
import { ClientGone } from "../../fake-server/http";

const cause = new Error("underneath");
const holder = { file: "/tmp/x.json", pid: 1, hostname: "h" };

/** One instance of each error class, by the name it must keep. */
const instances: Record<string, Error> = {
  UserGroupApiError: new entry.UserGroupApiError(
    { kind: "network", method: "GET", baseUrl: "https://x", attempts: 1, ambiguous: false, code: "ECONNREFUSED" },
    { cause },
  ),
  UserGroupExistsError: new entry.UserGroupExistsError("acme", "Customer"),
  MissingCredentialsError: new entry.MissingCredentialsError("no key"),
  ReservedInputError: new entry.ReservedInputError("acme", ["rotationTrigger is Pulumi's unknown-value marker"]),
  NodeTooOldError: new entry.NodeTooOldError("needs Node.js 22"),
  GroupsValidationError: new automation.GroupsValidationError([{ entry: 0, problem: "name is required" }]),
  StackLockedError: new automation.StackLockedError("dev", { cause }),
  StackLockTimeoutError: new automation.StackLockTimeoutError("dev", 1000, { cause }),
  LiveLockError: new automation.LiveLockError("dev", holder, "its process is alive"),
  RunLeaseLostError: new automation.RunLeaseLostError("dev"),
  BackendTableNameError: new automation.BackendTableNameError("x;y"),
  FleetGroupError: new automation.FleetGroupError("default.acme", "failed", { cause }),
  FleetClosedError: new automation.FleetClosedError(),
  FleetEnsureError: new automation.FleetEnsureError([{ status: "rejected", reason: cause }]),
  FleetStackError: new automation.FleetStackError("dev", "up"),
  InvalidStackNameError: new automation.InvalidStackNameError(".."),
  ReservedStackNameError: new automation.ReservedStackNameError("prod.shard-1"),
  ShardNameError: new automation.ShardNameError("p"),
  UntrustedWorkspaceError: new automation.UntrustedWorkspaceError("/w/node_modules/x", "/pkg"),
  UntrustedProviderCodeError: new automation.UntrustedProviderCodeError("dev", [{ name: "default.acme", reason: "provider code" }]),
  UntrustedStateError: new automation.UntrustedStateError("dev", [{ urn: "urn:pulumi:dev::user-groups::pulumi:providers:pulumi-nodejs::default", type: "pulumi:providers:pulumi-nodejs", field: "inputs.__internal", why: "is a field this package never writes" }]),
  BaseUrlNotAllowedError: new automation.BaseUrlNotAllowedError("The base URL in stack config for the default profile is not the environment's"),
  StackNotFoundError: new automation.StackNotFoundError("dev", "file:///state", { cause }),
  RunFailedError: new automation.RunFailedError("up", "dev", ["default.acme: already exists"], { cause }),
  ResourceNameError: new automation.ResourceNameError("nodot"),
  EngineEdgeError: new automation.EngineEdgeError("backend_unreachable", "The backend did not answer.", { cli: "Check PULUMI_BACKEND_URL.", library: "Check backendUrl." }, { cause }),
  PulumiCliMissingError: new automation.PulumiCliMissingError({ cause }),
  MissingPassphraseError: new automation.MissingPassphraseError(true),
  WrongPassphraseError: new automation.WrongPassphraseError("dev", { cause }),
  BackendUnreachableError: new automation.BackendUnreachableError("backend_unreachable", "postgres://db.example/state", "connection refused", { cause }),
  PulumiCommandError: new automation.PulumiCommandError("pulumi failed", { cause }),
  ImportNotSupportedError: new entry.ImportNotSupportedError("acme"),
  DeletionRefusedError: new automation.DeletionRefusedError("delete_all_refused", "refused", "dev", ["default.acme"]),
  FileRefusedError: new automation.FileRefusedError("/tmp/groups.yaml", "symlink", "refused"),
  OutsideBatchError: new automation.OutsideBatchError("up", "dev", ["urn:pulumi:dev::user-groups::t::default.x"]),
  UsageError: new UsageError("--file is required", { cause }),
  InvalidTuningError: new InvalidTuningError("USER_GROUPS_MAX_ATTEMPTS", "x"),
  InsecureTransportError: new InsecureTransportError("http://example.com"),
  InvalidRateLimitError: new InvalidRateLimitError("USER_GROUPS_RATE_LIMIT", "lots"),
  RateBudgetDirError: new RateBudgetDirError("/tmp/budget", "is a symlink"),
  InvalidRateBudgetStoreError: new InvalidRateBudgetStoreError(),
  ApiError: new ApiError(404, "user_group_not_found", "no such group"),
  ClientGone: new ClientGone(),
};

function exportedErrorClasses(module: Record<string, unknown>): string[] {
  // UserGroupsClient is a lazy getter that loads the client module: not an error, and not loaded here.
  return Object.keys(module)
    .filter((name) => name !== "UserGroupsClient")
    .filter((name) => {
      const value = module[name];
      return typeof value === "function" && (value as { prototype?: unknown }).prototype instanceof Error;
    });
}

describe("UserGroupsError", () => {
  it("is the base of every error class the package exports", () => {
    const exported = new Set([...exportedErrorClasses(entry), ...exportedErrorClasses(automation)]);
    exported.delete("UserGroupsError");
    expect(exported.size).toBeGreaterThan(10);
    for (const name of exported) {
      expect(instances[name], `no instance of ${name} in this test`).toBeDefined();
      expect((entry as Record<string, unknown>)[name] ?? (automation as Record<string, unknown>)[name]).toBe(instances[name]?.constructor);
    }
  });

  it("is the base of every error class in the sources, internal ones too (no other class extends Error)", () => {
    const root = path.resolve(__dirname, "../..");
    const direct: string[] = [];
    for (const folder of ["provider", "fake-server"]) {
      for (const file of readdirSync(path.join(root, folder), { recursive: true, encoding: "utf8" })) {
        if (!file.endsWith(".ts") || file.endsWith(".d.ts")) continue;
        const source = ts.createSourceFile(file, readFileSync(path.join(root, folder, file), "utf8"), ts.ScriptTarget.Latest);
        const visit = (node: ts.Node): void => {
          if (ts.isClassLike(node)) {
            const base = node.heritageClauses?.find((clause) => clause.token === ts.SyntaxKind.ExtendsKeyword)?.types[0]?.expression;
            if (base !== undefined && ts.isIdentifier(base) && base.text === "Error") direct.push(`${folder}/${file}: ${node.name?.text ?? "(anonymous)"}`);
          }
          ts.forEachChild(node, visit);
        };
        visit(source);
      }
    }
    // A class written inside a template (the dashboard page's browser script) is text, not a class of ours: not found.
    expect(direct).toEqual(["provider/wire/errors.ts: UserGroupsError"]);
  });

  it.each(Object.entries(instances))("%s is a UserGroupsError with a stable code and its own name", (name, error) => {
    expect(error).toBeInstanceOf(UserGroupsError);
    expect(error).toBeInstanceOf(Error);
    expect(error.name).toBe(name);
    expect((error as UserGroupsError).code).toMatch(/^[a-zA-Z][a-zA-Z0-9_]*$/);
  });

  it("keeps the error underneath as cause", () => {
    for (const name of ["UserGroupApiError", "StackLockedError", "FleetGroupError", "StackNotFoundError", "UsageError"]) {
      expect(instances[name]?.cause, name).toBe(cause);
    }
  });

  it("gives an API failure the service's or the system's code, else the kind of failure", () => {
    expect(instances.UserGroupApiError).toMatchObject({ code: "ECONNREFUSED", kind: "network" });
    const unreadable = new entry.UserGroupApiError({ kind: "invalid_response", method: "PUT", baseUrl: "https://x", attempts: 1, ambiguous: false });
    expect(unreadable.code).toBe("invalid_response");
    expect(unreadable.message).not.toContain("invalid_response (");
  });
});
