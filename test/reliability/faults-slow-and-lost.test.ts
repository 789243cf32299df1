// Fault matrix, part 2: answers that come late (1.5 s latency spikes) and
// answers that never come although the request was carried out (drop-after-apply).
import { API_METHODS } from "../../provider/wire/schemas";
import { everyMethod, runFaultMatrix } from "./fault-matrix";

runFaultMatrix("fl", [
  {
    name: "1.5 s latency spikes",
    rules: [...everyMethod({ action: "delay", delayMs: 1500, times: 1 }), ...everyMethod({ action: "delay", delayMs: 1500, probability: 0.15, times: 5 })],
    firedOn: API_METHODS,
  },
  {
    name: "lost answers (drop-after-apply) on create (GET), update (PUT), rotate (POST) and delete (DELETE)",
    // The chance rule fires at most 5 times a method: with the first one's, 6 lost answers at most, so one
    // request's 8 attempts always get through (uncapped, a seed such as 2665681970 lost 7 in a row: not a bug).
    rules: [...everyMethod({ action: "drop-after-apply", times: 1 }), ...everyMethod({ action: "drop-after-apply", probability: 0.3, times: 5 })],
    firedOn: API_METHODS,
  },
]);
