export {
  createRetryBudget,
  isRetryBudget,
  type RetryBudget,
  type RetryBudgetOptions,
  type RetryBudgetState,
} from './budget.js';
export { BUDGET_DEFAULTS, BUDGET_LIMITS } from './constants.js';
