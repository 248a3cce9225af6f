import {
  InterceptingCall,
  type InterceptingListener,
  type Interceptor,
  type InterceptorOptions,
  type Listener,
  Metadata,
  type NextCall,
  type Requester,
  type StatusObject,
  status,
} from '@grpc/grpc-js';
import { type Clock, MAX_TIMER_DELAY_MS } from '../clock/clock.js';
import { systemClock } from '../clock/system.js';
import { currentDeadline } from '../deadline/ambient.js';
import { HEADER_FORMAT_OPTIONS, type HeaderFormat } from '../deadline/deadline.js';
import { refusalOf } from '../deadline/fits.js';
import type { Dependency } from '../dependency/dependency.js';
import { type DependencyListener, Listeners } from '../dependency/events.js';
import { besideDependency, dependencyOption, executorOf } from '../dependency/transport.js';
import type { Disposable } from '../dependency/types.js';
import { DeadlineExceededError } from '../errors/deadline.js';
import { defineOptions, type OptionsOf, option } from '../options/declare.js';
import { readOptions } from '../options/validator.js';
import type { RandomSource } from '../retry/backoff.js';
import { readPushback } from '../retry/pushback.js';
import { THROTTLE_OPTIONS } from '../throttle/options.js';
import { type AdaptiveThrottle, type ThrottleState, throttleFrom } from '../throttle/throttle.js';
import {
  callersLeftMs,
  channelDeadline,
  grpcDeadlineEpochMs,
  grpcHeaderFormat,
  isGrpcMetadataKey,
  putDeadlineMetadata,
} from './deadline.js';
import { deadlineStatus, explainStatus, NOT_ACCEPTED, refusedStatus } from './status.js';
import { GrpcCall } from './transport.js';

/** The options the executor owns: refused beside `dependency`. */
const besideExecutor = besideDependency(['p99Ms', 'throttle', 'random', 'deadlineHeaders']);

const NOT_A_KEY =
  'not a gRPC metadata key (letters, digits, "-", "_", ".", not ending in "-bin"): grpc-js would refuse it';

