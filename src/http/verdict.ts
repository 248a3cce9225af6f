import type { Clock } from '../clock/clock.js';
import type { ResultVerdict } from '../dependency/types.js';
import { RETRYABLE_STATUS } from '../retry/constants.js';
import { retryAfterMs } from '../retry/retry-after.js';
import { statusOutcome } from './status.js';

/**
 * How the executor judges an HTTP response head (SPEC R2, R3): a 408/429/5xx-retryable status is a
 * failure worth another attempt, with the server's `Retry-After` for 429/503; anything else is the
 * server's answer. The common verdicts are shared frozen objects, so judging a 200 allocates nothing.
 */

const ANSWER: ResultVerdict = Object.freeze({ retryable: false, outcome: 'success' });
const FAILED_ANSWER: ResultVerdict = Object.freeze({ retryable: false, outcome: 'error' });
const RETRYABLE: ResultVerdict = Object.freeze({ retryable: true });

/** The verdict on a response head: its status and, for 429/503, `Retry-After` (read on `clock`). */
export function judgeStatus(status: number, headers: unknown, clock: Clock): ResultVerdict {
  if (!RETRYABLE_STATUS.has(status)) return statusOutcome(status) === 'success' ? ANSWER : FAILED_ANSWER;
  const wait = retryAfterMs(status, headers, clock.epochNow());
  return wait === undefined ? RETRYABLE : { retryable: true, retryAfterMs: wait };
}
