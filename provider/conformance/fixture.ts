// Record and compare: the facts a target gave, per check, written to a fixture
// file (0600). Facts never hold a token or a key (checks.ts), so a fixture
// recorded from the real service can be committed; comparing the emulator's
// facts with it turns a difference found once into a test.
import { readFileSync, renameSync, statSync, writeFileSync } from "node:fs";
import path from "node:path";
import { UserGroupsError } from "../wire/errors";
import type { Facts, FactValue } from "./checks";

export const MAX_FIXTURE_BYTES = 4 * 1024 * 1024;

export interface Fixture {
  version: 1;
  /** The target's origin when recorded (no path, no credentials). */
  target: string;
  recordedAt: string;
  readOnly: boolean;
  /** check id -> the facts observed */
  checks: Record<string, Facts>;
}

export function writeFixture(file: string, fixture: Fixture): void {
  const temp = path.join(path.dirname(file), `.${path.basename(file)}.${process.pid}.tmp`);
  writeFileSync(temp, `${JSON.stringify(fixture, null, 2)}\n`, { mode: 0o600 });
  renameSync(temp, file);
}

const isFact = (v: unknown): v is FactValue =>
  v === null || typeof v === "string" || typeof v === "number" || typeof v === "boolean" || (Array.isArray(v) && v.every((s) => typeof s === "string"));

export function readFixture(file: string): Fixture {
  let text: string;
  try {
    if (statSync(file).size > MAX_FIXTURE_BYTES) throw new UserGroupsError("invalid_fixture", `fixture ${file}: larger than ${MAX_FIXTURE_BYTES} bytes`);
    text = readFileSync(file, "utf8");
  } catch (error) {
    if (error instanceof UserGroupsError) throw error;
    throw new UserGroupsError("invalid_fixture", `fixture ${file}: cannot read it (${(error as NodeJS.ErrnoException).code ?? "error"})`);
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new UserGroupsError("invalid_fixture", `fixture ${file}: not JSON`);
  }
  const f = value as Partial<Fixture> | null;
  const checks = f?.checks;
  if (
    f?.version !== 1 ||
    checks === null ||
    typeof checks !== "object" ||
    !Object.values(checks).every((facts) => facts !== null && typeof facts === "object" && Object.values(facts).every(isFact))
  ) {
    throw new UserGroupsError("invalid_fixture", `fixture ${file}: not a conformance fixture of version 1`);
  }
  return {
    version: 1,
    target: String(f.target ?? ""),
    recordedAt: String(f.recordedAt ?? ""),
    readOnly: f.readOnly === true,
    checks: Object.assign(Object.create(null) as Record<string, Facts>, checks),
  };
}
