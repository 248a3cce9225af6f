import type { Clock } from '../clock/clock.js';
import type { TimerQueue } from '../clock/timer-queue.js';
import type { Deadline, HeaderFormat } from '../deadline/deadline.js';
import type { HedgePolicy } from '../hedge/policy.js';
import { type CheckContext, type OptionSpec, option, type Report } from '../options/declare.js';
import type { Listeners } from './events.js';
import type { AttemptTrace, TraceAttributes } from './trace.js';
import type { AttemptKind, ConfigVersion, ResultVerdict } from './types.js';

/**
 * What the executor and an integration that carries attempts itself (prazo/http's undici handlers)
 * agree on: the executor owns the whole call (its deadline, D4, throttle, limit, budget, hedging,
 * retries, events); the integration supplies a {@link Transport} that starts an attempt with its
 * slice, judges what it answered, sets a loser aside and delivers the end. Nothing is subclassed or
 * looked up behind the integration's back: it reaches an executor with {@link executorOf} and opens
 * a call with `openCall` (dependency.ts, which `execute` goes through too).
 */

/**
 * What the executor plans one dependency's calls with, as an integration may read it: fixed for a
 * call once it starts (an update makes a new one for later calls).
 */
export interface ExecutorPlan {
  readonly name: string;
  readonly clock: Clock;
  /** The dependency's p99, in ms: an attempt with less time left is not started (SPEC D4, R6). */
  readonly p99Ms: number;
  /** The per-attempt timeout, ceil(p99 × slack), in ms (SPEC C1). */
  readonly attemptTimeoutMs: number;
  /** The calibrated connect timeout, in ms (SPEC C2). */
  readonly connectTimeoutMs: number;
  /** The deadline of a call given none outside any ambient one, in ms (SPEC D3). */
  readonly defaultDeadlineMs: number;
  /** Honour a server's pushback (SPEC X6). */
  readonly pushback: boolean;
  readonly random: () => number;
  readonly hedge: HedgePolicy | undefined;
  /**
   * The deadline headers an attempt carries downstream (the dependency's `headerFormat`), written by
   * the deadline's one writer (`writeDeadlineHeaders`); undefined: the default (`x-deadline-epoch-ms`).
   */
  readonly headerFormat: HeaderFormat | undefined;
  /** The dependency's listeners (an integration's own events, such as an instance ejected, go here). */
  readonly events: Listeners;
}

/**
 * One attempt as the executor slices it: what the transport starts, and how it reports back. The
 * same object is the {@link AttemptContext} an `execute` operation receives.
 */
export interface AttemptSlice {
  readonly kind: AttemptKind;
  /** 1 for the original, 2.. for retries and hedges, in start order. */
  readonly attempt: number;
  /** Monotonic ms (the plan's clock) at which the attempt started. */
  readonly startedAt: number;
  /**
   * This attempt's limit from `startedAt`, in ms: min(the plan's `attemptTimeoutMs`, remaining
   * deadline) (SPEC R6); the `AttemptContext`'s `timeoutMs`, by the same name.
   */
  readonly timeoutMs: number;
  /** min(the calibrated connect timeout, `timeoutMs`) (SPEC C2). */
  readonly connectTimeoutMs: number;
  /** True when the remaining deadline, not the attempt timeout, sets this attempt's limit. */
  readonly byDeadline: boolean;
  /** The call's deadline (the attempt's own ends at `startedAt + timeoutMs`, or earlier). */
  readonly callDeadline: Deadline;
  readonly dependency: string;
  readonly clock: Clock;
  /** The dependency's queue of calibrated attempt bounds: one clock timer for all of them. */
  readonly timers: TimerQueue | undefined;
  /** Aborts when the attempt must stop (read lazily: an unread signal costs nothing). */
  readonly signal: AbortSignal;
  /** Its trace, when the call is traced (prazo/otel): `resume` for work started from a callback. */
  readonly trace: AttemptTrace | undefined;
  /** True once the attempt reported its end or was cancelled. */
  readonly done: boolean;
  /** The instant its end arrived, when the transport read the clock at that moment (else NaN). */
  endedAt: number;
  /**
   * Reports the attempt's end, once: `ok` with a value (judged by `classify`), or the error;
   * `timedOut` when a bound of the transport's own ended it. False when it was already over (a value
   * is then handed to `discard`).
   */
  report(ok: boolean, value: unknown, timedOut?: boolean): boolean;
  /** Gives the concurrency limit's slot back once the attempt is over on the wire (idempotent). */
  releasePermit(): void;
  /** A timer of the transport fired `lateMs` past its instant (a `timer-late` event). */
  timerLate(lateMs: number): void;
}

/** What a transport makes of one slice: started once by the executor, halted if it cancels it. */
export interface Carrier {
  /** The instance it goes to, when the dependency is several (events, metrics). */
  readonly instance: string | undefined;
  start(): void;
  /** The executor ended the attempt (a copy won, the caller gave up, a pushback): stop its work. */
  halt(reason: unknown): void;
}

