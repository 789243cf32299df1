// Fault matrix, part 1: failures that are answered (5xx, 429) or refused outright (resets).
import { API_METHODS } from "../../provider/wire/schemas";
import { everyMethod, runFaultMatrix } from "./fault-matrix";

runFaultMatrix("ft", [
  {
    name: "30% 5xx on every method",
    rules: [...everyMethod({ action: "status", status: 503, times: 1 }), ...everyMethod({ action: "status", status: 500, probability: 0.3 })],
    firedOn: API_METHODS,
  },
  {
    name: "bursts of 429 with Retry-After",
    rules: everyMethod({ action: "status", status: 429, retryAfter: 1, times: 3 }),
    firedOn: API_METHODS,
  },
  {
    name: "connection resets",
    rules: [...everyMethod({ action: "reset", times: 1 }), ...everyMethod({ action: "reset", probability: 0.2 })],
    firedOn: API_METHODS,
  },
]);
