// Writes schema/groups.schema.json from the zod schema of a groups file (`npm run schema`; a test checks the committed file is up to date).
import { mkdirSync, writeFileSync } from "node:fs";
import { resolve } from "node:path";
import { groupsFileJsonSchema } from "../provider/automation/internal.js";

// Compiled to build/scripts/, so the package root is two levels up.
const target = resolve(__dirname, "..", "..", "schema", "groups.schema.json");
mkdirSync(resolve(target, ".."), { recursive: true });
writeFileSync(target, `${JSON.stringify(groupsFileJsonSchema(), null, 2)}\n`);
