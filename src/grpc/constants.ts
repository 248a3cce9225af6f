/** Fixed parts of the gRPC integration (SPEC D1, D4, D8), in one place. */

/** Prefix of the status details prazo writes, so a log line says who refused the call. */
export const DETAILS_PREFIX = 'prazo: ';
