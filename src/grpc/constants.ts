/** Fixed parts of the gRPC integration (SPEC D1, D4, D8), in one place. */

/** Defaults of `deadlineInterceptor`. */
export const GRPC_CLIENT_DEFAULTS = Object.freeze({
  /**
   * The called method's p99 in ms: with less time left the call is not made (SPEC D4).
   * 0 only refuses calls whose deadline is already gone.
   */
  p99Ms: 0,
});

/** Bounds of the options above and of `withGrpcDeadline` (a timer cannot hold more). */
export const GRPC_LIMITS = Object.freeze({
  maxMs: 2 ** 31 - 1,
});

/** Prefix of the status details prazo writes, so a log line says who refused the call. */
export const DETAILS_PREFIX = 'prazo: ';
