// Progress of a run on stderr. In CI (not a terminal): one plain line per
// step. On a terminal: a progress line (done/total, failures) and at most
// MAX_IN_FLIGHT_ROWS rows of groups in flight, redrawn in place; failures are
// printed above it once and stay. Each event redraws a bounded block, so a run
// of N groups writes O(N) bytes (the old task list redrew every row of the
// run on every event: O(N^2), and cursor-up past the screen garbled it).
// A group's name is escaped (terminalText): only this printer's own escape
// sequences reach the terminal.
import type { GroupEvent } from "../../automation/internal";
import { terminalText } from "./terminal-text";

export const MAX_IN_FLIGHT_ROWS = 10;

export const CHANGE_SYMBOL: Record<string, string> = { create: "+", update: "~", replace: "+-", delete: "-", same: " ", refresh: "~", read: " ", failed: "!" };
const PHASE_MARK: Record<GroupEvent["phase"], string> = { started: "...", done: "done", failed: "FAILED" };
/** In a preview nothing is applied: a step that is through is "planned", never "done". */
const PREVIEW_MARK: Record<GroupEvent["phase"], string> = { ...PHASE_MARK, done: "planned (preview)" };

const CLEAR_LINE = "\u001b[2K";
const up = (lines: number) => (lines > 0 ? `\u001b[${lines}A` : "");

export interface ProgressOptions {
  /** Groups in the run, when known (shown as done/total). */
  readonly total?: number;
  /** Terminal width: rows are cut to fit, so that none wraps and the redraw stays in place. */
  readonly columns?: number;
  /** The run is a preview: its rows say what is planned, not what is done. */
  readonly preview?: boolean;
}

export interface ProgressPrinter {
  (event: GroupEvent): void;
  /** Ends the display: in-flight rows are erased, the progress line stays. */
  finish(): void;
}

function rowOf(event: GroupEvent, preview = false): string {
  return `  ${CHANGE_SYMBOL[event.change] ?? "~"} ${terminalText(event.resourceName)}: ${event.change} ${(preview ? PREVIEW_MARK : PHASE_MARK)[event.phase]}`;
}

export function progressPrinter(write: (text: string) => void, terminal: boolean, options: ProgressOptions = {}): ProgressPrinter {
  if (!terminal) {
    const plain = (event: GroupEvent) => {
      if (event.change === "same" || event.change === "read") return;
      write(`${rowOf(event, options.preview)}\n`);
    };
    return Object.assign(plain, { finish: () => {} });
  }
  const width = Math.max(20, (options.columns ?? 100) - 1);
  const fit = (line: string) => (line.length > width ? `${line.slice(0, width - 3)}...` : line);
  const inFlight = new Map<string, string>();
  const finished = new Set<string>();
  const failed = new Set<string>();
  let drawn = 0;

  const statusLine = () => {
    const done = options.total !== undefined ? `${finished.size}/${options.total}` : `${finished.size}`;
    return `  ${done} done, ${failed.size} failed, ${inFlight.size} in flight`;
  };
  /** Back to the top of the block, `above` written there (it stays), then the block again. */
  const redraw = (above = "", withRows = true) => {
    let text = up(drawn);
    for (const line of above === "" ? [] : above.split("\n").slice(0, -1)) text += `${CLEAR_LINE}${fit(line)}\n`;
    const lines = [statusLine()];
    if (withRows) {
      let shown = 0;
      for (const row of inFlight.values()) {
        if (shown++ === MAX_IN_FLIGHT_ROWS) break;
        lines.push(row);
      }
      if (inFlight.size > MAX_IN_FLIGHT_ROWS) lines.push(`  ... and ${inFlight.size - MAX_IN_FLIGHT_ROWS} more in flight`);
    }
    for (const line of lines) text += `${CLEAR_LINE}${fit(line)}\n`;
    // Lines of a taller earlier block: cleared, and the cursor brought back.
    const stale = drawn - lines.length - (above === "" ? 0 : above.split("\n").length - 1);
    for (let i = 0; i < stale; i++) text += `${CLEAR_LINE}\n`;
    text += up(Math.max(0, stale));
    drawn = lines.length;
    write(text);
  };

  const print = (event: GroupEvent) => {
    const name = event.resourceName;
    if (event.phase === "started") {
      if (event.change === "same" || event.change === "read") return; // nothing to watch; counted when done
      inFlight.set(name, rowOf(event, options.preview));
      redraw();
      return;
    }
    inFlight.delete(name);
    if (event.phase === "failed") {
      failed.add(name);
      redraw(`${rowOf(event, options.preview)}\n`);
      return;
    }
    finished.add(name);
    redraw();
  };
  return Object.assign(print, { finish: () => redraw("", false) });
}
