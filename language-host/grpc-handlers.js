// @ts-check
// Adapting plain functions to grpc-js handlers: a returned value (or promise) becomes the
// response, a thrown error a gRPC error with its message.
"use strict";

/**
 * @param {any} grpc the @grpc/grpc-js module
 */
function grpcHandlers(grpc) {
  /**
   * Wraps a unary handler: a thrown error becomes a gRPC error with its message.
   * @param {(call: any) => any} handler
   */
  const unary = (handler) => (/** @type {any} */ call, /** @type {Function} */ callback) => {
    Promise.resolve()
      .then(() => handler(call))
      .then(
        (response) => callback(null, response),
        (/** @type {any} */ err) => callback({ code: grpc.status.UNKNOWN, details: String(err?.message ?? err) }),
      );
  };

  /**
   * A handler (unary or streaming) that answers UNIMPLEMENTED.
   * @param {string} method
   */
  const unimplemented = (method) => (/** @type {any} */ call, /** @type {Function | undefined} */ callback) => {
    const error = { code: grpc.status.UNIMPLEMENTED, details: `method ${method} not implemented by this language host` };
    if (callback) callback(error);
    else call.emit("error", error);
  };

  return { unary, unimplemented };
}

module.exports = { grpcHandlers };
