export {
  createRetryBudget,
  isRetryBudget,
  type RetryBudget,
  type RetryBudgetOptions,
  type RetryBudgetState,
} from './budget.js';
export { RETRY_BUDGET_OPTIONS } from './options.js';
