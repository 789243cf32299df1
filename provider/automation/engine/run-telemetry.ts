// Each engine run's span and measurements (docs/observability.md): the span is the
// active one while the engine command runs, so that the TRACEPARENT handed to the
// engine (engine trace options) names it as the parent of the engine's own spans and
// of its providers'. Stack (or shard) name and operation only, never a config value.
import { automationInstruments, errorTypeOf, inSpan } from "../telemetry";

export type EngineOperation = "up" | "preview" | "refresh" | "destroy" | "import";

/** Runs one engine command (`work`) in its span `user_groups.engine.<operation>`, counted and timed. */
export async function engineRun<T>(operation: EngineOperation, stackName: string, work: () => Promise<T>, shard?: number): Promise<T> {
  const started = performance.now();
  let outcome: string | undefined;
  try {
    return await inSpan(
      `user_groups.engine.${operation}`,
      { "user_groups.operation": operation, "user_groups.stack": stackName, "user_groups.shard": shard },
      () => work(),
    );
  } catch (error) {
    outcome = errorTypeOf(error);
    throw error;
  } finally {
    const measure = automationInstruments();
    if (measure !== undefined) {
      const attributes = { "user_groups.operation": operation, ...(outcome !== undefined ? { "error.type": outcome } : {}) };
      measure.engineRuns.add(1, attributes);
      measure.engineDuration.record((performance.now() - started) / 1000, attributes);
    }
  }
}
