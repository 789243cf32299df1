// Issue #41 item 2: one story for where state lives. The `user-groups` command
// and a UserGroupFleet keep their stacks in `.user-groups/state` when
// PULUMI_BACKEND_URL is unset; a user who ran `pulumi login` is told, once,
// that `pulumi stack ls` will not list them and how to keep them there.
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { backendNotice, loggedInBackend, pulumiHome } from "../../provider/automation/backend";

const dir = mkdtempSync(path.join(os.tmpdir(), "login-backend-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A Pulumi home whose credentials.json says `pulumi login` chose `current`. */
function homeWith(name: string, current: unknown): string {
  const home = path.join(dir, name);
  mkdirSync(home, { recursive: true });
  writeFileSync(path.join(home, "credentials.json"), JSON.stringify({ current, accessTokens: {}, accounts: {} }));
  return home;
}

const used = "file:///srv/groups/.user-groups/state";

describe("the backend `pulumi login` chose", () => {
  it("is read from PULUMI_HOME's credentials.json; none when never logged in or not Pulumi's", () => {
    expect(loggedInBackend({ PULUMI_HOME: homeWith("a", "file:///home/me/.pulumi-state") })).toBe("file:///home/me/.pulumi-state");
    expect(loggedInBackend({ PULUMI_HOME: path.join(dir, "nowhere") })).toBeUndefined();
    expect(loggedInBackend({ PULUMI_HOME: homeWith("b", 42) })).toBeUndefined();
    const planted = path.join(dir, "planted");
    mkdirSync(planted);
    symlinkSync("/etc/passwd", path.join(planted, "credentials.json"));
    expect(loggedInBackend({ PULUMI_HOME: planted })).toBeUndefined();
  });

  it("Pulumi's home without PULUMI_HOME is .pulumi in the user's home directory (the passwd entry's, as Pulumi finds it)", () => {
    expect(pulumiHome({})).toBe(path.join(os.userInfo().homedir, ".pulumi"));
    expect(pulumiHome({ PULUMI_HOME: "/opt/pulumi" })).toBe("/opt/pulumi");
  });
});

describe("the notice", () => {
  it("names both backends and how to use the login's, for the command and for a fleet", () => {
    const env = { PULUMI_HOME: homeWith("c", "file:///home/me/.pulumi-state") };
    expect(backendNotice(used, env, "cli")).toBe(
      "the stacks of this run are kept in file:///srv/groups/.user-groups/state, not in the backend `pulumi login` chose (file:///home/me/.pulumi-state), " +
        "so `pulumi stack ls` does not list them; to keep them there, set PULUMI_BACKEND_URL=file:///home/me/.pulumi-state (or pass --backend-url).",
    );
    expect(backendNotice(used, env, "fleet")).toContain('to keep them there, pass `backendUrl: "file:///home/me/.pulumi-state"` (or set PULUMI_BACKEND_URL).');
  });

  it("is not given when the backends agree (a trailing slash, `~`), or Pulumi has no choice of its own", () => {
    expect(backendNotice("file:///home/me/.pulumi-state/", { PULUMI_HOME: homeWith("d", "file:///home/me/.pulumi-state") }, "cli")).toBeUndefined();
    expect(backendNotice(`file://${os.homedir()}/.pulumi-state`, { PULUMI_HOME: homeWith("e", "file://~/.pulumi-state") }, "cli")).toBeUndefined();
    expect(backendNotice(used, { PULUMI_HOME: path.join(dir, "never-logged-in") }, "cli")).toBeUndefined();
    // PULUMI_BACKEND_URL is what `pulumi` itself uses first: the run that uses it agrees, whatever login says.
    expect(backendNotice("s3://bucket", { PULUMI_HOME: homeWith("f", "file:///x"), PULUMI_BACKEND_URL: "s3://bucket" }, "cli")).toBeUndefined();
  });

  it("a --backend-url other than PULUMI_BACKEND_URL is named too; a password never shows", () => {
    const text = backendNotice("postgres://app:hunter2@db/state", { PULUMI_HOME: path.join(dir, "none"), PULUMI_BACKEND_URL: "postgres://ops:s3cret@db/other" }, "cli")!;
    expect(text).toContain("not in the backend PULUMI_BACKEND_URL names");
    expect(text).not.toContain("hunter2");
    expect(text).not.toContain("s3cret");
  });
});
