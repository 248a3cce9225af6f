import type { Clock } from '../clock/clock.js';

/**
 * The contract between whoever measures latency (the recorder, `src/latency/`) and whoever reads it
 * (calibration, hedging, drift checks, metrics). Kept in its own file so readers do not depend on
 * the recorder's implementation.
 */

/** How an observed call ended. A timeout is any phase or deadline timeout. */
export type Outcome = 'success' | 'error' | 'timeout';

/** Quantiles and counts of one closed window (or of the window being filled). */
export interface LatencySnapshot {
  /** Samples in the window, all outcomes. */
  readonly count: number;
  readonly successes: number;
  readonly errors: number;
  readonly timeouts: number;
  /** Latency quantiles of successful calls, in ms; `undefined` when the window has no success. */
  readonly p50: number | undefined;
  readonly p95: number | undefined;
  readonly p99: number | undefined;
  readonly p999: number | undefined;
  /** The largest successful latency seen, in ms. */
  readonly max: number | undefined;
  /** Monotonic ms at which the window started and ended. */
  readonly startedAt: number;
  readonly endedAt: number;
}

/** What readers need from a latency recorder. */
export interface LatencySource {
  /**
   * Records one call's latency (ms) and how it ended (a NaN, or a value that is not a number, is
   * ignored: nothing to learn from it). O(1), allocation-free. `now`: a reading of
   * `clock` the caller just took (a hot path saves a clock read when it is the recorder's own clock;
   * with another clock the recorder reads its own).
   */
  record(latencyMs: number, outcome: Outcome, now?: number, clock?: Clock): void;
  /**
   * The latency quantile `q` (0 < q < 1) of successful calls in the last **full** window, in ms, or
   * `undefined` while that window holds fewer samples than the recorder's minimum. Cheap: cached
   * per window rotation, safe to call on every request. `now`, `clock`: as for `record`.
   */
  quantile(q: number, now?: number, clock?: Clock): number | undefined;
  /** The last full window (tower-style: reads see a complete window, never a half-filled one). */
  lastWindow(): LatencySnapshot | undefined;
  /** The window being filled now. */
  currentWindow(): LatencySnapshot;
}
