// @ts-check
// Like the Go host: every few minutes ask the engine's gRPC health service whether it is
// alive, and shut down when it is gone, so an orphaned host does not linger.
"use strict";

/** The engine is checked for liveness this often (as the Go host does). */
const HEALTH_CHECK_INTERVAL_MS = 5 * 60_000;

let healthCheckStarted = false;

/**
 * Starts the check once per process (later calls do nothing). An engine that does not
 * implement the health service counts as alive.
 * @param {any} grpc
 * @param {string} address
 * @param {() => void} onDead
 */
function startHealthCheck(grpc, address, onDead) {
  if (healthCheckStarted) return;
  healthCheckStarted = true;
  const client = new grpc.Client(address, grpc.credentials.createInsecure());
  const timer = setInterval(() => {
    client.makeUnaryRequest(
      "/grpc.health.v1.Health/Check",
      () => Buffer.alloc(0), // an empty HealthCheckRequest
      (/** @type {Buffer} */ b) => b,
      {},
      { deadline: Date.now() + 30_000 },
      (/** @type {any} */ err) => {
        if (err && err.code !== grpc.status.UNIMPLEMENTED) {
          clearInterval(timer);
          onDead();
        }
      },
    );
  }, HEALTH_CHECK_INTERVAL_MS);
  timer.unref(); // the gRPC server keeps the process alive, not this timer
}

module.exports = { startHealthCheck };
