/** Defaults and bounds of the retry budget (SPEC R1), in one place. */
export const BUDGET_DEFAULTS = Object.freeze({
  /** Length of the sliding window, in ms. */
  windowMs: 10_000,
  /** Extra attempts allowed per original request in the window (0.1 = 10% extra load). */
  maxRatio: 0.1,
  /** Extra attempts per second always allowed, whatever the traffic (the low-traffic floor). */
  minPerSecond: 3,
  /** Time buckets the window is cut into: memory and precision of the window edge. */
  buckets: 10,
});

export const BUDGET_LIMITS = Object.freeze({
  minWindowMs: 100,
  maxWindowMs: 3_600_000,
  maxRatio: 10,
  maxPerSecond: 1_000_000,
  minBuckets: 2,
  maxBuckets: 1_000,
});

/**
 * `maxRatio` is held as the exact fraction `ratioNumerator / RATIO_SCALE` (parts per million), so the
 * check `extras < ratio × originals` runs on integers: `extras × 10^6 < originals × numerator`.
 * A float product such as `0.1 × 30 = 3.0000000000000004` can then neither grant nor refuse one
 * attempt too many (tower's budget truncated its fractional ratio; this one does not).
 */
export const RATIO_SCALE = 1_000_000;
