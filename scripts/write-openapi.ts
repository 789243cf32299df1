// Writes docs/openapi.json from the wire schemas: `npm run openapi`.
import { writeFileSync } from "node:fs";
import { resolve } from "node:path";
import { openApiJson } from "../fake-server/openapi.js";

// Compiled to build/scripts/ (tsconfig.tools.json), so the repository root is two levels up.
const target = resolve(__dirname, "..", "..", "docs", "openapi.json");
writeFileSync(target, `${openApiJson()}\n`);
process.stdout.write(`wrote ${target}\n`);
