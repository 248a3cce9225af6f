/** Every error prazo throws carries one of these stable codes (SPEC D6). Never renamed once shipped. */
export const ErrorCode = Object.freeze({
  DEADLINE_EXCEEDED: 'DEADLINE_EXCEEDED',
  DEADLINE_INSUFFICIENT: 'DEADLINE_INSUFFICIENT',
  CONNECT_TIMEOUT: 'CONNECT_TIMEOUT',
  CONNECT_FAILED: 'CONNECT_FAILED',
  QUEUE_TIMEOUT: 'QUEUE_TIMEOUT',
  RESPONSE_TIMEOUT: 'RESPONSE_TIMEOUT',
  BODY_TIMEOUT: 'BODY_TIMEOUT',
  RETRY_BUDGET_EXHAUSTED: 'RETRY_BUDGET_EXHAUSTED',
  CONCURRENCY_LIMITED: 'CONCURRENCY_LIMITED',
  /** The dependency's adaptive throttle refused the call locally: most recent attempts failed. */
  THROTTLED: 'THROTTLED',
  NO_INSTANCE: 'NO_INSTANCE',
  INVALID_OPTIONS: 'INVALID_OPTIONS',
  /** A dependency answered with a failure (an HTTP 5xx, 408 or 429; a gRPC failure status). */
  DEPENDENCY_FAILED: 'DEPENDENCY_FAILED',
  /** A latency file (histogram, CSV, samples) that cannot be read as one. */
  INVALID_SOURCE: 'INVALID_SOURCE',
  /** A Prometheus range query that did not produce a matrix (unreachable, timeout, an error answer, a bad body). */
  PROMETHEUS_QUERY_FAILED: 'PROMETHEUS_QUERY_FAILED',
  /** A new version of a watched config file was refused: the version in force stays (prazo/config). */
  CONFIG_REJECTED: 'CONFIG_REJECTED',
  /** The client's `close()` was called: the call was refused before anything was sent. */
  CLIENT_CLOSED: 'CLIENT_CLOSED',
} as const);

export type ErrorCode = (typeof ErrorCode)[keyof typeof ErrorCode];

/**
 * Where the time ran out. `queue` is the wait for a connection before the request was written (it
 * never reached the dependency); `deadline` is the propagated, end-to-end one.
 */
export type TimeoutPhase = 'queue' | 'connect' | 'response' | 'body' | 'deadline';
