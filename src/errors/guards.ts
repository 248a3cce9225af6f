import { isPrazoError, type PrazoError } from './base.js';
import type { RetryBudgetExhaustedError } from './budget.js';
import type { ConcurrencyLimitError, NoInstanceError } from './capacity.js';
import type { ClientClosedError } from './closed.js';
import { ErrorCode } from './codes.js';
import type { DeadlineExceededError, DeadlineInsufficientError } from './deadline.js';
import type { DependencyFailedError } from './dependency.js';
import type { InvalidOptionsError } from './options.js';
import type { ThrottledError } from './throttle.js';
import type {
  BodyTimeoutError,
  ConnectFailedError,
  ConnectTimeoutError,
  QueueTimeoutError,
  ResponseTimeoutError,
} from './timeout.js';

/** A guard by stable code over the brand: true for an error of another installed copy of prazo too. */
const hasCode =
  <T extends PrazoError>(code: ErrorCode) =>
  (error: unknown): error is T =>
    isPrazoError(error) && error.code === code;

export const isDeadlineExceeded = hasCode<DeadlineExceededError>(ErrorCode.DEADLINE_EXCEEDED);
export const isDeadlineInsufficient = hasCode<DeadlineInsufficientError>(ErrorCode.DEADLINE_INSUFFICIENT);
export const isQueueTimeout = hasCode<QueueTimeoutError>(ErrorCode.QUEUE_TIMEOUT);
export const isConnectTimeout = hasCode<ConnectTimeoutError>(ErrorCode.CONNECT_TIMEOUT);
export const isResponseTimeout = hasCode<ResponseTimeoutError>(ErrorCode.RESPONSE_TIMEOUT);
export const isBodyTimeout = hasCode<BodyTimeoutError>(ErrorCode.BODY_TIMEOUT);
export const isRetryBudgetExhausted = hasCode<RetryBudgetExhaustedError>(ErrorCode.RETRY_BUDGET_EXHAUSTED);
export const isInvalidOptions = hasCode<InvalidOptionsError>(ErrorCode.INVALID_OPTIONS);
export const isConnectFailed = hasCode<ConnectFailedError>(ErrorCode.CONNECT_FAILED);
export const isConcurrencyLimited = hasCode<ConcurrencyLimitError>(ErrorCode.CONCURRENCY_LIMITED);
export const isThrottled = hasCode<ThrottledError>(ErrorCode.THROTTLED);
export const isNoInstance = hasCode<NoInstanceError>(ErrorCode.NO_INSTANCE);
export const isDependencyFailed = hasCode<DependencyFailedError>(ErrorCode.DEPENDENCY_FAILED);
export const isClientClosed = hasCode<ClientClosedError>(ErrorCode.CLIENT_CLOSED);

/** Any failure where time ran out: the deadline, or one phase's local timeout (the queue's included). */
export function isTimeoutError(
  error: unknown,
): error is
  | DeadlineExceededError
  | QueueTimeoutError
  | ConnectTimeoutError
  | ResponseTimeoutError
  | BodyTimeoutError {
  return (
    isDeadlineExceeded(error) ||
    isQueueTimeout(error) ||
    isConnectTimeout(error) ||
    isResponseTimeout(error) ||
    isBodyTimeout(error)
  );
}

/** True for the errors that mean "out of time" for the whole call (exceeded or insufficient): a 504, not a 500. */
export function isDeadlineError(error: unknown): error is DeadlineExceededError | DeadlineInsufficientError {
  return isDeadlineExceeded(error) || isDeadlineInsufficient(error);
}
