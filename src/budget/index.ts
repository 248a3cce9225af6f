export {
  createRetryBudget,
  isRetryBudget,
  type RetryBudget,
  type RetryBudgetOptions,
  type RetryBudgetState,
} from './budget.js';