/** Options of {@link deadlineInterceptor}, declared once. */
export const DEADLINE_INTERCEPTOR_OPTIONS = defineOptions(
  {
    /**
     * The method's p99 latency in ms: a call with less time left fails at once with
     * `DEADLINE_EXCEEDED` (cause: DeadlineInsufficientError) without touching the channel (SPEC D4).
     * Default 0 (only a deadline already gone is refused); [0, 2^31-1].
     */
    p99Ms: option.number({ default: 0, unit: 'ms', min: 0, max: MAX_TIMER_DELAY_MS }),
    /** The dependency's name in errors. Default: the method path (`/pkg.Service/Method`). */
    name: option.string(),
    /**
     * Adaptive throttling of this client's calls (docs/throttling.md, the executor's own
     * `AdaptiveThrottle` and options): once most recent calls end in UNAVAILABLE, DEADLINE_EXCEEDED,
     * RESOURCE_EXHAUSTED, INTERNAL, UNKNOWN or DATA_LOSS (without the server's pushback), a new call is
     * refused locally with probability max(0, (requests − k × accepts) / (requests + 1)), at most
     * `maxProbability`: UNAVAILABLE at once, cause ThrottledError, nothing reaches the channel. One
     * throttle per interceptor (one client = one dependency). `false` switches it off. Default on
     * (`true`): k 2, a 1 s window, at most 90% refused, nothing refused under 10 requests in the window.
     */
    throttle: option.toggle(THROTTLE_OPTIONS),
    /** Uniform [0, 1) numbers for the throttle's spreading. Default `Math.random`; inject one for deterministic tests. */
    random: option.fn<RandomSource>(),
    /** Where time comes from (wall clock for the grpc-js deadline). Default: the system clock. */
    clock: option.clock(),
    /**
     * Which deadline headers a call with a deadline carries beside gRPC's own `grpc-timeout` (SPEC D1,
     * D5, D8), the deadline's own declaration: `epochMs` the absolute header's name (a gRPC metadata
     * key: letters, digits, `-`, `_`, `.`, not ending in `-bin`), or `false` for none; `envoy: true`
     * adds `x-envoy-expected-rq-timeout-ms` (the ms left when the call starts, never below 1);
     * `grpcTimeout` changes nothing (grpc-js always sends it, from the call's deadline). A value the
     * caller set itself under one of these names is read (the call ends no later) and replaced by the
     * call's. Default `{ epochMs: 'x-deadline-epoch-ms' }`. With `dependency`, refused: the
     * executor's `headerFormat` is used (set it with createDependency()).
     */
    deadlineHeaders: option.nested(HEADER_FORMAT_OPTIONS),
    /**
     * Runs each call through this executor (made with `createDependency`), as prazo/http does: it owns
     * the call's deadline (the call's own, capped by the ambient one, else its `defaultDeadlineMs`;
     * never later than the caller's own deadline metadata), D4 with its p99, its throttle, its
     * concurrency limit (a call may wait in its queue), its latency recorder, its events and traces.
     * One attempt per call, never retried nor hedged by it (grpc-js's own retries run below): the
     * deadline sent is that attempt's end, min(the call's deadline, start + ceil(p99 × slack)), its
     * deadline headers in the dependency's `headerFormat`. Exclusive with
     * `p99Ms`, `throttle`, `random` and `deadlineHeaders` (the executor's own); `name` and `clock`, if
     * given, must be the executor's. Default: none (the interceptor's own thin path).
     */
    dependency: dependencyOption<Dependency>(),
  },
  (values, report, context) => {
    besideExecutor(values, report, context);
    // A header name HTTP takes but gRPC metadata does not would throw when the call starts: refused now.
    const { given, valid } = context;
    if (given.dependency !== undefined) {
      if (!valid('dependency')) return;
      const name = executorOf(given.dependency)!.plan.headerFormat?.epochMs;
      if (typeof name === 'string' && !isGrpcMetadataKey(name))
        report('dependency', `has headerFormat.epochMs ${JSON.stringify(name)}, ${NOT_A_KEY}`);
    } else if (valid('deadlineHeaders')) {
      const name = values.deadlineHeaders?.epochMs;
      if (typeof name === 'string' && !isGrpcMetadataKey(name))
        report(['deadlineHeaders', 'epochMs'], `(${JSON.stringify(name)}) is ${NOT_A_KEY}`);
    }
  },
);

export type DeadlineInterceptorOptions = OptionsOf<typeof DEADLINE_INTERCEPTOR_OPTIONS>;

/**
 * What {@link deadlineInterceptor} returns: a grpc-js interceptor that also says where its throttle
 * stands, and whose `events` emit the executor's `throttled` events (so
 * `instrumentPrazo().addDependency(interceptor.events)` counts its refusals as any dependency's).
 * With the `dependency` option both are that executor's: `events` is the dependency itself (every
 * event it emits, and its traces once prazo/otel instruments it), `throttling()` its throttle's.
 */
export interface DeadlineInterceptor extends Interceptor {
  /** The throttle's window counts and the probability a new call is refused with now; undefined when off. */
  throttling():
    | { readonly requests: number; readonly accepts: number; readonly probability: number }
    | undefined;
  /** The dependency's events (`throttled`: `{ type, dependency, requests, accepts, probability }`), by its name. */
  readonly events: {
    /** The `name` option, else 'grpc' (with `dependency`: the dependency's name). */
    readonly name: string;
    on(listener: DependencyListener): Disposable;
  };
}

