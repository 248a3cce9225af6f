import { systemClock } from '../clock/system.js';
import { isPrazoError, type PrazoError } from '../errors/base.js';
import { ErrorCode } from '../errors/codes.js';
import { defineOptions, type OptionsOf, option } from '../options/declare.js';
import { checkCallOptions } from '../options/validator.js';
import {
  BODY_TIMEOUT_CODES,
  CONNECT_FAILURE_CODES,
  CONNECTION_LOST_CODES,
  GRPC_UNAVAILABLE,
  isFailureStatus,
  MAX_AGGREGATE_ERRORS,
  MAX_CAUSE_DEPTH,
  MAX_EPOCH_MS,
  RESPONSE_TIMEOUT_CODES,
  RETRYABLE_STATUS,
} from './constants.js';
import { type Pushback, readPushback } from './pushback.js';
import { retryAfterMs } from './retry-after.js';

/**
 * Which failures are worth another attempt (SPEC R2, R4). The question is not "could it work next
 * time" but "did the server refuse on purpose": a 4xx about the request's content fails the same way
 * every time, so retrying it is load with no chance of success. A connect failure never reached a
 * server (retry at once); a reset before any response byte lost the request (retry after backoff); a
 * response timeout means the server took the work and is slow, so piling on is off by default.
 */

/** Why a failure is (not) retried. */
export type FailureKind =
  | 'connect'
  | 'connection-lost'
  | 'status'
  | 'response-timeout'
  | 'body-timeout'
  | 'prazo'
  | 'pushback'
  | 'unknown';

export interface FailureVerdict {
  readonly retryable: boolean;
  /** A connect failure: retry at once, without backoff (SPEC R4). */
  readonly immediate: boolean;
  /** The server's `Retry-After` for a 429/503, in ms (SPEC R3). */
  readonly retryAfterMs?: number;
  readonly kind: FailureKind;
  /** The HTTP status, when the failure carries one. */
  readonly status?: number;
  /**
   * The server pushed back (SPEC X6, kind `pushback`): not retried, no hedge sent, and not a failure of
   * the instance that answered (it was up: its own dependency failed).
   */
  readonly pushback?: boolean;
}

/** Options of {@link classifyFailure} and {@link isRetryable}, declared once. */
export const CLASSIFY_OPTIONS = defineOptions({
  /**
   * Retry a response (or body) timeout. Only sound for idempotent requests: the server may have done
   * the work. Default false (SPEC R4).
   */
  retryResponseTimeout: option.boolean({ default: false }),
  /**
   * Wall-clock epoch ms to read a `Retry-After` HTTP-date against, within ECMAScript's time range
   * (±8.64e15). Default: the system clock's `epochNow()` (delay-seconds need no clock at all).
   */
  nowEpochMs: option.number({ unit: 'ms', min: -MAX_EPOCH_MS, max: MAX_EPOCH_MS }),
  /**
   * Honour a pushback (SPEC X6): a failure whose headers (HTTP) or metadata (gRPC) carry
   * `grpc-retry-pushback-ms` with a negative or unparseable value is not retried (kind `pushback`);
   * a non-negative value is the wait before the retry, in ms. Default true.
   */
  pushback: option.boolean({ default: true }),
});

export type ClassifyOptions = OptionsOf<typeof CLASSIFY_OPTIONS>;

const RESPONSE_STARTED = Symbol.for('prazo.responseStarted');

/**
 * Errors marked that could not carry the mark themselves (frozen, sealed, a Proxy refusing it): an
 * unmarked one would read as lost before the response, and be retried although the server may have
 * acted. Only this copy of prazo sees them; a mark any copy reads needs a writable error.
 */
const startedUnwritable = new WeakSet<object>();

/**
 * Marks an error as happening after the response began (a reset mid-body): the server may have acted,
 * so the connection-lost rule no longer applies. For integrations that read bodies inside an attempt.
 * Never throws: a frozen error is marked all the same.
 */
export function markResponseStarted<E>(error: E): E {
  if (error === null || typeof error !== 'object') return error;
  try {
    (error as Record<symbol, unknown>)[RESPONSE_STARTED] = true;
  } catch {
    startedUnwritable.add(error);
  }
  return error;
}

const responseStarted = (x: object): boolean =>
  startedUnwritable.has(x) || Boolean((x as Record<symbol, unknown>)[RESPONSE_STARTED]);

