/**
 * `prazo/retry`: the rules the executor retries and hedges by (SPEC R2-R5, H1-H3), for code that
 * brings its own transport or classifier: which failures are retryable and how (`classifyFailure`,
 * `isRetryable`, `markResponseStarted` for a failure after the first response byte), the server's
 * `Retry-After` and its pushback (`grpc-retry-pushback-ms`, SPEC X6), idempotency (methods, keys) and
 * the hedging policy on its own.
 *
 * @module prazo/retry
 */

export { createHedgePolicy, type HedgeOptions, type HedgePolicy } from '../hedge/policy.js';
export type { RandomSource } from './backoff.js';
export {
  type ClassifyOptions,
  classifyFailure,
  type FailureKind,
  type FailureVerdict,
  isRetryable,
  markResponseStarted,
} from './classify.js';
export { IDEMPOTENCY_KEY_HEADER, PUSHBACK_HEADER } from './constants.js';
export {
  generateIdempotencyKey,
  isIdempotentMethod,
  isIdempotentRequest,
  isValidIdempotencyKey,
} from './idempotency.js';
export { type Pushback, parsePushback, readPushback } from './pushback.js';
export { parseRetryAfter, retryAfterMs } from './retry-after.js';
