import { defineOptions, type OptionsOf, option } from '../options/declare.js';

/** The options of the retry budget (SPEC R1), declared once: `createRetryBudget`, the executor, the config. */
export const RETRY_BUDGET_OPTIONS = defineOptions({
  /** Length of the sliding window, in ms. Default 10000; [100, 3600000]. */
  windowMs: option.number({ default: 10_000, unit: 'ms', min: 100, max: 3_600_000 }),
  /**
   * Extra attempts (retries + hedges) allowed per original request in the window. Default 0.1 (10%
   * extra load); [0, 10], resolution 1 ppm.
   */
  maxRatio: option.number({ default: 0.1, unit: 'extra attempts per request', min: 0, max: 10 }),
  /**
   * Extra attempts per second allowed whatever the traffic, so a route with 3 requests a minute still
   * gets a second chance (10% of a tiny number rounds to nothing). Default 3; [0, 1000000]. The floor
   * is the whole count `floor(minPerSecond × windowMs / 1000)` per window.
   */
  minPerSecond: option.number({ default: 3, unit: 'extra attempts/s', min: 0, max: 1_000_000 }),
  /** Buckets the window is cut into (its edge moves in steps of `windowMs / buckets`). Default 10; integer [2, 1000]. */
  buckets: option.integer({ default: 10, min: 2, max: 1_000 }),
  /** Where time comes from. Default: the system clock. */
  clock: option.clock(),
});

export type RetryBudgetOptions = OptionsOf<typeof RETRY_BUDGET_OPTIONS>;

/**
 * `maxRatio` is held as the exact fraction `ratioNumerator / RATIO_SCALE` (parts per million), so the
 * check `extras < ratio × originals` runs on integers: `extras × 10^6 < originals × numerator`.
 * A float product such as `0.1 × 30 = 3.0000000000000004` can then neither grant nor refuse one
 * attempt too many (tower's budget truncated its fractional ratio; this one does not).
 */
export const RATIO_SCALE = 1_000_000;
