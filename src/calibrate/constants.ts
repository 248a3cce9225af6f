import { MAX_TIMER_DELAY_MS } from '../clock/clock.js';

/**
 * Defaults and bounds of timeout calibration (SPEC C1–C3, C5, C6), in one place. Units are in the
 * names; every duration is milliseconds.
 */
export const CALIBRATION_DEFAULTS = Object.freeze({
  /** Attempts wanted per call (the original + retries). */
  attempts: 2,
  /** Multiplier over the healthy p99 (SPEC C1: [1.3, 1.5], default 1.4). */
  slack: 1.4,
  /** Cap of the connect timeout (SPEC C2): a connect failure means the instance is down. */
  connectCapMs: 400,
  /** Network and serialization overhead reserved per attempt inside the deadline (SPEC C3). */
  overheadMs: 30,
});

export const CALIBRATION_LIMITS = Object.freeze({
  /** SPEC C1's band for the slack; outside it only with `forceSlack`. */
  minSlack: 1.3,
  maxSlack: 1.5,
  /** Band allowed with `forceSlack`: below 1 the timeout would cut the p99 itself. */
  minForcedSlack: 1,
  maxForcedSlack: 3,
  maxAttempts: 10,
  /** One day: any larger p99 is a unit mistake (seconds read as ms...), and with slack 3 it still fits a timer. */
  maxP99Ms: 86_400_000,
  /** A deadline no timer can honour is a mistake too. */
  maxDeadlineMs: MAX_TIMER_DELAY_MS,
  maxConnectCapMs: 60_000,
  maxOverheadMs: 60_000,
  /** A timeout is never below this: 0 means "no timeout" to undici and most clients. */
  minTimeoutMs: 1,
});

/** Healthy-window guard (SPEC C4): a window past any of these is never used to calibrate. */
export const HEALTH_DEFAULTS = Object.freeze({
  /** Errors / all calls. Above it the window has degradation built in. */
  maxErrorRate: 0.02,
  /**
   * Timeouts / all calls. Above 1% the success-only p99 is censored (the slowest calls were cut and
   * are missing from it), so it reads *lower* than the truth as well as the window being unhealthy.
   */
  maxTimeoutRate: 0.01,
  /** p99 / baseline p99. Above it the p99 jumped: a degraded window, not a new normal. */
  maxP99Jump: 1.5,
  /** Samples a window needs before it can be judged (fewer: `insufficient`, never used). */
  minSamples: 100,
  /** Healthy windows whose median p99 forms the baseline. */
  baselineWindows: 6,
});

/** Drift check (SPEC C5, V1). */
export const DRIFT_DEFAULTS = Object.freeze({
  /** Abandonment (timeouts / calls) above this on a healthy dependency: the timeout is too tight. */
  maxAbandonRate: 0.01,
  /** Abandonment at or below this counts as "about zero". */
  idleAbandonRate: 0.001,
  /** Timeout above p99 × this (beyond the 1.5 slack band) with ~0 abandonment: idle margin. */
  idleMarginFactor: 2,
  /** |p99 / previous p99 − 1| at or below this: the p99 is stable. */
  stableTolerance: 0.2,
  /** Samples a window needs before a verdict. */
  minSamples: 100,
});
