// What drift reports, from the state, what the service holds now, and the groups file.
import { describe, expect, it } from "vitest";
import { compareDrift, type ServiceGroup, type StateGroup, stateGroupsOf } from "../../../provider/automation/operations/drift";
import { withoutCredentials } from "../../../provider/backends/backend-url";
import { USER_GROUP_TYPE } from "../../../provider/resource/user-group";

const stateGroup = (id: string, extra: Partial<StateGroup> = {}): StateGroup => ({
  resourceName: `default.${id}`,
  inputs: { name: `G ${id}`, userGroupId: id, mapping: { m: "1" } },
  name: `G ${id}`,
  properties: { n: 1 },
  token: `token-${id}`,
  ...extra,
});
const live = (id: string, extra: Partial<ServiceGroup> = {}): [string, ServiceGroup] => [`default.${id}`, { name: `G ${id}`, properties: { n: 1 }, token: `token-${id}`, ...extra }];

describe("compareDrift", () => {
  it("is empty when the service holds what the state says", () => {
    expect(compareDrift([stateGroup("a")], new Map([live("a")]))).toEqual([]);
  });

  it("names a deleted, renamed, changed and rotated group, never a token", () => {
    const drift = compareDrift(
      [stateGroup("a"), stateGroup("b"), stateGroup("c"), stateGroup("d")],
      new Map<string, ServiceGroup | undefined>([["default.a", undefined], live("b", { name: "Renamed" }), live("c", { properties: { n: 2 } }), live("d", { token: "new-token" })]),
    );
    expect(drift.map((d) => `${d.resourceName} ${d.kind}`)).toEqual(["default.a deleted", "default.b renamed", "default.c properties changed", "default.d token rotated"]);
    expect(drift[1]?.detail).toBe('name "G b" in the state, "Renamed" on the service');
    expect(JSON.stringify(drift)).not.toMatch(/token-d|new-token/);
  });

  it("with a file: what up would create, delete and change (mapping from the state, which the service never returns)", () => {
    const drift = compareDrift(
      [stateGroup("a"), stateGroup("b")],
      new Map([live("a"), live("b")]),
      [
        { name: "G a", userGroupId: "a", mapping: { m: "2" }, properties: { n: 1 } },
        { name: "New", userGroupId: "n" },
      ],
    );
    expect(drift.map((d) => `${d.resourceName} ${d.kind}: ${d.detail}`)).toEqual([
      "default.a differs from file: up would change mapping",
      "default.b not in file: in the state, not in the file; up would delete it",
      "default.n not created: declared in the file, not in the state; up would create it",
    ]);
  });

  it("says nothing of a group it could not read", () => {
    expect(compareDrift([stateGroup("a")], new Map())).toEqual([]);
  });
});

describe("stateGroupsOf", () => {
  it("reads the groups of an exported deployment, secrets in plain text, leaving replaced ones out", () => {
    const resource = (id: string, extra: object = {}) => ({
      urn: `urn:pulumi:s::user-groups::${USER_GROUP_TYPE}::default.${id}`,
      type: USER_GROUP_TYPE,
      inputs: { __provider: "x", name: `G ${id}`, userGroupId: id, mapping: {} },
      outputs: { name: `G ${id}`, properties: { n: 1 }, token: { "4dabf18193072939515e22adb298388d": "1b47061264138c4ac30d75fd1eb44270", plaintext: `"tok-${id}"` } },
      ...extra,
    });
    const groups = stateGroupsOf({ resources: [{ urn: "urn:pulumi:s::user-groups::pulumi:pulumi:Stack::user-groups-s", type: "pulumi:pulumi:Stack" }, resource("a"), resource("b", { delete: true })] });
    expect(groups).toEqual([{ resourceName: "default.a", inputs: { name: "G a", userGroupId: "a", mapping: {} }, name: "G a", properties: { n: 1 }, token: "tok-a" }]);
  });
});

describe("withoutCredentials", () => {
  it("leaves a user name and password out of a backend URL shown in a message or report", () => {
    expect(withoutCredentials("postgres://ci:s3cret@db.internal:5432/pulumi")).toBe("postgres://db.internal:5432/pulumi");
    expect(withoutCredentials("s3://bucket/prefix?region=eu-west-1")).toBe("s3://bucket/prefix?region=eu-west-1");
    expect(withoutCredentials("file:///home/ci/state")).toBe("file:///home/ci/state");
  });
});
