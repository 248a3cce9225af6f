/** Defaults and bounds of `createDependency` (SPEC C1–C3, R1–R6, H1–H3), in one place. Durations in ms. */
export const DEPENDENCY_DEFAULTS = Object.freeze({
  /** Attempts per call, the original included (SPEC C3: reduced, never the timeout, when they do not fit). */
  attempts: 2,
  /** Deadline of a call that brings none and runs outside any ambient deadline. */
  defaultDeadlineMs: 2_000,
});

export const DEPENDENCY_LIMITS = Object.freeze({
  maxNameLength: 100,
  maxAttempts: 10,
  maxDeadlineMs: 2 ** 31 - 1,
  maxP99Ms: 86_400_000,
});