/** How an integration carries a call's attempts and delivers its end. */
export interface Transport<T, C extends Carrier = Carrier> {
  /** The attempt `slice` describes, not started yet (its instance picked, if any). */
  attempt(slice: AttemptSlice): C;
  /** The verdict on a value an attempt answered with (an HTTP status); undefined: a success. */
  classify(value: T): ResultVerdict | undefined;
  /** A failed answer kept while the call decides (a 503 paused while its hedge runs). */
  hold(value: T): void;
  /**
   * An answer that will not be delivered (a retried 503, a loser): release it. `needed`: the call's
   * retry now waits for a slot of the concurrency limit, which this answer holds until it is
   * released on the wire: release it promptly (a graceful release, such as draining a body, may not
   * take long).
   */
  discard(value: T, needed?: boolean): void;
  /** The call's end, once: the winning value, or the error. */
  deliver(ok: boolean, value: unknown): void;
  /** `carrier`'s attempt ended (heard before the executor decides what follows). */
  ended?(carrier: C, ok: boolean, value: unknown, timedOut: boolean): void;
  /** `carrier`'s attempt was cancelled by the executor (heard before the executor records it). */
  cancelled?(carrier: C): void;
  /** `carrier`'s attempt lost the race after `latencyMs`; it is cancelled next. */
  lost?(carrier: C, latencyMs: number): void;
  /** For the call's trace: what the transport knows of the request. Asked only when traced. */
  traceRequest?(): TraceAttributes | undefined;
  /** For a trace: what the transport knows of a value (an HTTP status). Asked only when traced. */
  traceResult?(value: T): TraceAttributes | undefined;
}

/** What a call is opened with. */
export interface CallTerms {
  /** The call's own deadline (a `Deadline`, or ms from now): capped by the ambient one. */
  readonly deadline?: Deadline | number | undefined;
  /** A deadline taken as it is (a request an interceptor above sends again keeps its call's). */
  readonly continued?: Deadline | undefined;
  /**
   * A deadline the call never runs past, whichever it resolves (a caller's own deadline header the
   * transport read off the request: the earliest deadline known travels, SPEC D5).
   */
  readonly ceiling?: Deadline | undefined;
  /** The default when there is neither, in ms. Default: the plan's. */
  readonly defaultDeadlineMs?: number | undefined;
  /** May be sent more than once (SPEC R5). */
  readonly idempotent: boolean;
  /** The idempotency key every attempt carries; a key makes the call repeatable. */
  readonly key?: string | undefined;
  readonly retryResponseTimeout?: boolean | undefined;
}

/** An open call: `begin` runs the plan; `abandon` is the caller giving up. */
export interface Call {
  /** The deadline the executor resolved for the call. */
  readonly deadline: Deadline;
  readonly idempotencyKey: string | undefined;
  /** True once the call's end was delivered. */
  readonly settled: boolean;
  /** Runs the plan from `now` (the plan clock's reading at the call's start). */
  begin(now: number): void;
  /** The caller gave up: every attempt stops, the call ends with `reason`. */
  abandon(reason: unknown): void;
  /**
   * The transport sends no new attempt (its client is closing): the attempt in flight finishes, no
   * retry or hedge follows; a call between attempts ends now with what it holds, else `reason`.
   */
  wrapUp(reason: unknown): void;
}

/** Whoever plans with an executor besides the executor itself (prazo/http's phase timeouts). */
export interface PlanFollower {
  /** What is wrong with `next` for this follower (an update with any problem is refused whole). */
  check(next: ExecutorPlan): readonly string[];
  /** The executor plans with `next` from now on (calls in flight keep theirs). */
  follow(next: ExecutorPlan): void;
}

/** An update validated and ready: `commit()` makes it, and cannot fail. */
export interface PreparedUpdate {
  commit(): void;
}

/**
 * An executor made by `createDependency`, as an integration drives it. Its tracer is its plan's
 * `events.tracer` (shared by every version of the plan): prazo/otel installs one there.
 */
export interface Executor {
  /** The plan a call starting now runs with. */
  readonly plan: ExecutorPlan;
  /** Follows the executor's updates from now on (held weakly: a follower gone stops following). */
  follow(follower: PlanFollower): void;
  /**
   * Validates an update (every problem in one `InvalidOptionsError`, its own and its followers'),
   * changing nothing; `version` labels the settings. prazo/config applies one file to many
   * executors: all are prepared, then all committed.
   */
  prepare(changes: unknown, version?: ConfigVersion): PreparedUpdate;
}

/** The key an executor is reached by on its dependency object: this copy of prazo's only. */
export const EXECUTOR: unique symbol = Symbol('prazo.executor');

/** `dependency`'s executor, or undefined for an object that is not an executor made by this copy. */
export function executorOf(dependency: unknown): Executor | undefined {
  if (dependency === null || typeof dependency !== 'object') return undefined;
  return (dependency as { [EXECUTOR]?: Executor })[EXECUTOR];
}

/**
 * The `dependency` option of an integration that can run its calls through an executor (gRPC's
 * interceptor, the stores), declared once: an executor made with `createDependency`. `D` is its
 * type, `Dependency` (dependency.ts), given by the integration: this file stays below that one.
 */
export const dependencyOption = <D extends object>(): OptionSpec<D, false, false> =>
  option.value<D>('an executor made with createDependency()', (v) => executorOf(v) !== undefined);

/**
 * The cross-field check of such an integration's options: beside a `dependency`, the options the
 * executor owns (`owned`: its p99, throttle, ...) are refused, and a `name` or a `clock` given must be
 * the executor's (its name is in every error and event, its clock times the calls).
 */
export function besideDependency(
  owned: readonly string[],
): (values: unknown, report: Report, context: CheckContext) => void {
  return (_values, report, { given, valid }) => {
    if (given.dependency === undefined || !valid('dependency')) return;
    for (const key of owned) {
      if (given[key] !== undefined)
        report(key, "is the executor's: `dependency` is given, set it with createDependency(), not here");
    }
    const { name, clock } = executorOf(given.dependency)!.plan;
    if (given.name !== undefined && given.name !== name)
      report('name', `(${String(given.name)}) differs from the dependency's (${name})`);
    if (given.clock !== undefined && given.clock !== clock)
      report('clock', "differs from the dependency's: the executor's clock times its calls");
  };
}
