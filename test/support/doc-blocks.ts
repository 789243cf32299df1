// The fenced blocks of the docs, as test/docs/shell-blocks.test.ts runs them, and
// the blocks another test runs as written: a block marked on the line before it
//   <!-- docs-test: run by test/package/pack.test.ts: runs in a clone of this repository -->
// is left out of the docs' flow and run, as written, by the file named (which
// finds it with blocksRunBy). A block that cannot run anywhere is marked
//   <!-- docs-test: skip: needs the real service and its API key -->
import { readFileSync } from "node:fs";
import path from "node:path";

const REPO_ROOT = path.resolve(__dirname, "../..");
const SKIP = /^<!-- docs-test: skip: (.+) -->$/;
const RUN_BY = /^<!-- docs-test: run by (\S+): (.+) -->$/;

export interface Block {
  readonly doc: string;
  readonly line: number;
  readonly info: string;
  readonly text: string;
  /** The reason given on the line before it, when it is not run. */
  readonly skip?: string;
  /** The test file that runs it as written instead of the docs' flow, and why. */
  readonly runBy?: { readonly file: string; readonly reason: string };
}

/** Every fenced block of a Markdown file, with the marker before it. */
export function fencedBlocks(doc: string, markdown: string): Block[] {
  const lines = markdown.split("\n");
  const blocks: Block[] = [];
  for (let i = 0; i < lines.length; i++) {
    // A fence may be indented (a block in a list item): its lines are, by as much.
    const open = /^( *)```(\S.*)?$/.exec(lines[i]!);
    if (open === null) continue;
    const indent = open[1]!;
    const start = i;
    const body: string[] = [];
    for (i++; i < lines.length && lines[i] !== `${indent}\`\`\``; i++) body.push(lines[i]!.startsWith(indent) ? lines[i]!.slice(indent.length) : lines[i]!);
    let before = start - 1;
    while (before >= 0 && lines[before]!.trim() === "") before--;
    const marker = before >= 0 ? lines[before]!.trim() : "";
    const skip = SKIP.exec(marker)?.[1];
    const runBy = RUN_BY.exec(marker);
    blocks.push({
      doc,
      line: start + 1,
      info: open[2] ?? "",
      text: body.join("\n"),
      ...(skip !== undefined ? { skip } : {}),
      ...(runBy !== null ? { runBy: { file: runBy[1]!, reason: runBy[2]! } } : {}),
    });
  }
  return blocks;
}

/** The `sh` blocks of `doc` (relative to the repository) marked as run by `file`, in order. */
export function blocksRunBy(doc: string, file: string): Block[] {
  return fencedBlocks(doc, readFileSync(path.join(REPO_ROOT, doc), "utf8")).filter((b) => b.info === "sh" && b.runBy?.file === file);
}
