/**
 * The errors and their guards, all of them public: the root entry re-exports this file whole, so a
 * name added here is a name added to `prazo` (and to api/root.api.md).
 */
export { isPrazoError, PrazoError } from './base.js';
export { RetryBudgetExhaustedError } from './budget.js';
export { ConcurrencyLimitError, NoInstanceError } from './capacity.js';
export { ErrorCode, type TimeoutPhase } from './codes.js';
export { DeadlineExceededError, DeadlineInsufficientError } from './deadline.js';
export { type DependencyFailedDetails, DependencyFailedError } from './dependency.js';
export {
  isBodyTimeout,
  isConcurrencyLimited,
  isConnectFailed,
  isConnectTimeout,
  isDeadlineError,
  isDeadlineExceeded,
  isDeadlineInsufficient,
  isDependencyFailed,
  isInvalidOptions,
  isNoInstance,
  isQueueTimeout,
  isResponseTimeout,
  isRetryBudgetExhausted,
  isTimeoutError,
} from './guards.js';
export { InvalidOptionsError } from './options.js';
export {
  BodyTimeoutError,
  ConnectFailedError,
  ConnectTimeoutError,
  PhaseTimeoutError,
  QueueTimeoutError,
  ResponseTimeoutError,
} from './timeout.js';
