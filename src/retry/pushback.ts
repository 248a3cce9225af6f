import { MAX_TIMER_DELAY_MS } from '../clock/clock.js';
import { isPrazoError, type PrazoError } from '../errors/base.js';
import { ErrorCode } from '../errors/codes.js';
import { DependencyFailedError } from '../errors/dependency.js';
import {
  BODY_TIMEOUT_CODES,
  isFailureStatus,
  MAX_CAUSE_DEPTH,
  MAX_PUSHBACK_LENGTH,
  PUSHBACK_HEADER,
  RESPONSE_TIMEOUT_CODES,
} from './constants.js';
import { headerValue } from './retry-after.js';

/**
 * Pushback (SPEC X6): the server's own word on whether its caller may retry, in gRPC's terms
 * (proposal A6, "Pushback"). A service whose dependency failed has already spent that dependency's
 * retry budget; if its callers retried too, an outage four hops deep would cost one budget per hop
 * (1.1⁴ with prazo, 3⁴ naively). So the failing hop answers "do not retry", and only the hop next to
 * the failure retries: the SRE book's "retry at one layer".
 *
 * The signal is gRPC's metadata entry `grpc-retry-pushback-ms`, read the same way on HTTP responses
 * (prazo already reads gRPC's `grpc-timeout` on HTTP requests, as gRPC-Web and Envoy send it):
 * - a non-negative integer `n`: retry, but not before `n` ms (a `Retry-After` in ms);
 * - a negative integer, or anything that is not an ASCII signed 32-bit integer without unnecessary
 *   leading zeros: **do not retry at all**, and send no further hedge. prazo writes `-1`.
 *
 * grpc-js 1.14 reads an unparseable value as "retry after NaN ms" (at once); A6 says the opposite,
 * and prazo follows A6.
 */

/** What a pushback value says: retry after `afterMs`, or not at all. */
export type Pushback = { readonly retry: true; readonly afterMs: number } | { readonly retry: false };

/** The pushback "do not retry" (shared, frozen). */
export const STOP: Pushback = Object.freeze({ retry: false });

/** The value prazo writes to ask its caller not to retry. */
export const DO_NOT_RETRY = '-1';

/** An ASCII signed integer with no unnecessary leading zeros ("-0" is one). */
const INTEGER = /^(?:0|-?[1-9]\d*)$/;

/**
 * What one `grpc-retry-pushback-ms` value says (surrounding spaces and tabs ignored, as HTTP field
 * values are). `undefined` only for no value at all; any other string that is not a valid signed
 * 32-bit integer means "do not retry", as A6 specifies. Bounded: a value over 16 characters is not
 * parsed at all.
 */
export function parsePushback(value: unknown): Pushback | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string' || value.length > MAX_PUSHBACK_LENGTH) return STOP;
  const text = value.trim();
  if (!INTEGER.test(text)) return STOP;
  const n = Number(text);
  if (n < 0 || n > MAX_TIMER_DELAY_MS) return STOP; // negative, or not a signed 32-bit integer
  return { retry: true, afterMs: n };
}

/**
 * The first `grpc-retry-pushback-ms` of a response's headers or a gRPC status' metadata: an undici /
 * Node header record (string or list), a fetch `Headers` (its comma-joined list is one value, so a
 * repeated header reads as "do not retry"), or grpc-js `Metadata` (whose `get` returns a list); the
 * forms and cases {@link headerValue} reads. Headers that cannot be read (a `get` that throws, a
 * revoked Proxy) carry no pushback: `undefined`, never a throw.
 */
export function readPushback(headers: unknown): Pushback | undefined {
  let value = headerValue(headers, PUSHBACK_HEADER);
  if (Array.isArray(value)) {
    try {
      if (value.length === 0) return undefined;
      value = value[0];
    } catch {
      return undefined; // a list that cannot be read (a Proxy): no value
    }
    if (Buffer.isBuffer(value)) return STOP; // a binary metadata value is not an ASCII integer
  }
  return parsePushback(value ?? undefined);
}

