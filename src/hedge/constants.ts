/** Defaults and bounds of hedged requests (SPEC H1–H3), in one place. Durations in ms. */
export const HEDGE_DEFAULTS = Object.freeze({
  /** The live latency quantile after which a copy is sent: only the slowest 5% get one. */
  percentile: 0.95,
  /** Never hedge sooner than this, whatever the quantile says (a 1 ms p95 would hedge everything fast). */
  minDelayMs: 5,
});

export const HEDGE_LIMITS = Object.freeze({
  /** Below p50, half the requests would be doubled: that is load balancing, not hedging. */
  minPercentile: 0.5,
  maxPercentile: 0.9999,
  /** `maxExtraLoad` in (0, 0.5]: the complement of the percentile range. */
  maxExtraLoad: 0.5,
  maxDelayMs: 2 ** 31 - 1,
});
