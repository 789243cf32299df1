// The journal records each API request's W3C traceparent (validated, never raw),
// so that a request is found from its trace (issue #35, item 5).
import { request } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { FakeServer } from "../../fake-server/index.js";
import { parseTraceparent } from "../../fake-server/journal.js";
import { call, KEYS, start } from "./helpers.js";

const TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736";
const VALID = `00-${TRACE_ID}-00f067aa0ba902b7-01`;

let server: FakeServer;
beforeAll(async () => {
  server = await start();
});
afterAll(async () => {
  await server.close();
});

describe("parseTraceparent", () => {
  it("accepts exactly 00-<32 hex>-<16 hex>-<2 hex> and nothing else", () => {
    expect(parseTraceparent(VALID)).toEqual({ traceparent: VALID, traceId: TRACE_ID });
    expect(parseTraceparent(`00-${TRACE_ID}-00f067aa0ba902b7-00`)?.traceId).toBe(TRACE_ID);
    for (const bad of [
      undefined,
      "",
      [VALID, VALID],
      VALID.toUpperCase(),
      ` ${VALID}`,
      `${VALID} `,
      `${VALID}-extra`,
      `01-${TRACE_ID}-00f067aa0ba902b7-01`,
      `00-${TRACE_ID.slice(1)}-00f067aa0ba902b7-01`,
      `00-${TRACE_ID}-00f067aa0ba902b-01`,
      `00-${"0".repeat(32)}-00f067aa0ba902b7-01`,
      `00-${TRACE_ID}-${"0".repeat(16)}-01`,
      `00-${TRACE_ID}-00f067aa0ba902b7-0g`,
      `00-${"z".repeat(32)}-00f067aa0ba902b7-01`,
      `<script>alert(1)</script>${"a".repeat(30)}`,
    ]) {
      expect(parseTraceparent(bad as string | string[] | undefined), String(bad)).toBeUndefined();
    }
  });
});

describe("the journal's traceparent", () => {
  it("records a valid traceparent and its trace id, and nothing for a missing or malformed one", async () => {
    await server.reset();
    const secret = KEYS.customer;
    await call(server, "GET", { user_group_id: "traced", name: "Traced" }, { headers: { traceparent: VALID } });
    await call(server, "GET", { user_group_id: "untraced", name: "Untraced" });
    await call(server, "GET", { user_group_id: "bad", name: "Bad" }, { headers: { traceparent: `00-${secret}-00f067aa0ba902b7-01` } });
    await call(server, "GET", { user_group_id: "upper", name: "Upper" }, { headers: { traceparent: VALID.toUpperCase() } });
    const journal = server.journal();
    expect(journal.map((e) => [e.traceparent, e.traceId])).toEqual([[VALID, TRACE_ID], [undefined, undefined], [undefined, undefined], [undefined, undefined]]);
    for (const entry of journal.slice(1)) {
      expect(Object.keys(entry)).not.toContain("traceparent");
      expect(Object.keys(entry)).not.toContain("traceId");
    }
    expect(JSON.stringify(journal)).not.toContain(secret);
    expect(JSON.stringify(journal)).not.toContain(VALID.toUpperCase());
  });

  it("is served by GET /__admin/requests", async () => {
    await server.reset();
    await call(server, "GET", { user_group_id: "traced", name: "Traced" }, { headers: { traceparent: VALID } });
    const res = await request(`${server.url}/__admin/requests`);
    const body = (await res.body.json()) as { requests: { traceparent?: string; traceId?: string }[] };
    expect(body.requests).toHaveLength(1);
    expect(body.requests[0]).toMatchObject({ traceparent: VALID, traceId: TRACE_ID });
  });

  it("a failed request keeps its trace id too (it is what one looks for)", async () => {
    await server.reset();
    await call(server, "GET", { user_group_id: "x", name: "X" }, { key: "wrong-key", headers: { traceparent: VALID } });
    expect(server.journal()).toEqual([expect.objectContaining({ status: 401, traceId: TRACE_ID })]);
  });
});