const NO: FailureVerdict = Object.freeze({ retryable: false, immediate: false, kind: 'unknown' });
const CONNECT: FailureVerdict = Object.freeze({ retryable: true, immediate: true, kind: 'connect' });
const LOST: FailureVerdict = Object.freeze({ retryable: true, immediate: false, kind: 'connection-lost' });
const LOST_LATE: FailureVerdict = Object.freeze({
  retryable: false,
  immediate: false,
  kind: 'connection-lost',
});
const PRAZO_NO: FailureVerdict = Object.freeze({ retryable: false, immediate: false, kind: 'prazo' });
const PUSHED_BACK: FailureVerdict = Object.freeze({
  retryable: false,
  immediate: false,
  kind: 'pushback',
  pushback: true,
});

/** A failure's own pushback: its HTTP `headers` or its gRPC `metadata` (a status with a code). */
function pushbackOf(x: Record<string, unknown>, status: number | undefined): Pushback | undefined {
  if (status !== undefined) return readPushback(x.headers);
  return typeof x.code === 'number' && x.code !== 0 ? readPushback(x.metadata) : undefined;
}

const timeoutVerdict = (
  kind: 'response-timeout' | 'body-timeout',
  options: ClassifyOptions,
): FailureVerdict =>
  Object.freeze({ retryable: options.retryResponseTimeout === true, immediate: false, kind });

const statusOf = (x: Record<string, unknown>): number | undefined => {
  const s = typeof x.status === 'number' ? x.status : x.statusCode;
  return typeof s === 'number' && Number.isInteger(s) && s >= 100 && s <= 599 ? s : undefined;
};

function fromCode(code: string, x: object, options: ClassifyOptions): FailureVerdict | undefined {
  if (CONNECT_FAILURE_CODES.has(code)) return CONNECT;
  if (CONNECTION_LOST_CODES.has(code)) return responseStarted(x) ? LOST_LATE : LOST;
  if (RESPONSE_TIMEOUT_CODES.has(code)) return timeoutVerdict('response-timeout', options);
  if (BODY_TIMEOUT_CODES.has(code)) return timeoutVerdict('body-timeout', options);
  return undefined;
}

function fromPrazo(error: PrazoError, options: ClassifyOptions): FailureVerdict {
  switch (error.code) {
    case ErrorCode.CONNECT_TIMEOUT:
    case ErrorCode.CONNECT_FAILED:
    case ErrorCode.QUEUE_TIMEOUT: // never written: nothing reached the dependency
      return CONNECT;
    case ErrorCode.RESPONSE_TIMEOUT:
      return timeoutVerdict('response-timeout', options);
    case ErrorCode.BODY_TIMEOUT:
      return timeoutVerdict('body-timeout', options);
    default:
      return PRAZO_NO; // deadline exceeded/insufficient, budget exhausted, invalid options
  }
}

/**
 * Verdicts of one classification, per object and depth: an aggregate listing one error (or one nested
 * aggregate) several times, at each of several levels, reads it once per level instead of once per
 * path to it (8⁴ paths for one shared leaf, each reading its headers).
 */
type Seen = Map<object, Array<FailureVerdict | undefined>>;

/**
 * An AggregateError is retried when all its members are, at once when all are connect failures, and
 * never sooner than the longest `Retry-After` (or pushback wait) any of them asked for (SPEC R3):
 * `Promise.any` over replicas that all answered 429 is told to wait by each of them. A member that
 * pushed back makes the whole a pushback (SPEC X6), wherever it stands in the list: one of the
 * servers asked not to be retried, and no hedge of the call may be sent to it either.
 */
function fromAggregate(
  errors: readonly unknown[],
  options: ClassifyOptions,
  depth: number,
  seen: Seen,
): FailureVerdict {
  if (errors.length === 0) return NO;
  let retryable = true;
  let immediate = true;
  let wait: number | undefined;
  for (const inner of errors.slice(0, MAX_AGGREGATE_ERRORS)) {
    const v = classifyOnce(inner, options, depth + 1, seen);
    if (v.pushback === true) return PUSHED_BACK;
    retryable &&= v.retryable;
    immediate &&= v.immediate;
    if (v.retryAfterMs !== undefined && (wait === undefined || v.retryAfterMs > wait)) wait = v.retryAfterMs;
  }
  if (!retryable) return NO;
  if (wait === undefined) return immediate ? CONNECT : LOST;
  return Object.freeze({ ...LOST, retryAfterMs: wait });
}

