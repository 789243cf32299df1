// Against the fake server's rate limit (W11), `up` of many groups completes
// with zero failures and runs close to the allowed rate: the client paces its
// requests after the first 429 (provider/client/pacer.ts) instead of letting
// each one back off alone. The real limit (180 per minute, 300 groups) is
// `npm run bench:rate-limit`; here a shorter window keeps `npm test` fast.
import path from "node:path";
import { describe, expect, it } from "vitest";
import { measureRateLimitedUp } from "../../testkit/rate-limited-up";
import { REPO_ROOT } from "../support/pulumi-env";

describe("rate limit", () => {
  it("up of 100 groups under 30 requests per 10 s: no failure, at least 75% of the allowed rate", async () => {
    const result = await measureRateLimitedUp({ requests: 30, windowSeconds: 10, groups: 100, workRoot: path.join(REPO_ROOT, ".work") });
    console.log(`rate-limit: ${JSON.stringify(result)}`);
    expect(result.created).toBe(100);
    expect(result.groups).toBe(100);
    expect(result.fractionOfAllowed).toBeGreaterThan(0.75);
    expect(result.fractionOfAllowed).toBeLessThanOrEqual(1.05);
  }, 180_000);
});
