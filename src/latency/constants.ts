/** Fixed bounds of the latency recorder (SPEC C1, C4, H1); its options are in `options.ts`. */
export const RECORDER_LIMITS = Object.freeze({
  /**
   * Latencies are clamped into [0, 1 day]; below 1 µs they count as 0. This bounds the sketch's dense
   * store to about 1,300 bins at α = 1%, whatever a caller (or a broken clock) feeds it.
   */
  minLatencyMs: 0.001,
  maxLatencyMs: 86_400_000,
  /** Distinct `quantile(q)` values cached per window; more are computed (still correct, not cached). */
  maxCachedQuantiles: 16,
});
