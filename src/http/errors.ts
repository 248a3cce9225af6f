import { BodyTimeoutError, ConnectTimeoutError, ResponseTimeoutError } from '../errors/timeout.js';

/**
 * Turns undici's own timeout errors into prazo's typed ones (SPEC D6), so a caller matches on one
 * set of codes whatever produced the timeout: prazo's precise per-call timer, the connector's connect
 * timer, or undici's coarse internal timers (kept as backstops, and in force when the caller brings
 * their own dispatcher). Anything else (refused, reset, closed) passes through untouched: its Node or
 * undici `code` is what retry classification reads (SPEC R2).
 */

/** What a mapped error needs to say where the time ran out. */
export interface ErrorScope {
  readonly dependency: string;
  /** Milliseconds since the call (this attempt) started. */
  readonly elapsedMs: number;
  readonly connectTimeoutMs: number;
  readonly responseTimeoutMs: number;
  readonly bodyTimeoutMs: number;
}

const codeOf = (error: unknown): unknown =>
  error !== null && typeof error === 'object' ? (error as { code?: unknown }).code : undefined;

/** The prazo equivalent of `error` when it is one of undici's timeouts, else `error` itself. */
export function mapTransportError(error: unknown, scope: ErrorScope): unknown {
  switch (codeOf(error)) {
    case 'UND_ERR_CONNECT_TIMEOUT':
      return new ConnectTimeoutError({
        dependency: scope.dependency,
        elapsedMs: scope.elapsedMs,
        timeoutMs: scope.connectTimeoutMs,
        cause: error,
      });
    case 'UND_ERR_HEADERS_TIMEOUT':
      return new ResponseTimeoutError({
        dependency: scope.dependency,
        elapsedMs: scope.elapsedMs,
        timeoutMs: scope.responseTimeoutMs,
        cause: error,
      });
    case 'UND_ERR_BODY_TIMEOUT':
      return new BodyTimeoutError({
        dependency: scope.dependency,
        elapsedMs: scope.elapsedMs,
        timeoutMs: scope.bodyTimeoutMs,
        cause: error,
      });
    default:
      return error;
  }
}
