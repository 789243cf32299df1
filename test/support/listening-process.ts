// Follows a started server process (the fake server, an example service, ...) until
// it prints its `listening on URL` line.
import type { ChildProcess } from "node:child_process";

export interface ListeningProcess {
  child: ChildProcess;
  stdout: () => string;
  stderr: () => string;
  /** Resolves with the URL from the `listening on` line. */
  listening: Promise<string>;
  /** Resolves with the exit code (or the signal name). */
  exited: Promise<number | string>;
}

/** Follows a started server process (any way of starting it, e.g. an installed bin) until its `listening on` line. */
export function watchServer(child: ChildProcess): ListeningProcess {
  let out = "";
  let err = "";
  child.stdout?.setEncoding("utf8");
  child.stderr?.setEncoding("utf8");
  const exited = new Promise<number | string>((resolve) => {
    child.on("exit", (code, signal) => resolve(code ?? signal ?? -1));
  });
  const listening = new Promise<string>((resolve, reject) => {
    child.stdout?.on("data", (chunk: string) => {
      out += chunk;
      const match = /^listening on (http:\/\/\S+)\n/.exec(out);
      if (match?.[1] !== undefined) resolve(match[1]);
    });
    child.stderr?.on("data", (chunk: string) => {
      err += chunk;
    });
    void exited.then((code) => reject(new Error(`CLI exited (${code}) before listening: ${err}`)));
  });
  listening.catch(() => {});
  return { child, stdout: () => out, stderr: () => err, listening, exited };
}
