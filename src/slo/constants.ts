/** Bounds and defaults of latency budgets (SPEC B1–B3). Durations in ms. */
export const LATENCY_BUDGET_LIMITS = Object.freeze({
  maxTotalSloMs: 3_600_000,
  maxComponents: 64,
  maxNameLength: 128,
});

export const OVERRUN_DEFAULTS = Object.freeze({
  /** Sliding window over which overruns are counted. */
  windowMs: 60_000,
  /** Overruns / calls of a component above which it alarms (SPEC B3: "frequently"). */
  maxOverrunRate: 0.05,
  /** Calls a component needs in the window before it can alarm. */
  minCalls: 20,
});