/**
 * Why a handler's failure is a dependency's, in the caller's terms (SPEC X6): `timeout`, the time ran
 * out (the deadline, or the dependency did not answer in time: HTTP 504, gRPC DEADLINE_EXCEEDED);
 * `unavailable`, the dependency is down or failing (refused, unreachable, its budget spent, a 5xx:
 * HTTP 503, gRPC UNAVAILABLE).
 */
export interface DependencyFailure {
  readonly kind: 'timeout' | 'unavailable';
  /** The prazo error recognised: the handler's own, or one in its `cause` chain. */
  readonly error: PrazoError;
}

const TIMEOUT_STATUSES: ReadonlySet<number> = new Set([408, 504]);
/** gRPC's DEADLINE_EXCEEDED. */
const GRPC_DEADLINE_EXCEEDED = 4;

/**
 * The mark of a dependency's own failure (a refused connect, a reset, a gRPC UNAVAILABLE...) that
 * prazo's executor gave to its caller as thrown, after its retries: the name of that dependency. A
 * registry symbol, so another installed copy of prazo reads it too.
 */
const DEPENDENCY_FAILURE = Symbol.for('prazo.dependencyFailure');

/**
 * Marks `error` as the final failure of `dependency` after prazo's plan (the executor does it), so a
 * server answering it pushes back (SPEC X6) although the error is not prazo's own. Returns `error`.
 */
export function markDependencyFailure<E>(error: E, dependency: string): E {
  if (error === null || typeof error !== 'object' || isPrazoError(error)) return error;
  try {
    Object.defineProperty(error, DEPENDENCY_FAILURE, { value: dependency, configurable: true });
  } catch {
    // a frozen error stays unmarked: answered as any error
  }
  return error;
}

const TIMEOUT_CODES: ReadonlySet<string> = new Set([...RESPONSE_TIMEOUT_CODES, ...BODY_TIMEOUT_CODES]);

function failureKind(error: PrazoError): DependencyFailure['kind'] | undefined {
  switch (error.code) {
    case ErrorCode.DEADLINE_EXCEEDED:
    case ErrorCode.DEADLINE_INSUFFICIENT:
    case ErrorCode.RESPONSE_TIMEOUT:
    case ErrorCode.BODY_TIMEOUT:
      return 'timeout';
    case ErrorCode.CONNECT_TIMEOUT:
    case ErrorCode.CONNECT_FAILED:
    case ErrorCode.QUEUE_TIMEOUT:
    case ErrorCode.RETRY_BUDGET_EXHAUSTED:
    // Refused here to protect the dependency or this service's pool: the dependency is failing or
    // saturated, and a caller retrying this hop would only meet the same refusal (issue 23).
    case ErrorCode.THROTTLED:
    case ErrorCode.CONCURRENCY_LIMITED:
    case ErrorCode.NO_INSTANCE:
      return 'unavailable';
    case ErrorCode.DEPENDENCY_FAILED: {
      const { httpStatus: status, grpcCode } = error as DependencyFailedError;
      if (status !== undefined) {
        if (!isFailureStatus(status)) return undefined; // a 4xx is about the request, not the dependency
        return TIMEOUT_STATUSES.has(status) ? 'timeout' : 'unavailable';
      }
      return grpcCode === GRPC_DEADLINE_EXCEEDED ? 'timeout' : 'unavailable';
    }
    default:
      return undefined; // invalid options, an unreadable file: a bug here, not a dependency's failure
  }
}

/** The marked failure of `dependency` as prazo's own error (the original as its cause). */
function failedError(dependency: string, cause: object): PrazoError {
  const grpcCode = (cause as { code?: unknown }).code;
  return new DependencyFailedError({
    dependency,
    ...(typeof grpcCode === 'number' ? { grpcCode } : {}),
    cause,
  });
}

