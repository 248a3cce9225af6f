import type { Clock } from '../clock/clock.js';
import type { ResultVerdict } from '../dependency/types.js';
import { isFailureStatus, RETRYABLE_STATUS } from '../retry/constants.js';
import { readPushback } from '../retry/pushback.js';
import { retryAfterMs } from '../retry/retry-after.js';

/**
 * How the executor judges an HTTP response head (SPEC R2, R3, X6): a 408/429/5xx-retryable status is a
 * failure worth another attempt, with the server's `Retry-After` for 429/503; anything else is the
 * server's answer. A failed status carrying a pushback (`grpc-retry-pushback-ms`, negative or
 * unparseable) is the server asking not to be retried: the answer ends the call, marked `pushback`
 * (not held against the instance that sent it); a non-negative pushback is the wait before the retry,
 * in ms, ahead of `Retry-After`. The common verdicts are shared frozen objects, so judging a 200
 * allocates nothing and reads no header.
 */

const ANSWER: ResultVerdict = Object.freeze({ retryable: false, outcome: 'success' });
const FAILED_ANSWER: ResultVerdict = Object.freeze({ retryable: false, outcome: 'error' });
const RETRYABLE: ResultVerdict = Object.freeze({ retryable: true });
const PUSHED_BACK: ResultVerdict = Object.freeze({ retryable: false, outcome: 'error', pushback: true });

/**
 * The verdict on a response head: its status, its pushback (unless `pushback` is false: the caller
 * ignores it) and, for 429/503, `Retry-After` (read on `clock`).
 */
export function judgeStatus(status: number, headers: unknown, clock: Clock, pushback = true): ResultVerdict {
  const retryable = RETRYABLE_STATUS.has(status);
  if (!retryable && !isFailureStatus(status)) return ANSWER;
  const told = pushback ? readPushback(headers) : undefined;
  if (told !== undefined) {
    if (!told.retry) return PUSHED_BACK;
    if (retryable) return { retryable: true, retryAfterMs: told.afterMs };
  }
  if (!retryable) return FAILED_ANSWER;
  const wait = retryAfterMs(status, headers, clock.epochNow());
  return wait === undefined ? RETRYABLE : { retryable: true, retryAfterMs: wait };
}
