import type { RetryBudget } from '../budget/budget.js';
import type { TimerQueue } from '../clock/timer-queue.js';
import type { HeaderFormat } from '../deadline/deadline.js';
import type { LatencySource } from '../latency/types.js';
import type { ConcurrencyLimiter } from '../limit/limiter.js';
import type { BackoffOptions, RandomSource } from '../retry/backoff.js';
import type { ClassifyOptions, FailureVerdict } from '../retry/classify.js';
import type { AdaptiveThrottle } from '../throttle/throttle.js';
import type { ExecutorPlan } from './transport.js';

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
