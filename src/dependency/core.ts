import type { RetryBudget } from '../budget/budget.js';
import type { Clock } from '../clock/clock.js';
import type { TimerQueue } from '../clock/timer-queue.js';
import type { HeaderFormat } from '../deadline/deadline.js';
import type { HedgePolicy } from '../hedge/policy.js';
import type { LatencySource } from '../latency/types.js';
import type { BackoffOptions, RandomSource } from '../retry/backoff.js';
import type { ClassifyOptions, FailureVerdict } from '../retry/classify.js';
import type { Listeners } from './events.js';

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
  readonly retryResponseTimeout: boolean;
  readonly classifyError: ErrorClassifier;
  readonly headerFormat: HeaderFormat | undefined;
  readonly events: Listeners;
  /**
   * The bounds of attempts that run the calibrated `responseMs` (most of them: those not cut by the
   * deadline), behind one clock timer. Undefined when there is no such bound.
   */
  readonly attemptTimers: TimerQueue | undefined;
}

const cores = new WeakMap<object, DependencyCore>();

/** Ties an executor to what its executions share (`createDependency` does it, once). */
export function registerCore(dependency: object, core: DependencyCore): void {
  cores.set(dependency, core);
}

/**
 * What an executor's executions share, for integrations that drive executions of their own (prazo/http's
 * calls): undefined for an object that is not an executor made by this copy of prazo.
 */
export function coreOf(dependency: object): DependencyCore | undefined {
  return cores.get(dependency);
}
