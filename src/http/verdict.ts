import type { Clock } from '../clock/clock.js';
import type { ResultVerdict } from '../dependency/types.js';
import { BodyTimeoutError, ConnectTimeoutError, ResponseTimeoutError } from '../errors/timeout.js';
import { isFailureStatus, RETRYABLE_STATUS } from '../retry/constants.js';
import { readPushback } from '../retry/pushback.js';
import { retryAfterMs } from '../retry/retry-after.js';

/**
 * What an HTTP attempt's end means: how its status counts for the recorder, the executor's verdict on
 * its head, and undici's own timeouts named as prazo's.
 */

/**
 * How a response counts for the latency recorder: a 5xx, 408 or 429 is the dependency failing (its
 * latency must not calibrate the healthy p99, SPEC C4); any other status is an answer. Which statuses
 * are retried is `retry/`'s rule (`RETRYABLE_STATUS`).
 */
export function statusOutcome(status: number): 'success' | 'error' {
  return isFailureStatus(status) ? 'error' : 'success';
}

/**
 * How the executor judges an HTTP response head (SPEC R2, R3, X6): a 408/429/5xx-retryable status is a
 * failure worth another attempt, with the server's `Retry-After` for 429/503; anything else is the
 * server's answer. A failed status carrying a pushback (`grpc-retry-pushback-ms`, negative or
 * unparseable) is the server asking not to be retried: the answer ends the call, marked `pushback`
 * (not held against the instance that sent it); a non-negative pushback is the wait before the retry,
 * in ms, ahead of `Retry-After`. The common verdicts are shared frozen objects, so judging a 200
 * allocates nothing and reads no header.
 */

const ANSWER: ResultVerdict = Object.freeze({ retryable: false, outcome: 'success' });
const FAILED_ANSWER: ResultVerdict = Object.freeze({ retryable: false, outcome: 'error' });
const RETRYABLE: ResultVerdict = Object.freeze({ retryable: true });
const PUSHED_BACK: ResultVerdict = Object.freeze({ retryable: false, outcome: 'error', pushback: true });

/**
 * The verdict on a response head (`head`'s headers read only for a failed status): its status, its pushback (unless `pushback` is false: the caller
 * ignores it) and, for 429/503, `Retry-After` (read on `clock`).
 */
export function judgeStatus(
  status: number,
  head: { readonly responseHeaders: unknown },
  clock: Clock,
  pushback = true,
): ResultVerdict {
  const retryable = RETRYABLE_STATUS.has(status);
  if (!retryable && !isFailureStatus(status)) return ANSWER;
  const headers = head.responseHeaders; // read (parsed, when undici handed it over raw) for a failure only
  const told = pushback ? readPushback(headers) : undefined;
  if (told !== undefined) {
    if (!told.retry) return PUSHED_BACK;
    if (retryable) return { retryable: true, retryAfterMs: told.afterMs };
  }
  if (!retryable) return FAILED_ANSWER;
  const wait = retryAfterMs(status, headers, clock.epochNow());
  return wait === undefined ? RETRYABLE : { retryable: true, retryAfterMs: wait };
}

/**
 * Turns undici's own timeout errors into prazo's typed ones (SPEC D6), so a caller matches on one
 * set of codes whatever produced the timeout: prazo's precise per-call timer, the connector's connect
 * timer, or undici's coarse internal timers (in force when the caller brings their own dispatcher,
 * or gives `headersTimeout` / `bodyTimeout`). Anything else (refused, reset, closed) passes through
 * untouched: its Node or undici `code` is what retry classification reads (SPEC R2).
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
