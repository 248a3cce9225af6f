import type { RetryBudget } from '../budget/budget.js';
import { systemClock } from '../clock/system.js';
import { type TimerQueue, TimerQueues } from '../clock/timer-queue.js';
import type { LatencySource } from '../latency/types.js';
import type { ConcurrencyLimiter } from '../limit/limiter.js';
import type { BackoffOptions, RandomSource } from '../retry/backoff.js';
import type { ClassifyOptions, FailureVerdict } from '../retry/classify.js';
import type { AdaptiveThrottle } from '../throttle/throttle.js';
import { Listeners } from './events.js';
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
  /**
   * The bounds of attempts that run the calibrated `attemptTimeoutMs` (most of them: those not cut by the
   * deadline), behind one clock timer. Undefined when there is no such bound.
   */
  readonly attemptTimers: TimerQueue | undefined;
  /** The hedges' delays, one queue per delay (it follows the live p95): no timer until a hedge is armed. */
  readonly hedgeTimers: TimerQueues;
}

const NO_BUDGET_STATE = Object.freeze({ originals: 0, extras: 0, ratio: 0 });
const NO_WINDOW = Object.freeze({
  count: 0,
  successes: 0,
  errors: 0,
  timeouts: 0,
  p50: undefined,
  p95: undefined,
  p99: undefined,
  p999: undefined,
  max: undefined,
  startedAt: 0,
  endedAt: 0,
});

/**
 * The plan of a call to something nobody configured (an origin an interceptor passes through),
 * declared once: one attempt (no retry, no hedge, no budget spent), bounded by the deadline alone
 * (every timeout infinite, no D4 floor but the 1 ms every attempt needs), nothing recorded, no
 * throttle or limit, every answer the server's (no classifier, no pushback). `unmanagedPlan` names
 * it and gives it the caller's clock.
 */
export const UNMANAGED: DependencyCore = Object.freeze({
  name: 'unmanaged',
  p99Ms: 0,
  maxAttempts: 1,
  attemptTimeoutMs: Number.POSITIVE_INFINITY,
  connectTimeoutMs: Number.POSITIVE_INFINITY,
  defaultDeadlineMs: Number.POSITIVE_INFINITY,
  clock: systemClock,
  random: Math.random,
  backoff: Object.freeze({ baseMs: 0, capMs: 0 }),
  budget: Object.freeze({ recordOriginal: () => {}, tryConsume: () => false, state: () => NO_BUDGET_STATE }),
  recorder: Object.freeze({
    record: () => {},
    quantile: () => undefined,
    lastWindow: () => undefined,
    currentWindow: () => NO_WINDOW,
  }),
  hedge: undefined,
  limiter: undefined,
  patience: false,
  throttle: undefined,
  retryResponseTimeout: false,
  pushback: false,
  classifyError: () => ({ retryable: false, immediate: false, kind: 'unknown' }) as const,
  headerFormat: undefined,
  events: new Listeners(),
  attemptTimers: undefined,
  hedgeTimers: new TimerQueues(systemClock),
}) as DependencyCore;