/**
 * A grpc-js client interceptor that carries the ambient deadline onto the call (SPEC D1, D4, D5).
 *
 * With `dependency` (an executor made by `createDependency`), each call is one call of that executor,
 * opened through its public seam as prazo/http's are (src/grpc/transport.ts): the executor resolves
 * the deadline (the call's `deadline` option, never past the ambient one, else its
 * `defaultDeadlineMs`; never past the caller's own deadline metadata, its `ceiling`) and owns D4 (its
 * p99), its throttle, its concurrency limit (a call may wait in its queue; its channel call then
 * starts later), its recorder, events and traces. One attempt, never retried nor hedged by it; the
 * deadline sent is that attempt's end, min(the call's deadline, start + ceil(p99 × slack)). A call
 * refused before it starts touches no channel: `DEADLINE_EXCEEDED`
 * (cause DeadlineInsufficientError), or `UNAVAILABLE` (cause ThrottledError or
 * ConcurrencyLimitError). A `DEADLINE_EXCEEDED` that ends the attempt has the timeout as its cause
 * (DeadlineExceededError, or ResponseTimeoutError when the attempt's timeout, not the deadline, ran
 * out). Without it, the interceptor keeps a thin path of its own:
 * - the call's deadline becomes the earliest of its own, `currentDeadline()` and the caller's own
 *   deadline metadata (`x-deadline-epoch-ms`, a `grpc-timeout` key, the `deadlineHeaders` names:
 *   garbage ignored, as prazo/http reads a caller's header), so gRPC's native `grpc-timeout` and the
 *   deadline headers, which replace the caller's, carry what is left of the request being served;
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
 * // Through an executor: its p99, throttle, concurrency limit, recorder and events.
 * const inventory = createDependency({ name: 'inventory', p99Ms: 80, concurrencyLimit: { maxInFlight: 20 } });
 * const stock = new Inventory(address, credentials.createInsecure(), {
 *   interceptors: [deadlineInterceptor({ dependency: inventory })],
 * });
 */
export function deadlineInterceptor(options: DeadlineInterceptorOptions = {}): DeadlineInterceptor {
  const o = readOptions('deadlineInterceptor', DEADLINE_INTERCEPTOR_OPTIONS, options);
  if (o.dependency !== undefined) return executorInterceptor(o.dependency);
  const { p99Ms, name } = o;
  const clock = o.clock ?? systemClock;
  const format = grpcHeaderFormat(o.deadlineHeaders);
  // One throttle per interceptor: a client (one channel, one backend) is one dependency, whatever
  // its methods. Off, nothing is counted.
  const throttle = throttleFrom(o.throttle, clock, o.random);
  const listeners = new Listeners();
  const label = name ?? 'grpc';
  const count =
    throttle === undefined
      ? undefined
      : (received: StatusObject): void => {
          if (received.code === status.CANCELLED) return; // the caller's own: says nothing of the server
          const failed = NOT_ACCEPTED.has(received.code);
          const told = failed ? readPushback(received.metadata) : undefined;
          throttle.count(clock.now(), !failed || (told !== undefined && !told.retry));
        };

  const path: ThinPath = { p99Ms, name, format, clock, throttle, listeners, label, count };
  const interceptor = (callOptions: InterceptorOptions, nextCall: NextCall): InterceptingCall => {
    // The call's own deadline capped by the ambient one, read here, in the caller's context.
    const own = grpcDeadlineEpochMs(callOptions.deadline);
    const ambient = currentDeadline();
    const ambientEpoch = ambient === undefined ? undefined : Math.floor(ambient.epochMs());
    const known =
      ambientEpoch !== undefined && (own === undefined || ambientEpoch < own) ? ambientEpoch : own;
    const call = new ThinCall(path, callOptions, nextCall, own, known);
    return new InterceptingCall(call, call.requester());
  };
  const events = Object.freeze({
    name: label,
    on: (listener: DependencyListener) => listeners.add(listener),
  });
  return Object.assign(interceptor, {
    throttling: (): ThrottleState | undefined => throttle?.state(clock.now()),
    events,
  }) as DeadlineInterceptor;
}

/**
 * The interceptor of `deadlineInterceptor({ dependency })`: each call one executor call over the
 * executor's public seam (`openCall`, in transport.ts's {@link GrpcCall}), its deadline read in the
 * caller's context (the ambient one is read there), opened and begun when grpc-js starts it (with the
 * caller's metadata, whose own deadline is the call's ceiling). Its throttle and events are the
 * dependency's.
 */
