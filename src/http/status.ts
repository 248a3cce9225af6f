import { isFailureStatus } from '../retry/constants.js';

/**
 * What a response status means for latency recording (SPEC C4). Which statuses are retried is
 * `retry/`'s rule (`RETRYABLE_STATUS`); a status is the server's answer, so it never throws.
 */

/**
 * How a response counts for the latency recorder: a 5xx, 408 or 429 is the dependency failing (its
 * latency must not calibrate the healthy p99, SPEC C4); any other status is an answer.
 */
export function statusOutcome(status: number): 'success' | 'error' {
  return isFailureStatus(status) ? 'error' : 'success';
}
