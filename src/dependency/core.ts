import type { RetryBudget } from '../budget/budget.js';
import type { TimerQueue } from '../clock/timer-queue.js';
import type { HeaderFormat } from '../deadline/deadline.js';
import type { LatencySource } from '../latency/types.js';
import type { ConcurrencyLimiter } from '../limit/limiter.js';
import type { BackoffOptions, RandomSource } from '../retry/backoff.js';
import type { ClassifyOptions, FailureVerdict } from '../retry/classify.js';
import type { AdaptiveThrottle } from '../throttle/throttle.js';
import type { CallTracer } from './trace.js';
import type { ExecutorPlan } from './transport.js';
import type { ConfigVersion } from './types.js';

/** Classifies a thrown error; the default is `classifyFailure` (src/retry). */
export type ErrorClassifier = (error: unknown, options: ClassifyOptions) => FailureVerdict;

/**
 * Everything an execution needs from its dependency: resolved once, shared by every call. What an
 * integration may read of it is {@link ExecutorPlan} (transport.ts); the rest is the executor's.
 */
export interface DependencyCore extends ExecutorPlan {
  readonly maxAttempts: number;
  readonly random: RandomSource;
  readonly backoff: BackoffOptions;
  readonly budget: RetryBudget;
  readonly recorder: LatencySource;
  /** The concurrency limit attempts take a slot of before they are sent (SPEC X7), when there is one. */
  readonly limiter: ConcurrencyLimiter | undefined;
  /**
   * Attempts holding a slot of `limiter` wait past the calibrated `attemptTimeoutMs`, up to the deadline,
   * when a response timeout would not be retried (`concurrencyLimit.patience`, SPEC C6).
   */
  readonly patience: boolean;
  /** The adaptive throttle calls are admitted by, unless it is switched off. */
  readonly throttle: AdaptiveThrottle | undefined;
  readonly retryResponseTimeout: boolean;
  readonly classifyError: ErrorClassifier;
  readonly headerFormat: HeaderFormat | undefined;
  /**
   * The bounds of attempts that run the calibrated `attemptTimeoutMs` (most of them: those not cut by the
   * deadline), behind one clock timer. Undefined when there is no such bound.
   */
  readonly attemptTimers: TimerQueue | undefined;
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
}

const executors = new WeakMap<object, Internals>();

/** Ties an executor to what its executions share and to its update (`createDependency` does it). */
export function registerCore(dependency: object, core: DependencyCore, prepare: PrepareUpdate): void {
  executors.set(dependency, { core, prepare });
}

/**
 * What an executor's executions share (prazo/config's watcher asks whether an object is an executor):
 * undefined for an object that is not an executor made by this copy of prazo. An integration reaches
 * an executor through its seam instead (`executorOf`, transport.ts).
 */
export function coreOf(dependency: object): DependencyCore | undefined {
  return executors.get(dependency)?.core;
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
