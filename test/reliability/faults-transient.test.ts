// Fault matrix, part 1: failures that are answered (5xx, 429) or refused outright (resets).
import { API_METHODS } from "../../provider/wire/schemas";
import { everyMethod, runFaultMatrix } from "./fault-matrix";

runFaultMatrix("ft", [
  {
    name: "30% 5xx on every method",
    // The chance rule fires at most 5 times a method, so one request's 8 attempts always get through (uncapped, a seed may draw 7 in a row).
    rules: [...everyMethod({ action: "status", status: 503, times: 1 }), ...everyMethod({ action: "status", status: 500, probability: 0.3, times: 5 })],
    firedOn: API_METHODS,
  },
  {
    name: "bursts of 429 with Retry-After",
    rules: everyMethod({ action: "status", status: 429, retryAfter: 1, times: 3 }),
    firedOn: API_METHODS,
  },
  {
    name: "connection resets",
    // Capped as the 5xx are: a fresh seed each run must never draw more resets in a row than a request's attempts.
    rules: [...everyMethod({ action: "reset", times: 1 }), ...everyMethod({ action: "reset", probability: 0.2, times: 5 })],
    firedOn: API_METHODS,
  },
]);
