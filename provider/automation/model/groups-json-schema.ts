// The JSON Schema of a groups file, generated from the zod schema that
// validates it (so the two cannot disagree), for editors:
// `# yaml-language-server: $schema=node_modules/pulumi-user-groups/schema/groups.schema.json`.
// Written to schema/groups.schema.json by `npm run schema` (a test checks it is up to date).
import { z } from "zod";
import { groupSpecSchema } from "./groups-spec";

export function groupsFileJsonSchema(): Record<string, unknown> {
  const document = z
    .strictObject({ groups: z.array(groupSpecSchema).describe("The user groups of the stack, one entry per group.") })
    .describe("A groups file of the `user-groups` command (pulumi-user-groups).");
  return { ...z.toJSONSchema(document, { io: "input", unrepresentable: "any" }), title: "user-groups groups file" };
}
