// Outside text (ids, names, the service's and Pulumi's messages, a lock file's
// host name) made inert before it reaches a terminal, a CI log or a Markdown
// summary. A terminal obeys escape sequences in whatever it is sent: an id
// holding `\x1b[8m` hides everything after it (the real table, the `up`
// prompt) and can draw a fake one; bidi overrides and isolates reorder what a
// reader sees; zero-width and other format characters hide text. Every such
// character is shown as a visible escape instead: `\x1b` for the C0 and C1
// controls and DEL, `\u{202e}` for the rest.

/** Controls (C0, DEL, C1), format characters (bidi, zero-width, soft hyphen, tags...) and line/paragraph separators. */
const UNSAFE = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/gu;
const UNSAFE_BUT_NEWLINE = /(?!\n)[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/gu;

function visible(char: string): string {
  const code = char.codePointAt(0)!;
  return code <= 0x9f ? `\\x${code.toString(16).padStart(2, "0")}` : `\\u{${code.toString(16)}}`;
}

/** One field (an id, a name, a value): every control and format character escaped, line breaks too. */
export function terminalText(text: string): string {
  return text.replace(UNSAFE, visible);
}

/** A message of several lines: the same, except that its line breaks stay. */
export function terminalMessage(text: string): string {
  return text.replace(UNSAFE_BUT_NEWLINE, visible);
}

/**
 * A JSON document for stdout: JSON.stringify escapes C0 controls only; here
 * every other unsafe character is written as a `\uXXXX` escape as well, which
 * parses back to the same value. Its own line breaks are layout (a string's
 * are escaped already).
 */
export function terminalJson(value: unknown): string {
  // Each UTF-16 unit (an astral format character, a tag U+E00xx, is two).
  return JSON.stringify(value, null, 2).replace(UNSAFE_BUT_NEWLINE, (char) =>
    Array.from({ length: char.length }, (_, i) => `\\u${char.charCodeAt(i).toString(16).padStart(4, "0")}`).join(""),
  );
}
