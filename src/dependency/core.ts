import type { RetryBudget } from '../budget/budget.js';
import type { Clock } from '../clock/clock.js';
import type { TimerQueue } from '../clock/timer-queue.js';
import type { HeaderFormat } from '../deadline/deadline.js';
import type { HedgePolicy } from '../hedge/policy.js';
import type { LatencySource } from '../latency/types.js';
import type { ConcurrencyLimiter } from '../limit/limiter.js';
import type { BackoffOptions, RandomSource } from '../retry/backoff.js';
import type { ClassifyOptions, FailureVerdict } from '../retry/classify.js';
import type { AdaptiveThrottle } from '../throttle/throttle.js';
import type { Listeners } from './events.js';
import type { CallTracer } from './trace.js';
import type { ConfigVersion } from './types.js';

/** Classifies a thrown error; the default is `classifyFailure` (src/retry). */
export type ErrorClassifier = (error: unknown, options: ClassifyOptions) => FailureVerdict;

/** Everything an execution needs from its dependency: resolved once, shared by every call. */
export interface DependencyCore {
  readonly name: string;
  /** The dependency's p99, in ms: an attempt with less time left is not started (SPEC D4, R6). */
  readonly p99Ms: number;
  readonly maxAttempts: number;
  /** Calibrated per-attempt response timeout, in ms (SPEC C1). */
  readonly responseMs: number;
  /** Calibrated connect timeout, in ms (SPEC C2). */
  readonly connectMs: number;
  readonly defaultDeadlineMs: number;
  readonly clock: Clock;
  readonly random: RandomSource;
  readonly backoff: BackoffOptions;
  readonly budget: RetryBudget;
  readonly recorder: LatencySource;
  readonly hedge: HedgePolicy | undefined;
  /** The concurrency limit attempts take a slot of before they are sent (SPEC X7), when there is one. */
  readonly limiter: ConcurrencyLimiter | undefined;
  /**
   * Attempts holding a slot of `limiter` wait past the calibrated `responseMs`, up to the deadline,
   * when a response timeout would not be retried (`concurrencyLimit.patience`, SPEC C6).
   */
  readonly patience: boolean;
  /** The adaptive throttle calls are admitted by, unless it is switched off. */
  readonly throttle: AdaptiveThrottle | undefined;
  readonly retryResponseTimeout: boolean;
  /** Honour a server's pushback (SPEC X6): an answer asking not to be retried ends the call. */
  readonly pushback: boolean;
  readonly classifyError: ErrorClassifier;
  readonly headerFormat: HeaderFormat | undefined;
  readonly events: Listeners;
  /**
   * The bounds of attempts that run the calibrated `responseMs` (most of them: those not cut by the
   * deadline), behind one clock timer. Undefined when there is no such bound.
   */
  readonly attemptTimers: TimerQueue | undefined;
}

/**
 * Whoever plans with an executor's core besides the executor itself (prazo/http's `CurrentPlan`, which
 * derives its phase timeouts from it): asked before an update whether the new core suits it, and
 * handed the new core once the update is made. Held weakly: a client that is gone stops following.
 */
export interface CoreFollower {
  /** What is wrong with `next` for this follower (an update with any problem is refused whole). */
  check(next: DependencyCore): readonly string[];
  /** The executor plans with `next` from now on (calls in flight keep the core they started with). */
  follow(next: DependencyCore): void;
}

/** An update validated and ready: `commit()` makes it, and cannot fail. */
export interface PreparedUpdate {
  commit(): void;
}

/**
 * Validates an update of an executor (every problem in one `InvalidOptionsError`, its own and its
 * followers'), changing nothing; `version` labels the settings (prazo/config's watcher).
 */
export type PrepareUpdate = (changes: unknown, version?: ConfigVersion) => PreparedUpdate;

interface Internals {
  core: DependencyCore;
  readonly prepare: PrepareUpdate;
  readonly followers: Set<WeakRef<CoreFollower>>;
}

const executors = new WeakMap<object, Internals>();

/** Ties an executor to what its executions share and to its update (`createDependency` does it). */
export function registerCore(dependency: object, core: DependencyCore, prepare: PrepareUpdate): void {
  executors.set(dependency, { core, prepare, followers: new Set() });
}

/**
 * What an executor's executions share, for integrations that drive executions of their own (prazo/http's
 * calls): undefined for an object that is not an executor made by this copy of prazo.
 */
export function coreOf(dependency: object): DependencyCore | undefined {
  return executors.get(dependency)?.core;
}

/** Follows `dependency`'s updates from now on (a no-op for an object that is not an executor). */
export function followCore(dependency: object, follower: CoreFollower): void {
  executors.get(dependency)?.followers.add(new WeakRef(follower));
}

/** The live followers of an executor (dead ones are dropped on the way). */
export function followersOf(dependency: object): CoreFollower[] {
  const internals = executors.get(dependency);
  if (internals === undefined) return [];
  const out: CoreFollower[] = [];
  for (const ref of internals.followers) {
    const follower = ref.deref();
    if (follower === undefined) internals.followers.delete(ref);
    else out.push(follower);
  }
  return out;
}

/** The executor's core is `core` from now on (its update's commit). */
export function replaceCore(dependency: object, core: DependencyCore): void {
  const internals = executors.get(dependency);
  if (internals !== undefined) internals.core = core;
}

/**
 * Validates an update of an executor made by this copy of prazo without making it (prazo/config applies
 * one file to many executors: all are prepared, then all committed). Undefined for another object.
 */
export function prepareUpdate(
  dependency: object,
  changes: unknown,
  version?: ConfigVersion,
): PreparedUpdate | undefined {
  return executors.get(dependency)?.prepare(changes, version);
}

/**
 * Traces `dependency`'s calls with `tracer` from now on (undefined: no more): prazo/otel's seam
 * (src/dependency/trace.ts). False for an object that is not an executor made by this copy of prazo.
 */
export function setTracer(dependency: object, tracer: CallTracer | undefined): boolean {
  const internals = executors.get(dependency);
  if (internals === undefined) return false;
  internals.core.events.tracer = tracer;
  return true;
}

/** The tracer `dependency`'s calls are traced with now, if any. */
export function tracerOf(dependency: object): CallTracer | undefined {
  return executors.get(dependency)?.core.events.tracer;
}
