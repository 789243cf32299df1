// The ledger: every group id a conformance run may create, written (0600,
// atomically) before the request that could create it, and struck off once the
// clean-up has seen it gone. The service has no way to list groups, so this is
// what `--sweep` removes by prefix: ids only, never a token.
import { existsSync, readFileSync, renameSync, statSync, writeFileSync } from "node:fs";
import path from "node:path";
import { UserGroupsError } from "../wire/errors";

export const DEFAULT_LEDGER = ".user-groups-conformance-ledger.json";
const MAX_LEDGER_BYTES = 4 * 1024 * 1024;

interface LedgerFile {
  version: 1;
  /** prefix -> ids */
  ids: Record<string, string[]>;
}

export class Ledger {
  private data: LedgerFile;

  constructor(readonly file: string) {
    this.data = existsSync(file) ? read(file) : { version: 1, ids: {} };
  }

  ids(prefix: string): string[] {
    return [...(Object.hasOwn(this.data.ids, prefix) ? this.data.ids[prefix]! : [])];
  }

  add(prefix: string, id: string): void {
    const list = Object.hasOwn(this.data.ids, prefix) ? this.data.ids[prefix]! : (this.data.ids[prefix] = []);
    if (list.includes(id)) return;
    list.push(id);
    this.save();
  }

  remove(prefix: string, ids: readonly string[]): void {
    if (!Object.hasOwn(this.data.ids, prefix)) return;
    const gone = new Set(ids);
    const left = this.data.ids[prefix]!.filter((id) => !gone.has(id));
    if (left.length > 0) this.data.ids[prefix] = left;
    else delete this.data.ids[prefix];
    this.save();
  }

  private save(): void {
    const temp = path.join(path.dirname(this.file), `.${path.basename(this.file)}.${process.pid}.tmp`);
    writeFileSync(temp, `${JSON.stringify(this.data, null, 2)}\n`, { mode: 0o600 });
    renameSync(temp, this.file);
  }
}

function read(file: string): LedgerFile {
  if (statSync(file).size > MAX_LEDGER_BYTES) throw new UserGroupsError("conformance_refused", `the ledger ${file} is larger than ${MAX_LEDGER_BYTES} bytes`);
  let value: unknown;
  try {
    value = JSON.parse(readFileSync(file, "utf8"));
  } catch {
    throw new UserGroupsError("conformance_refused", `the ledger ${file} is not JSON; move it away`);
  }
  const ids = (value as { ids?: unknown } | null)?.ids;
  const ok =
    (value as { version?: unknown } | null)?.version === 1 &&
    ids !== null &&
    typeof ids === "object" &&
    Object.values(ids as object).every((list) => Array.isArray(list) && list.every((id) => typeof id === "string" && id.length <= 255));
  if (!ok) throw new UserGroupsError("conformance_refused", `the ledger ${file} is not a ledger of this version; move it away`);
  // A null-prototype copy: a prefix named __proto__ stays a key.
  return { version: 1, ids: Object.assign(Object.create(null) as Record<string, string[]>, ids) };
}
