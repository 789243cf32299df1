// Outside text (ids, names, values) in a Markdown summary that GitHub renders
// in a pull request: it must stay text. Backslash escapes do not stop
// everything GitHub adds to Markdown (an `@org/team` mention notifies a whole
// team, `https://...` and `www....` become links), but a code span does:
// GitHub links no mention, URL or issue reference inside `code`, and no
// Markdown or HTML is read there. So text that is plain words stays as it is
// (`default.acme`), and anything else goes in a code span, with controls and
// bidi characters shown as escapes (terminalText) and its pipes escaped (a GFM
// table splits cells on `|` even inside code).
import { terminalText } from "./terminal-text";

/** Letters, digits, spaces and the punctuation of plain prose, which Markdown and GitHub leave alone. */
const PLAIN = /^[\p{L}\p{N} .,;:'"()=+\-→]*$/u;
/** What GitHub turns into a link even without `<...>` or `[...]`. */
const LINK_LIKE = /:\/\/|www\./i;

/** At most this many characters of outside text per cell (a summary holds many rows). */
const MAX_CELL_CHARS = 300;

function oneLine(text: string): string {
  return terminalText(text.replace(/\s+/g, " ").trim()).slice(0, MAX_CELL_CHARS);
}

/** Text as a code span: a fence longer than any run of backticks in it, pipes escaped for the table. */
export function markdownCode(text: string): string {
  const content = oneLine(text).replace(/\|/g, "\\|");
  if (content === "") return "";
  const longestRun = Math.max(0, ...[...content.matchAll(/`+/g)].map((m) => m[0].length));
  const fence = "`".repeat(longestRun + 1);
  // A span that starts or ends with a backtick (or a space) needs a space inside each end; one is stripped.
  const padded = /^[` ]|[` ]$/.test(content) ? ` ${content} ` : content;
  return `${fence}${padded}${fence}`;
}

/** Text safe inside a Markdown table cell: one line, as it is when it is plain words, else a code span. */
export function markdownCell(text: string): string {
  const line = oneLine(text);
  return PLAIN.test(line) && !LINK_LIKE.test(line) && line.length > 0 ? line : markdownCode(text);
}
