import {
  InterceptingCall,
  type Interceptor,
  type InterceptorOptions,
  type Listener,
  type NextCall,
  type Requester,
  type StatusObject,
  status,
} from '@grpc/grpc-js';
import { MAX_TIMER_DELAY_MS } from '../clock/clock.js';
import { systemClock } from '../clock/system.js';
import { currentDeadline } from '../deadline/ambient.js';
import { DeadlineHeaders } from '../deadline/constants.js';
import { refusalOf } from '../deadline/fits.js';
import { DeadlineExceededError } from '../errors/deadline.js';
import { DependencyFailedError } from '../errors/dependency.js';
import { defineOptions, type OptionsOf, option } from '../options/declare.js';
import { readOptions } from '../options/validator.js';
import { readPushback } from '../retry/pushback.js';
import { grpcDeadlineEpochMs } from './epoch.js';
import { deadlineStatus } from './status.js';

/** Options of {@link deadlineInterceptor}, declared once. */
export const DEADLINE_INTERCEPTOR_OPTIONS = defineOptions({
  /**
   * The method's p99 latency in ms: a call with less time left fails at once with
   * `DEADLINE_EXCEEDED` (cause: DeadlineInsufficientError) without touching the channel (SPEC D4).
   * Default 0 (only a deadline already gone is refused); [0, 2^31-1].
   */
  p99Ms: option.number({ default: 0, unit: 'ms', min: 0, max: MAX_TIMER_DELAY_MS }),
  /** The dependency's name in errors. Default: the method path (`/pkg.Service/Method`). */
  name: option.string(),
  /** Where time comes from (wall clock for the grpc-js deadline). Default: the system clock. */
  clock: option.clock(),
});

export type DeadlineInterceptorOptions = OptionsOf<typeof DEADLINE_INTERCEPTOR_OPTIONS>;

/**
 * A grpc-js client interceptor that carries the ambient deadline onto the call (SPEC D1, D4, D5):
 * - the call's deadline becomes the earlier of its own and `currentDeadline()`, so gRPC's native
 *   `grpc-timeout` carries what is left of the request being served;
 * - with less than `p99Ms` left (or nothing), the call fails fast with `DEADLINE_EXCEEDED`, whose
 *   `cause` is a DeadlineInsufficientError, and no request leaves the process;
 * - a `DEADLINE_EXCEEDED` from grpc-js or the server gets a DeadlineExceededError as `cause`;
 * - a failure status (`UNAVAILABLE`, `INTERNAL`, `UNKNOWN`, `RESOURCE_EXHAUSTED`, `DATA_LOSS`) gets a
 *   DependencyFailedError as `cause` (its `pushback` says whether the server sent
 *   `grpc-retry-pushback-ms: -1`), so a handler that passes the error on is answered with a pushback
 *   by `withGrpcDeadline` or prazo/server (SPEC X6). It retries nothing itself: grpc-js's retries
 *   (a service config's `retryPolicy`) run below it and honour the pushback natively.
 *
 * @example
 * const client = new Echo('127.0.0.1:50051', credentials.createInsecure(), {
 *   interceptors: [deadlineInterceptor({ p99Ms: 80 })],
 * });
 */
