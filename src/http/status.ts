/**
 * What a response status means for retries and for latency recording (SPEC R2). A status is the
 * server's answer, so it never throws: the executor's `classify` reads it instead.
 */

/** Statuses worth another attempt (SPEC R2): the server was overloaded, failing or timed out itself. */
export const RETRYABLE_STATUSES: ReadonlySet<number> = new Set([408, 429, 500, 502, 503, 504]);

/** Statuses whose `Retry-After` the client must honour instead of its own backoff (SPEC R3). */
export const RETRY_AFTER_STATUSES: ReadonlySet<number> = new Set([429, 503]);

/**
 * How a response counts for the latency recorder: a 5xx, 408 or 429 is the dependency failing (its
 * latency must not calibrate the healthy p99, SPEC C4); any other status is an answer.
 */
export function statusOutcome(status: number): 'success' | 'error' {
  return status >= 500 || status === 408 || status === 429 ? 'error' : 'success';
}