function classifyOnce(failure: unknown, options: ClassifyOptions, depth: number, seen: Seen): FailureVerdict {
  if (failure === null || typeof failure !== 'object') return NO;
  let known = seen.get(failure);
  const verdict = known?.[depth];
  if (verdict !== undefined) return verdict;
  if (known === undefined) {
    known = [];
    seen.set(failure, known);
  }
  const fresh = classify(failure, options, depth, seen);
  known[depth] = fresh;
  return fresh;
}

function classify(failure: unknown, options: ClassifyOptions, depth: number, seen?: Seen): FailureVerdict {
  if (failure === null || typeof failure !== 'object' || depth > MAX_CAUSE_DEPTH) return NO;
  if (isPrazoError(failure)) return fromPrazo(failure, options);
  const x = failure as Record<string, unknown>;
  const status = statusOf(x);
  const told = options.pushback === false ? undefined : pushbackOf(x, status);
  if (told !== undefined && !told.retry && (status === undefined || isFailureStatus(status)))
    return status === undefined ? PUSHED_BACK : Object.freeze({ ...PUSHED_BACK, status });
  const pushedWait = told?.retry ? told.afterMs : undefined;
  if (status !== undefined) {
    if (!RETRYABLE_STATUS.has(status))
      return Object.freeze({ retryable: false, immediate: false, kind: 'status', status });
    const wait = pushedWait ?? retryAfterMs(status, x.headers, options.nowEpochMs ?? systemClock.epochNow());
    return Object.freeze({ retryable: true, immediate: false, kind: 'status', status, retryAfterMs: wait });
  }
  if (typeof x.code === 'string') {
    const v = fromCode(x.code, failure, options);
    if (v !== undefined) return v;
  } else if (x.code === GRPC_UNAVAILABLE && 'metadata' in x) {
    return pushedWait === undefined ? LOST : Object.freeze({ ...LOST, retryAfterMs: pushedWait });
  }
  if (Array.isArray(x.errors)) return fromAggregate(x.errors, options, depth, seen ?? new Map());
  return seen === undefined
    ? classify(x.cause, options, depth + 1)
    : classifyOnce(x.cause, options, depth + 1, seen);
}

/**
 * Classifies a thrown error or a response-like object (anything with `status` or `statusCode`):
 * - HTTP 408, 429, 500, 502, 503, 504 → retryable (with `Retry-After` for 429/503); other statuses → no;
 * - connect failures (`ECONNREFUSED`, `ETIMEDOUT`, `EHOSTUNREACH`, `ENETUNREACH`, `EAI_AGAIN`, undici
 *   `UND_ERR_CONNECT_TIMEOUT`, prazo's `ConnectTimeoutError` and `ConnectFailedError`), and prazo's
 *   `QueueTimeoutError` (a request that waited for a connection and was never written) → retryable at once;
 * - connection lost before any response byte (`ECONNRESET`, `EPIPE`, `ECONNABORTED`, undici
 *   `UND_ERR_SOCKET`) → retryable, unless marked with {@link markResponseStarted};
 * - response/body timeouts (prazo's, undici's `UND_ERR_HEADERS_TIMEOUT`/`UND_ERR_BODY_TIMEOUT`) → only
 *   with `retryResponseTimeout`;
 * - gRPC `UNAVAILABLE` (14) → retryable; deadline errors, an exhausted budget, aborts, `ENOTFOUND` and
 *   anything unknown → no. `cause` chains (fetch's "fetch failed") and AggregateErrors are followed.
 */
export function classifyFailure(failure: unknown, options: ClassifyOptions = {}): FailureVerdict {
  checkCallOptions('classifyFailure', CLASSIFY_OPTIONS, options);
  return classifyReadable(failure, options);
}

/** True when {@link classifyFailure} says another attempt is worth it (SPEC R2). */
export function isRetryable(errorOrResponse: unknown, options: ClassifyOptions = {}): boolean {
  checkCallOptions('isRetryable', CLASSIFY_OPTIONS, options);
  return classifyReadable(errorOrResponse, options).retryable;
}

/**
 * A failure that cannot be read (a revoked Proxy, a getter that throws on `status`, `cause`,
 * `headers`...) is one nobody recognises: not retried, rather than a classifier that throws in the
 * middle of a call's failure path.
 */
function classifyReadable(failure: unknown, options: ClassifyOptions): FailureVerdict {
  try {
    return classify(failure, options, 0);
  } catch {
    return NO;
  }
}