export function deadlineInterceptor(options: DeadlineInterceptorOptions = {}): Interceptor {
  const o = readOptions('deadlineInterceptor', DEADLINE_INTERCEPTOR_OPTIONS, options);
  const { p99Ms, name } = o;
  const clock = o.clock ?? systemClock;

  return (callOptions: InterceptorOptions, nextCall: NextCall): InterceptingCall => {
    const dependency = name ?? callOptions.method_definition.path;
    const own = grpcDeadlineEpochMs(callOptions.deadline);
    const ambient = currentDeadline();
    const ambientEpoch = ambient === undefined ? undefined : Math.floor(ambient.epochMs());
    const epoch =
      ambientEpoch !== undefined && (own === undefined || ambientEpoch < own) ? ambientEpoch : own;
    if (epoch === undefined)
      return new InterceptingCall(nextCall(callOptions), explain(dependency, undefined));

    const remainingMs = Math.max(0, epoch - clock.epochNow());
    const refused = refusalOf({ name: dependency, p99Ms }, remainingMs);
    if (refused !== undefined) return new InterceptingCall(NOT_CALLED, refuse(deadlineStatus(refused)));
    const started = clock.now();
    const onDeadline = (): DeadlineExceededError =>
      new DeadlineExceededError({ dependency, elapsedMs: clock.now() - started, deadlineEpochMs: epoch });
    const next = nextCall(epoch === own ? callOptions : { ...callOptions, deadline: epoch });
    return new InterceptingCall(next, explain(dependency, onDeadline, epoch));
  };
}

/** A requester that never calls `next`: the status is delivered without any I/O. */
function refuse(failure: StatusObject): Requester {
  return {
    start: (_metadata, listener) => {
      process.nextTick(() => listener.onReceiveStatus?.(failure));
    },
    sendMessage: () => undefined,
    halfClose: () => undefined,
  };
}

/**
/**
 * The dependency's failure statuses (what HTTP calls a 5xx): a handler that fails with one of them has
 * a dependency that failed (SPEC X6), which prazo/grpc's and prazo/server's pushback read from the
 * attached `cause`.
 */
const FAILURE_CODES: ReadonlySet<number> = new Set([
  status.UNKNOWN,
  status.RESOURCE_EXHAUSTED,
  status.INTERNAL,
  status.UNAVAILABLE,
  status.DATA_LOSS,
]);

/**
 * Names what the status means as its `cause` (SPEC D6, X6): a DeadlineExceededError for
 * `DEADLINE_EXCEEDED` (when a deadline was in force), a DependencyFailedError for a failure status
 * (saying whether the dependency itself pushed back), so that a handler passing the error on is
 * answered with a pushback by prazo's servers. A status that already has a cause keeps it.
 *
 * With a deadline (`epoch`), it also sends it as an absolute `x-deadline-epoch-ms` beside grpc-js's
 * relative `grpc-timeout` (SPEC D1, D5): a receiver reads a relative timeout from when it *reads* the
 * call, so a busy receiver (or a slow network) stretches it by the transit; the absolute instant does
 * not stretch, and prazo's reader takes the earlier of the two. A value the caller set itself is left
 * as it is.
 */
function explain(
  dependency: string,
  onDeadline: (() => DeadlineExceededError) | undefined,
  epoch?: number,
): Requester {
  const listener: Listener = {
    onReceiveStatus: (received, next) => {
      if ('cause' in received) return next(received);
      if (received.code === status.DEADLINE_EXCEEDED && onDeadline !== undefined)
        return next(Object.assign({}, received, { cause: onDeadline() }));
      if (!FAILURE_CODES.has(received.code)) return next(received);
      const told = readPushback(received.metadata);
      const cause = new DependencyFailedError({
        dependency,
        grpcCode: received.code,
        pushback: told !== undefined && !told.retry,
      });
      next(Object.assign({}, received, { cause }));
    },
  };
  return {
    start: (metadata, _listener, next) => {
      if (epoch !== undefined && metadata.get(DeadlineHeaders.epochMs).length === 0)
        metadata.set(DeadlineHeaders.epochMs, String(Math.floor(epoch)));
      next(metadata, listener);
    },
  };
}

/** Stands in for the channel call when a call is refused: nothing reaches the network. */
const NOT_CALLED: ReturnType<NextCall> = {
  cancelWithStatus: () => undefined,
  getPeer: () => 'not-called',
  start: () => undefined,
  sendMessageWithContext: () => undefined,
  sendMessage: () => undefined,
  startRead: () => undefined,
  halfClose: () => undefined,
  getAuthContext: () => null,
};
