import type { Clock } from '../clock/clock.js';
import type { ResultVerdict } from '../dependency/types.js';
import { RETRYABLE_STATUS } from '../retry/constants.js';
import { retryAfterMs } from '../retry/retry-after.js';
import { statusOutcome } from './status.js';

/**
 * How the executor judges an HTTP response (SPEC R2, R3): a 408/429/5xx-retryable status is a
 * failure worth another attempt, with the server's `Retry-After` for 429/503; anything else is the
 * server's answer. Built once per client; the common verdicts are shared frozen objects, so judging
 * a 200 allocates nothing.
 */

interface StatusCarrier {
  readonly statusCode: number;
  readonly headers: unknown;
  readonly body: { dump(options?: { limit?: number }): Promise<void> };
}

const ANSWER: ResultVerdict = Object.freeze({ retryable: false, outcome: 'success' });
const FAILED_ANSWER: ResultVerdict = Object.freeze({ retryable: false, outcome: 'error' });

/** `classify` for `dependency.execute`: reads the status and, for 429/503, `Retry-After`. */
export function createClassify(clock: Clock): (response: StatusCarrier) => ResultVerdict {
  return (response) => {
    const status = response.statusCode;
    if (!RETRYABLE_STATUS.has(status)) return statusOutcome(status) === 'success' ? ANSWER : FAILED_ANSWER;
    const wait = retryAfterMs(status, response.headers, clock.epochNow());
    return wait === undefined ? { retryable: true } : { retryable: true, retryAfterMs: wait };
  };
}

const ignore = (): void => {};

/**
 * `discard` for `dependency.execute`: a response that will not be returned (a retried 503, a hedge
 * that answered second) is drained so its connection goes back to the pool; undici destroys the
 * connection instead when the body is larger than its dump limit.
 */
export function discardResponse(response: StatusCarrier): void {
  response.body.dump().catch(ignore);
}