/**
 * The dependency failure behind a handler's error, if it is one (SPEC X6): a prazo error (any installed
 * copy's, by its brand and stable code) meaning the time ran out or a dependency failed, or a
 * dependency's own error that prazo's executor gave up on (marked by it: a refused connect after the
 * retries), found on the error itself or along its `cause` chain (4 levels: `new Error('checkout failed', { cause })`, a gRPC
 * error carrying prazo's cause). The first prazo error met decides: a bug (INVALID_OPTIONS) is not
 * one, whatever it wraps.
 *
 * An `AggregateError` (a handler's `Promise.any` over replicas, every one lost) is a dependency
 * failure when each of its errors is one: this hop already tried them all, so its callers must not
 * retry it either (answered 500, they would, and X6's amplification is back). It reads as a timeout
 * when any of them is one (the first such: the answer's status and its error's code agree), else as
 * its first failure. One error that is not a dependency's (a bug, a plain error) and it is none, as
 * an empty one is (its own `cause`, if it has one, is still read). Nested aggregates count towards
 * the same 4 levels.
 *
 * Bounded in work as well as in depth: an error object met again at the same level (an aggregate
 * listing the same error several times, at each of several levels) reuses its first verdict instead
 * of being walked again, which without the reuse costs the product of the lists' lengths (four levels
 * of 1,000: 10¹² steps, the event loop held for hours, no answer ever sent). And at most 1,000 errors
 * are met in one walk, repeats included: past that the answer is "none", as for an error nobody
 * recognises.
 */
export function dependencyFailureOf(error: unknown): DependencyFailure | undefined {
  const walk: Walk = { verdicts: new Map(), visits: 0, spent: false };
  const failure = failureFrom(error, 0, walk);
  return walk.spent ? undefined : failure;
}

/**
 * How many errors one {@link dependencyFailureOf} walk meets at most (each entry of an aggregate's
 * list and each link of a `cause` chain, repeats included): `Promise.any` over replicas lists a
 * handful, so this is reached only by a structure built to be walked forever.
 */
const MAX_FAILURE_VISITS = 1_000;

/** One walk's state: each object's verdict per level (`null`: none), and the visits spent. */
interface Walk {
  readonly verdicts: Map<object, Array<DependencyFailure | null | undefined>>;
  visits: number;
  spent: boolean;
}

/**
 * The failure `error` is, read at `depth`: its verdict is kept per level, as what is left of the depth
 * bound can change it (a `cause` cycle meets the same object one level deeper each time).
 */
function failureFrom(error: unknown, depth: number, walk: Walk): DependencyFailure | undefined {
  if (walk.spent || depth > MAX_CAUSE_DEPTH || error === null || typeof error !== 'object') return undefined;
  walk.visits += 1;
  if (walk.visits > MAX_FAILURE_VISITS) {
    walk.spent = true;
    return undefined;
  }
  let known = walk.verdicts.get(error);
  const seen = known?.[depth];
  if (seen !== undefined) return seen ?? undefined;
  if (known === undefined) {
    known = [];
    walk.verdicts.set(error, known);
  }
  const failure = judge(error, depth, walk);
  known[depth] = failure ?? null;
  return failure;
}

/** The failure `error` itself is, else the one its aggregated errors or its `cause` are. */
function judge(error: object, depth: number, walk: Walk): DependencyFailure | undefined {
  if (isPrazoError(error)) {
    const kind = failureKind(error);
    return kind === undefined ? undefined : { kind, error };
  }
  const dependency = (error as Record<symbol, unknown>)[DEPENDENCY_FAILURE];
  if (typeof dependency === 'string') {
    const code = (error as { code?: unknown }).code;
    const timeout = typeof code === 'string' && TIMEOUT_CODES.has(code);
    return { kind: timeout ? 'timeout' : 'unavailable', error: failedError(dependency, error) };
  }
  if (error instanceof AggregateError) {
    const all = everyFailure(error.errors, depth + 1, walk);
    if (all !== undefined) return all;
  }
  return failureFrom((error as { cause?: unknown }).cause, depth + 1, walk);
}

/** The failure all of `errors` are (see {@link dependencyFailureOf}), or undefined. */
function everyFailure(errors: unknown, depth: number, walk: Walk): DependencyFailure | undefined {
  if (!Array.isArray(errors) || errors.length === 0) return undefined;
  let first: DependencyFailure | undefined;
  for (const error of errors) {
    const failure = failureFrom(error, depth, walk);
    if (failure === undefined) return undefined;
    if (first === undefined || (failure.kind === 'timeout' && first.kind !== 'timeout')) first = failure;
  }
  return first;
}
