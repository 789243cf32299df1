// Fault matrix, part 2: answers that come late (1.5 s latency spikes) and
// answers that never come although the request was carried out (drop-after-apply).
import { API_METHODS } from "../../provider/wire/schemas";
import { everyMethod, runFaultMatrix } from "./fault-matrix";

runFaultMatrix("fl", [
  {
    name: "1.5 s latency spikes",
    rules: [...everyMethod({ action: "delay", delayMs: 1500, times: 1 }), ...everyMethod({ action: "delay", delayMs: 1500, probability: 0.15 })],
    firedOn: API_METHODS,
  },
  {
    name: "lost answers (drop-after-apply) on create (GET), update (PUT), rotate (POST) and delete (DELETE)",
    rules: [...everyMethod({ action: "drop-after-apply", times: 1 }), ...everyMethod({ action: "drop-after-apply", probability: 0.3 })],
    firedOn: API_METHODS,
  },
]);
