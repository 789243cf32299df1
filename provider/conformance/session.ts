// The conformance kit's way to the target: one request at a time with the
// key, paced under the documented rate limit (a 429 waits its Retry-After and
// is sent again), every group it creates written to the ledger before the
// request and deleted at the end. Answers are kept only as facts that hold no
// token or key (statuses, codes, field names, comparisons).
import { request } from "undici";
import { type Clock, systemClock } from "../clock";
import { API_PATH } from "../wire/schemas";

/** What the target answered. */
export interface Answer {
  readonly status: number;
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
  /** The body as JSON, undefined when it is not JSON. */
  readonly json: unknown;
}

export interface SendOptions {
  /** null: no Authorization header; a string: this header instead of `Token <key>`. */
  readonly authorization?: string | null;
  /** The scheme word before the key (default `Token`). */
  readonly scheme?: string;
  /** true: the key with its letters' case swapped (the key itself never leaves the session). */
  readonly swapKeyCase?: boolean;
  /** null: no Content-Type; default application/json. */
  readonly contentType?: string | null;
  /** Default /api/user. */
  readonly path?: string;
  /** Sent as is instead of the JSON of the body. */
  readonly raw?: string | Buffer;
}

export interface Pace {
  readonly requests: number;
  readonly windowSeconds: number;
}

/** The most a 429's Retry-After is waited (seconds), and how often one request is sent again after a 429. */
const MAX_RETRY_AFTER_S = 60;
const MAX_429_RETRIES = 3;
/** The most of an answer's body read. */
const MAX_ANSWER_BYTES = 1024 * 1024;

export class Session {
  private lastSent = -Infinity;
  /** Requests sent, 429s waited out included. */
  sent = 0;

  constructor(
    readonly baseUrl: string,
    private readonly key: string,
    private readonly pace: Pace | undefined,
    private readonly clock: Clock = systemClock,
  ) {}

  async send(method: string, body: unknown, options: SendOptions = {}): Promise<Answer> {
    for (let attempt = 0; ; attempt++) {
      await this.waitTurn();
      const answer = await this.sendOnce(method, body, options);
      if (answer.status !== 429 || attempt >= MAX_429_RETRIES || options.authorization !== undefined) return answer;
      const retryAfter = Number(answer.headers["retry-after"]);
      await this.clock.sleep(1000 * Math.min(MAX_RETRY_AFTER_S, Number.isFinite(retryAfter) && retryAfter > 0 ? retryAfter : 1));
    }
  }

  private async waitTurn(): Promise<void> {
    if (this.pace === undefined) return;
    const gap = (this.pace.windowSeconds * 1000) / this.pace.requests;
    const wait = this.lastSent + gap - this.clock.now();
    if (wait > 0) await this.clock.sleep(wait);
    this.lastSent = this.clock.now();
  }

  private async sendOnce(method: string, body: unknown, options: SendOptions): Promise<Answer> {
    this.sent += 1;
    const headers: Record<string, string> = {};
    if (options.authorization === undefined) headers["authorization"] = `${options.scheme ?? "Token"} ${options.swapKeyCase === true ? swapCase(this.key) : this.key}`;
    else if (options.authorization !== null) headers["authorization"] = options.authorization;
    const contentType = options.contentType === undefined ? "application/json" : options.contentType;
    if (contentType !== null) headers["content-type"] = contentType;
    const payload = options.raw ?? (body === undefined ? undefined : JSON.stringify(body));
    const res = await request(`${this.baseUrl}${options.path ?? API_PATH}`, {
      method: method as "GET",
      headers,
      ...(payload === undefined ? {} : { body: payload }),
      headersTimeout: 30_000,
      bodyTimeout: 30_000,
    });
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of res.body) {
      size += (chunk as Buffer).length;
      if (size > MAX_ANSWER_BYTES) {
        res.body.destroy();
        break;
      }
      chunks.push(chunk as Buffer);
    }
    let json: unknown;
    try {
      json = JSON.parse(Buffer.concat(chunks).toString("utf8"));
    } catch {
      json = undefined;
    }
    return { status: res.statusCode, headers: res.headers, json };
  }
}

/** `aB1` -> `Ab1`. */
function swapCase(text: string): string {
  return [...text].map((c) => (c === c.toUpperCase() ? c.toLowerCase() : c.toUpperCase())).join("");
}
