export { type BackoffOptions, fullJitterMs, type RandomSource } from './backoff.js';
export {
  type ClassifyOptions,
  classifyFailure,
  type FailureKind,
  type FailureVerdict,
  isRetryable,
  markResponseStarted,
} from './classify.js';
export {
  BACKOFF_DEFAULTS,
  CONNECT_FAILURE_CODES,
  CONNECTION_LOST_CODES,
  IDEMPOTENCY_KEY_HEADER,
  RETRY_AFTER_STATUS,
  RETRYABLE_STATUS,
} from './constants.js';
export { parseHttpDate } from './http-date.js';
export {
  generateIdempotencyKey,
  IDEMPOTENT_METHODS,
  isIdempotentMethod,
  isIdempotentRequest,
  isValidIdempotencyKey,
} from './idempotency.js';
export {
  attemptTimeoutMs,
  fitsDeadline,
  planRetry,
  type RetryDecision,
  type RetryPlanInput,
  type StopReason,
} from './planner.js';
export { parseRetryAfter, readHeader, retryAfterMs } from './retry-after.js';
