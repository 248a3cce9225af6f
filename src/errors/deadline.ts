import { PrazoError } from './base.js';
import { ErrorCode } from './codes.js';

export interface DeadlineExceededDetails {
  /** The dependency being called when the deadline fired, when known. */
  readonly dependency?: string;
  /** Milliseconds between the start of the guarded work and the moment the deadline fired. */
  readonly elapsedMs?: number;
  /** The deadline as wall-clock epoch ms (what travelled in the header). */
  readonly deadlineEpochMs?: number;
  /**
   * `'unknown'` when the work had been sent and may have taken effect (a write whose deadline passed
   * mid-flight): it must not be retried blindly. Absent when the integration cannot tell.
   */
  readonly outcome?: 'unknown';
  readonly cause?: unknown;
}

/**
 * The end-to-end deadline passed (SPEC D5, D6): the caller's time is gone, whatever the phase.
 * Distinct from a caller aborting on its own, which rejects with the caller's own reason.
 */
export class DeadlineExceededError extends PrazoError {
  protected static override readonly prazoCodes = [ErrorCode.DEADLINE_EXCEEDED];
  readonly phase = 'deadline' as const;
  readonly dependency: string | undefined;
  readonly elapsedMs: number | undefined;
  readonly deadlineEpochMs: number | undefined;
  /** `'unknown'`: the work was sent and may have taken effect; never retry it blindly. */
  readonly outcome: 'unknown' | undefined;

  constructor(details: DeadlineExceededDetails = {}) {
    const where = details.dependency ? ` calling ${details.dependency}` : '';
    const after = details.elapsedMs === undefined ? '' : ` after ${Math.round(details.elapsedMs)} ms`;
    const outcome =
      details.outcome === 'unknown'
        ? '; it was sent and its outcome is unknown (it may have taken effect): do not retry it blindly'
        : '';
    super(ErrorCode.DEADLINE_EXCEEDED, `deadline exceeded${where}${after}${outcome}`, {
      cause: details.cause,
    });
    this.dependency = details.dependency;
    this.elapsedMs = details.elapsedMs;
    this.deadlineEpochMs = details.deadlineEpochMs;
    this.outcome = details.outcome;
  }
}

export interface DeadlineInsufficientDetails {
  readonly dependency: string;
  /** What was left of the deadline, in ms. */
  readonly remainingMs: number;
  /** What the call needs to have a chance (the dependency's p99), in ms. */
  readonly neededMs: number;
  /** Which attempt would have been started (1 = the original), when raised by a retry plan. */
  readonly attempt?: number;
}

/**
 * Raised before touching a dependency when the time left cannot fit its p99 (SPEC D4, R6): work that
 * would be thrown away turns into an instant error.
 */
export class DeadlineInsufficientError extends PrazoError {
  protected static override readonly prazoCodes = [ErrorCode.DEADLINE_INSUFFICIENT];
  readonly dependency: string;
  readonly remainingMs: number;
  readonly neededMs: number;
  readonly attempt: number | undefined;

  constructor(details: DeadlineInsufficientDetails) {
    const attempt =
      details.attempt !== undefined && details.attempt > 1 ? ` (attempt ${details.attempt})` : '';
    super(
      ErrorCode.DEADLINE_INSUFFICIENT,
      `deadline insufficient for ${details.dependency}${attempt}: ${Math.floor(details.remainingMs)} ms left, ` +
        `needs ${details.neededMs} ms (p99); not called`,
    );
    this.dependency = details.dependency;
    // To the microsecond: `(now + 300) - now` is 300.00000000000006 in floating point, and an error
    // must not report more time left than the caller gave.
    this.remainingMs = Math.round(details.remainingMs * 1_000) / 1_000;
    this.neededMs = details.neededMs;
    this.attempt = details.attempt;
  }
}
