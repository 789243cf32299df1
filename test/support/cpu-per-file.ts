// A setup file of every tier (vitest.config.mts): when USER_GROUPS_TEST_CPU_LOG names a
// file, appends one line per test file with the CPU seconds its worker process and the
// children it reaped (Pulumi engines and their plugins, npm, servers a test started)
// spent while the file ran. Wall times are shared between three workers on two cores;
// CPU is what a file costs the suite, so this is the figure to cut (.ci/run prints the
// largest). Linux only (/proc); elsewhere it records nothing.
import { appendFileSync, readFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll } from "vitest";

const LOG = process.env["USER_GROUPS_TEST_CPU_LOG"];
const TICKS_PER_SECOND = 100; // USER_HZ, fixed at 100 by the kernel's ABI on every Linux architecture

/** utime+stime and cutime+cstime of this process, in seconds, or undefined off Linux. */
function cpuSeconds(): { own: number; children: number } | undefined {
  let stat: string;
  try {
    stat = readFileSync("/proc/self/stat", "utf8");
  } catch {
    return undefined;
  }
  // Fields after the command name (in parentheses, which may hold spaces): state is field 3, utime 14 ... cstime 17.
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  const at = (field: number) => Number(fields[field - 3]) / TICKS_PER_SECOND;
  return { own: at(14) + at(15), children: at(16) + at(17) };
}

if (LOG) {
  let start: ReturnType<typeof cpuSeconds>;
  let file = "";
  // vitest hands hooks their fixtures first (an object pattern is required) and the file's suite second.
  // eslint-disable-next-line no-empty-pattern
  beforeAll(({}, suite) => {
    start = cpuSeconds();
    file = path.relative(process.cwd(), suite.file.filepath);
  });
  afterAll(() => {
    const end = cpuSeconds();
    if (!start || !end) return;
    const own = end.own - start.own;
    const children = end.children - start.children;
    appendFileSync(LOG, `${(own + children).toFixed(2)}\t${own.toFixed(2)}\t${children.toFixed(2)}\t${file}\n`);
  });
}
