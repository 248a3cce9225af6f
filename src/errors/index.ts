/**
 * The errors and their guards the root entry holds: it re-exports this file whole, so a name added
 * here is a name added to `prazo` (and to api/root.api.md). The failures of one transport live with
 * it, each with its guard: `NoInstanceError` / `isNoInstance` in prazo/http, `DependencyFailedError`
 * / `isDependencyFailed` in prazo/server, `ClientClosedError` / `isClientClosed` in prazo/redis.
 */
export { isPrazoError, PrazoError } from './base.js';
export { RetryBudgetExhaustedError } from './budget.js';
export { ConcurrencyLimitError } from './capacity.js';
export { ErrorCode, type TimeoutPhase } from './codes.js';
export { DeadlineExceededError, DeadlineInsufficientError } from './deadline.js';
export {
  isBodyTimeout,
  isConcurrencyLimited,
  isConnectFailed,
  isConnectTimeout,
  isDeadlineExceeded,
  isDeadlineInsufficient,
  isInvalidOptions,
  isQueueTimeout,
  isResponseTimeout,
  isRetryBudgetExhausted,
  isThrottled,
  isTimeoutError,
} from './guards.js';
export { InvalidOptionsError } from './options.js';
export { ThrottledError } from './throttle.js';
export {
  BodyTimeoutError,
  ConnectFailedError,
  ConnectTimeoutError,
  PhaseTimeoutError,
  QueueTimeoutError,
  ResponseTimeoutError,
} from './timeout.js';
