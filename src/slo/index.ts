export { LATENCY_BUDGET_LIMITS } from './constants.js';
export {
  type ComponentTimeouts,
  type DependencyProfile,
  type DerivedTimeouts,
  deriveTimeouts,
} from './derive.js';
export {
  type ComponentOverrun,
  createOverrunTracker,
  type OverrunTracker,
  type OverrunTrackerOptions,
} from './overrun.js';
export { type ParsedBudget, parseBudget } from './parse.js';
export { createSliceRunner, type SliceRunner, type SliceRunnerOptions } from './slice.js';
export type { BudgetComponent, BudgetProblem, ComponentKind, LatencyBudget, Severity } from './types.js';
export { validateBudget } from './validate.js';
