import { type Deadline, isDeadline } from '../deadline/deadline.js';
import { defineOptions, option } from '../options/declare.js';
import { readOptions } from '../options/validator.js';
import { PUSHBACK_HEADER } from '../retry/constants.js';
import { type DependencyFailure, DO_NOT_RETRY, dependencyFailureOf } from '../retry/pushback.js';
import { type DeadlineErrorBody, PUSHBACK_STATUS } from './constants.js';

/**
 * Retry at one layer, on the server (SPEC X6). A handler that fails because one of *its* dependencies
 * failed — prazo's own errors say so: DEADLINE_INSUFFICIENT / DEADLINE_EXCEEDED, a dependency's
 * CONNECT_* / RESPONSE_TIMEOUT / BODY_TIMEOUT / QUEUE_TIMEOUT, RETRY_BUDGET_EXHAUSTED, THROTTLED,
 * CONCURRENCY_LIMITED, NO_INSTANCE, or a
 * DependencyFailedError for an answer (a 5xx) — has already spent that dependency's retries where they
 * belong, next to the failure, within its budget. Its callers must not add theirs: four hops retrying
 * an outage cost 3⁴ naively, and even with a budget at every hop 1.1⁴. So the answer says "do not
 * retry", in the signal gRPC defined for it (proposal A6), on HTTP too:
 *
 * - `grpc-retry-pushback-ms: -1` — prazo's clients (createHttpClient, the interceptor, the executor
 *   with gRPC) end the call on it: no retry, no hedge, not a failure of the instance;
 * - the status that says what happened: `504` when time ran out (the deadline, a dependency that did
 *   not answer in time), `503` when a dependency is down or failing;
 * - `Retry-After` for every other caller: by default the seconds left of the request's deadline, so a
 *   client that honours it cannot retry this request before its deadline is gone (prazo's own clients
 *   before pushback stopped on exactly that: a Retry-After that does not fit);
 * - `cache-control: no-store`, and the small JSON body `{ error: <prazo code>, message }`.
 *
 * Why not Finagle's `finagle-http-nonretryable-nack`, the one HTTP convention for "do not retry": it
 * means "rejected, *not processed*", and is read only on a 503; a handler whose dependency failed may
 * well have done part of its work, and a deadline is a 504.
 */

/**
 * The longest `Retry-After` written, in seconds (a day): what is left of a deadline further away, or
 * endless (`Deadline.after(Infinity)`: "Infinity" is no delay-seconds, RFC 9110 §10.2.3), is capped
 * to it, as `retryAfterS` is.
 */
const MAX_RETRY_AFTER_S = 86_400;

/** Options of the pushback answer (the `pushback` option of every server integration). */
export const PUSHBACK_OPTIONS = defineOptions({
  /**
   * `Retry-After` sent with a pushback, in seconds, for callers that do not read
   * `grpc-retry-pushback-ms`. Default: the seconds left of the request's deadline, rounded up, at
   * least 1. Integer [0, 86400].
   */
  retryAfterS: option.integer({ unit: 's', min: 0, max: MAX_RETRY_AFTER_S }),
});

/** How a server answers a dependency failure: `retryAfterS` fixed, or from the deadline. */
export interface PushbackSettings {
  readonly retryAfterS?: number | undefined;
}

/** Options of {@link pushbackAnswer}: the pushback's, and the request's deadline. */
const PUSHBACK_ANSWER_OPTIONS = defineOptions({
  ...PUSHBACK_OPTIONS.specs,
  /** The request's deadline: `Retry-After` is what is left of it. Default: none (`Retry-After: 1`). */
  deadline: option.value<Deadline>('a Deadline', isDeadline),
});

/** What a pushback answer is made of: for `node:http`, Express and Fastify alike, or your own server. */
export interface PushbackAnswer {
  /** 504 when time ran out, 503 when a dependency is down or failing. */
  readonly status: number;
  /** `grpc-retry-pushback-ms: -1`, `retry-after`, `cache-control: no-store`. */
  readonly headers: Readonly<Record<string, string>>;
  /** `{ error: <the prazo error's code>, message }`. */
  readonly body: DeadlineErrorBody;
  /** The dependency failure recognised in the error. */
  readonly failure: DependencyFailure;
}

/**
 * The `Retry-After` of a pushback, in seconds: fixed, or what is left of `deadline` (at least 1, at
 * most a day).
 */
function retryAfterSeconds(deadline: Deadline | undefined, settings: PushbackSettings): number {
  if (settings.retryAfterS !== undefined) return settings.retryAfterS;
  if (deadline === undefined) return 1;
  const left = Math.ceil(deadline.remainingMs() / 1000);
  if (!(left > 1)) return 1;
  return left < MAX_RETRY_AFTER_S ? left : MAX_RETRY_AFTER_S;
}

/**
 * The pushback answer to a handler's `error` when it is a dependency's failure (SPEC X6), else
 * `undefined` (answer it as you would any error). `deadline` is the request's (for `Retry-After`).
 * What prazo's middlewares answer; for any other server, write it yourself:
 *
 * @example
 * const answer = pushbackAnswer(error, { deadline: req.deadline });
 * if (answer) { res.writeHead(answer.status, { ...answer.headers, 'content-type': 'application/json' }); res.end(JSON.stringify(answer.body)); }
 */
export function pushbackAnswer(
  error: unknown,
  options: PushbackSettings & { readonly deadline?: Deadline | undefined } = {},
): PushbackAnswer | undefined {
  // Values checked too, not only keys: a `retryAfterS` of -1, 1.5 or NaN would be written as the
  // header as it is, and a `deadline` that is not one would throw a TypeError mid-answer.
  readOptions('pushbackAnswer', PUSHBACK_ANSWER_OPTIONS, options);
  const failure = dependencyFailureOf(error);
  if (failure === undefined) return undefined;
  const status = failure.kind === 'timeout' ? PUSHBACK_STATUS.timeout : PUSHBACK_STATUS.unavailable;
  return {
    status,
    headers: {
      [PUSHBACK_HEADER]: DO_NOT_RETRY,
      'retry-after': String(retryAfterSeconds(options.deadline, options)),
      'cache-control': 'no-store',
    },
    body: { error: failure.error.code, message: failure.error.message },
    failure,
  };
}
