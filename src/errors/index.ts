export { isPrazoError, PrazoError } from './base.js';
export { type RetryBudgetExhaustedDetails, RetryBudgetExhaustedError } from './budget.js';
export { ErrorCode, type TimeoutPhase } from './codes.js';
export {
  type DeadlineExceededDetails,
  DeadlineExceededError,
  type DeadlineInsufficientDetails,
  DeadlineInsufficientError,
} from './deadline.js';
export {
  isBodyTimeout,
  isConnectTimeout,
  isDeadlineExceeded,
  isDeadlineInsufficient,
  isInvalidOptions,
  isResponseTimeout,
  isRetryBudgetExhausted,
  isTimeoutError,
} from './guards.js';
export { InvalidOptionsError } from './options.js';
export {
  BodyTimeoutError,
  ConnectTimeoutError,
  type PhaseTimeoutDetails,
  PhaseTimeoutError,
  ResponseTimeoutError,
} from './timeout.js';
