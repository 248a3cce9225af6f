/** Defaults and bounds of the latency recorder (SPEC C1, C4, H1). Durations in ms. */
export const RECORDER_DEFAULTS = Object.freeze({
  /** Length of one window. Reads see the last full one, so a value is at most 2 windows old. */
  windowMs: 10_000,
  /**
   * Successful samples a window needs before its quantiles are trusted: a p99 from fewer than 100
   * samples is the maximum of a handful of calls, not a percentile.
   */
  minSamples: 100,
  /** DDSketch relative accuracy α: every quantile is within ±α of the true value (1%). */
  relativeAccuracy: 0.01,
});

export const RECORDER_LIMITS = Object.freeze({
  minWindowMs: 10,
  maxWindowMs: 86_400_000,
  maxMinSamples: 1_000_000,
  minRelativeAccuracy: 0.0001,
  maxRelativeAccuracy: 0.1,
  /**
   * Latencies are clamped into [0, 1 day]; below 1 µs they count as 0. This bounds the sketch's dense
   * store to about 1,300 bins at α = 1%, whatever a caller (or a broken clock) feeds it.
   */
  minLatencyMs: 0.001,
  maxLatencyMs: 86_400_000,
  /** Distinct `quantile(q)` values cached per window; more are computed (still correct, not cached). */
  maxCachedQuantiles: 16,
});