function executorInterceptor(dependency: Dependency): DeadlineInterceptor {
  const executor = executorOf(dependency)!;
  const interceptor = (callOptions: InterceptorOptions, nextCall: NextCall): InterceptingCall => {
    const call = new GrpcCall(executor.plan, callOptions, nextCall); // the plan in force when the call starts
    return new InterceptingCall(call, call.requester());
  };
  return Object.assign(interceptor, {
    throttling: () => dependency.throttling(),
    events: dependency,
  }) as DeadlineInterceptor;
}

/** What every call of one thin-path interceptor shares. */
interface ThinPath {
  readonly p99Ms: number;
  readonly name: string | undefined;
  readonly format: HeaderFormat;
  readonly clock: Clock;
  readonly throttle: AdaptiveThrottle | undefined;
  readonly listeners: Listeners;
  readonly label: string;
  readonly count: ((received: StatusObject) => void) | undefined;
}

type ChannelCall = ReturnType<NextCall>;

/**
 * One call on the thin path: the call grpc-js's `InterceptingCall` holds below the interceptor, and
 * the requester that decides it when grpc-js starts it, once the caller's metadata is known. Its
 * deadline is the earliest of the call's own, the ambient one and the caller's own deadline metadata
 * (`callersLeftMs`: `x-deadline-epoch-ms` and the format's names, SPEC D1, D5, as prazo/http reads a
 * caller's header). Then D4 and the throttle; a refused call answers its status without creating any
 * channel call. Otherwise the channel call is created with that deadline (grpc-js fixes it when it
 * creates the call, and writes `grpc-timeout` from it; one farther than grpc-js carries, about 24.8
 * days, or endless, is none to it: `channelDeadline`) and started with the deadline headers in the
 * `deadlineHeaders` format (`putDeadlineMetadata`: by default the absolute `x-deadline-epoch-ms`),
 * each replacing the caller's own. Until then grpc-js's `InterceptingCall` holds the caller's message
 * and half-close itself, and this call holds a `startRead` and a cancel.
 */
class ThinCall {
  readonly #path: ThinPath;
  readonly #options: InterceptorOptions;
  readonly #nextCall: NextCall;
  /** The call's own deadline, epoch ms (undefined: none, or unusable). */
  readonly #own: number | undefined;
  /** The earlier of its own and the ambient one, epoch ms. */
  readonly #known: number | undefined;
  #channel: ChannelCall | undefined;
  #readPending = false;
  /** The caller cancelled before grpc-js started the call: the status it gets when it does. */
  #cancelled: StatusObject | undefined;

  constructor(
    path: ThinPath,
    options: InterceptorOptions,
    nextCall: NextCall,
    own: number | undefined,
    known: number | undefined,
  ) {
    this.#path = path;
    this.#options = options;
    this.#nextCall = nextCall;
    this.#own = own;
    this.#known = known;
  }

