/** Bounds and defaults of latency budgets (SPEC B1–B3). Durations in ms. */
export const LATENCY_BUDGET_LIMITS = Object.freeze({
  maxTotalSloMs: 3_600_000,
  maxComponents: 64,
  maxNameLength: 128,
});
