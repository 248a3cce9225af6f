import { fitsDeadline, neededMs } from '../deadline/fits.js';
import { type BackoffOptions, fullJitterMs, type RandomSource } from './backoff.js';
import type { FailureVerdict } from './classify.js';

/**
 * The attempt planner (SPEC R6): retries live inside the deadline. Each attempt gets its own slice,
 * `min(attempt timeout, remaining)`, and an attempt that cannot finish in what is left (remaining <
 * the dependency's p99) is not started: a second attempt born without time fails by construction and
 * only adds load. Backoff waits never push an attempt past that point, and a server's `Retry-After`
 * that does not fit means "fail now" (the server's answer is the best one the caller will get).
 *
 * Pure functions of numbers: the executor feeds them the clock and the budget.
 */

/** Why the planner stopped retrying. */
export type StopReason =
  | 'not-retryable'
  | 'not-idempotent'
  | 'attempts-exhausted'
  | 'retry-after-too-long'
  | 'deadline-insufficient';

export type RetryDecision =
  | {
      readonly action: 'retry';
      /** Wait before the next attempt, in ms: the server's, 0 after a connect failure, or backoff. */
      readonly delayMs: number;
      readonly wait: 'retry-after' | 'immediate' | 'backoff';
    }
  | { readonly action: 'stop'; readonly reason: StopReason; readonly waitMs?: number };

export interface RetryPlanInput {
  /** How the last attempt failed. */
  readonly verdict: FailureVerdict;
  readonly idempotent: boolean;
  /** Attempts started so far (1 after the original). */
  readonly attemptsMade: number;
  /** The most attempts allowed (the original included). */
  readonly maxAttempts: number;
  /** What is left of the deadline, in ms. */
  readonly remainingMs: number;
  /** The dependency's p99, in ms: what an attempt needs to have a chance. */
  readonly p99Ms: number;
  readonly backoff: BackoffOptions;
  readonly random: RandomSource;
}

/**
 * D4's rule (`deadline/fits.ts`), re-exported for the executor: the planner refuses a retry with the
 * same verdict every other integration gives a first call.
 */
export { fitsDeadline, neededMs };

const stop = (reason: StopReason, waitMs?: number): RetryDecision =>
  waitMs === undefined ? { action: 'stop', reason } : { action: 'stop', reason, waitMs };

/**
 * Decides whether the failed attempt gets another one, and after how long. Order: what the failure
 * is, whether the request may repeat, the attempt count, then time. Budget authorisation comes last,
 * in the executor, so a retry that the deadline rules out never spends the shared budget.
 */
export function planRetry(input: RetryPlanInput): RetryDecision {
  const { verdict, remainingMs, p99Ms } = input;
  if (!verdict.retryable) return stop('not-retryable');
  if (!input.idempotent) return stop('not-idempotent');
  if (input.attemptsMade >= input.maxAttempts) return stop('attempts-exhausted');
  const serverWait = verdict.retryAfterMs;
  if (serverWait !== undefined) {
    // "Come back now" (0, or a date already past): no wait to refuse, only the deadline can say no.
    if (serverWait <= 0) {
      if (!fitsDeadline(remainingMs, p99Ms)) return stop('deadline-insufficient');
      return { action: 'retry', delayMs: 0, wait: 'retry-after' };
    }
    if (!fitsDeadline(remainingMs - serverWait, p99Ms)) return stop('retry-after-too-long', serverWait);
    return { action: 'retry', delayMs: serverWait, wait: 'retry-after' };
  }
  if (!fitsDeadline(remainingMs, p99Ms)) return stop('deadline-insufficient');
  if (verdict.immediate) return { action: 'retry', delayMs: 0, wait: 'immediate' };
  const room = remainingMs - neededMs(p99Ms);
  const jitter = fullJitterMs(input.attemptsMade, input.backoff, input.random);
  return { action: 'retry', delayMs: jitter < room ? jitter : room, wait: 'backoff' };
}
