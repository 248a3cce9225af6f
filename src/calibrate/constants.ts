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