  requester(): Requester {
    return { start: (metadata, listener, next) => this.#begin(metadata, listener, next) };
  }

  #begin(
    metadata: Metadata,
    listener: InterceptingListener,
    next: Parameters<NonNullable<Requester['start']>>[2],
  ): void {
    const cancelled = this.#cancelled;
    if (cancelled !== undefined) {
      this.#refuse(listener, cancelled);
      return;
    }
    const { p99Ms, name, format, clock, throttle, listeners, label, count } = this.#path;
    const dependency = name ?? this.#options.method_definition.path;
    const epochNow = clock.epochNow();
    const callersMs = callersLeftMs(metadata, format, epochNow);
    const known = this.#known;
    const epoch =
      callersMs < Number.POSITIVE_INFINITY && (known === undefined || epochNow + callersMs < known)
        ? Math.floor(epochNow + callersMs)
        : known;
    if (epoch !== undefined) {
      const refused = refusalOf({ name: dependency, p99Ms }, Math.max(0, epoch - epochNow));
      if (refused !== undefined) {
        this.#refuse(listener, deadlineStatus(refused));
        return;
      }
    }
    // After D4 (as in the executor): a call refused for its deadline says nothing of the server.
    if (throttle !== undefined) {
      const now = clock.now();
      if (!throttle.admit(now)) {
        const error = throttle.refusal(dependency, now);
        const { requests, accepts, probability } = error;
        if (listeners.active)
          listeners.emit({ type: 'throttled', dependency: label, requests, accepts, probability });
        this.#refuse(listener, refusedStatus(error));
        return;
      }
    }
    let onDeadline: (() => DeadlineExceededError) | undefined;
    const options = this.#options;
    // A channel call grpc-js cannot create (a closed channel) throws to the caller, as it would
    // without the interceptor.
    if (epoch === undefined) this.#channel = this.#nextCall(options);
    else {
      // A deadline farther than grpc-js carries (or endless) is none to it; the headers still carry it.
      const far = channelDeadline(epoch - epochNow, epochNow) === Number.POSITIVE_INFINITY;
      this.#channel = this.#nextCall(
        far
          ? { ...options, deadline: Number.POSITIVE_INFINITY }
          : epoch === this.#own
            ? options
            : { ...options, deadline: epoch },
      );
      const started = clock.now();
      onDeadline = () =>
        new DeadlineExceededError({ dependency, elapsedMs: clock.now() - started, deadlineEpochMs: epoch });
      putDeadlineMetadata(metadata, format, epoch - epochNow, epochNow);
    }
    // grpc-js's InterceptingCall now calls `start` below, then sends what it held.
    next(metadata, explain(dependency, onDeadline, count));
  }

  /** Answers `failure` without creating any channel call: nothing reaches the network. */
  #refuse(listener: InterceptingListener, failure: StatusObject): void {
    this.#channel = NOT_CALLED;
    process.nextTick(() => listener.onReceiveStatus(failure));
  }

  // ── the call grpc-js's InterceptingCall holds below the interceptor ────────────────────────────

  /** Called by grpc-js's InterceptingCall from `#begin`'s `next`: the channel call exists. */
  start(metadata: Metadata, listener: Partial<InterceptingListener>): void {
    const channel = this.#channel!;
    channel.start(metadata, listener);
    if (this.#readPending) {
      this.#readPending = false;
      channel.startRead();
    }
  }

  cancelWithStatus(code: number, details: string): void {
    const channel = this.#channel;
    if (channel !== undefined) channel.cancelWithStatus(code, details);
    else this.#cancelled ??= { code, details, metadata: new Metadata() };
  }

  getPeer(): string {
    return this.#channel?.getPeer() ?? '';
  }

  // biome-ignore lint/suspicious/noExplicitAny: grpc-js's message context and messages are untyped
  sendMessageWithContext(context: any, message: any): void {
    this.#channel?.sendMessageWithContext(context, message);
  }

  // biome-ignore lint/suspicious/noExplicitAny: grpc-js's messages are untyped
  sendMessage(message: any): void {
    this.#channel?.sendMessage(message);
  }

  startRead(): void {
    const channel = this.#channel;
    if (channel === undefined) this.#readPending = true;
    else channel.startRead();
  }

  halfClose(): void {
    this.#channel?.halfClose();
  }

  getAuthContext(): ReturnType<ChannelCall['getAuthContext']> {
    return this.#channel?.getAuthContext() ?? null;
  }
}

/**
 * The thin path's listener: names what the status means as its `cause` (SPEC D6, X6;
 * `explainStatus`, the same for a call through an executor), after the throttle counted it.
 */
function explain(
  dependency: string,
  onDeadline: (() => DeadlineExceededError) | undefined,
  count: ((received: StatusObject) => void) | undefined,
): Listener {
  return {
    onReceiveStatus: (received, next) => {
      // Counted when the outcome is known: a unary call's or a stream's status, whatever its kind.
      count?.(received);
      next(explainStatus(received, dependency, onDeadline));
    },
  };
}

/** Stands in for the channel call when a call is refused: nothing reaches the network. */
const NOT_CALLED: ChannelCall = {
  cancelWithStatus: () => undefined,
  getPeer: () => 'not-called',
  start: () => undefined,
  sendMessageWithContext: () => undefined,
  sendMessage: () => undefined,
  startRead: () => undefined,
  halfClose: () => undefined,
  getAuthContext: () => null,
};
