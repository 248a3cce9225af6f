/**
 * Bounds the config checks for the executor's options, mirrored here because `config/` sits in the
 * measurement layer and must not import the executor or the policies above it (docs/ARCHITECTURE.md).
 * `agreement.test.ts` pins each number to its source (`dependency/`, `budget/`, `hedge/`, `retry/`)
 * and checks that whatever the loader accepts, `createDependency` accepts too.
 */
const MAX_TIMER_MS = 2 ** 31 - 1;

export const DEPENDENCY_RANGES = Object.freeze({
  maxNameLength: 100,
  maxP99Ms: 86_400_000,
  maxDeadlineMs: MAX_TIMER_MS,
  /** The executor's default deadline, against which attempts are fitted when the file gives none. */
  defaultDeadlineMs: 2_000,
  maxBackoffMs: 60_000,
});

export const RETRY_BUDGET_RANGES = Object.freeze({
  minWindowMs: 100,
  maxWindowMs: 3_600_000,
  maxRatio: 10,
  maxPerSecond: 1_000_000,
});

export const HEDGE_RANGES = Object.freeze({
  minPercentile: 0.5,
  maxPercentile: 0.9999,
  maxExtraLoad: 0.5,
  maxDelayMs: MAX_TIMER_MS,
  defaultMinDelayMs: 5,
});
