import { MAX_RETRY_AFTER_LENGTH, MAX_RETRY_AFTER_MS, RETRY_AFTER_STATUS } from './constants.js';
import { parseHttpDate } from './http-date.js';

/**
 * `Retry-After` (RFC 9110 §10.2.3, SPEC R3): the server's own instruction on when to come back, as
 * `delay-seconds` or an HTTP-date. For 429 and 503 the client waits exactly that, never its own
 * backoff: the server knows its recovery better than a random jitter does.
 */

/** Past this many seconds every delay-seconds is the longest wait; below it the sum stays exact. */
const CAP_SECONDS = MAX_RETRY_AFTER_MS / 1000;

/**
 * The wait of a `delay-seconds` (RFC 9110: 1*DIGIT), in ms, or `undefined` when `text` is not digits
 * only. One pass that allocates nothing, at any length: the seconds saturate once past the cap, so
 * 80 digits (or 10 MB of them) are the longest wait, as 17 are, and leading zeros count for nothing.
 */
function delaySecondsMs(text: string): number | undefined {
  if (text.length === 0) return undefined;
  let seconds = 0;
  for (let i = 0; i < text.length; i += 1) {
    const digit = text.charCodeAt(i) - 48;
    if (digit < 0 || digit > 9) return undefined;
    if (seconds <= CAP_SECONDS) seconds = seconds * 10 + digit;
  }
  return Math.min(seconds * 1000, MAX_RETRY_AFTER_MS);
}

/**
 * The wait a `Retry-After` value asks for, in ms, or `undefined` when the value is malformed (then
 * the client falls back to its own backoff). A date is read against `nowEpochMs` (the clock's
 * `epochNow()`); a date in the past means 0. Surrounding spaces and tabs are allowed. Bounded: a
 * value over 64 characters is refused unless it is delay-seconds, which a run of digits is at any
 * length (read in one pass), and waits are capped at 2^31 − 1 ms, longer than any deadline.
 */
export function parseRetryAfter(value: unknown, nowEpochMs: number): number | undefined {
  if (typeof value !== 'string') return undefined;
  const text = value.trim();
  const seconds = delaySecondsMs(text);
  if (seconds !== undefined) return seconds;
  if (value.length > MAX_RETRY_AFTER_LENGTH) return undefined;
  const at = parseHttpDate(text, nowEpochMs);
  if (at === undefined || !Number.isFinite(nowEpochMs)) return undefined;
  const wait = at - nowEpochMs;
  return wait > 0 ? Math.min(wait, MAX_RETRY_AFTER_MS) : 0;
}

/** Reads one header from a fetch `Headers`, a Node/undici header record, or a `[name, value]` list. */
export function readHeader(headers: unknown, name: string): string | undefined {
  if (headers === null || typeof headers !== 'object') return undefined;
  if (typeof (headers as { get?: unknown }).get === 'function') {
    const v = (headers as { get(n: string): unknown }).get(name);
    return typeof v === 'string' ? v : undefined;
  }
  const v = (headers as Record<string, unknown>)[name];
  if (typeof v === 'string') return v;
  if (Array.isArray(v) && typeof v[0] === 'string') return v[0];
  return undefined;
}

/**
 * The `Retry-After` wait of a 429 or 503 (a response, or an error carrying `status`/`statusCode` and
 * `headers`), in ms; `undefined` for other statuses or without a valid header.
 */
export function retryAfterMs(
  status: number | undefined,
  headers: unknown,
  nowEpochMs: number,
): number | undefined {
  if (status === undefined || !RETRY_AFTER_STATUS.has(status)) return undefined;
  return parseRetryAfter(readHeader(headers, 'retry-after'), nowEpochMs);
}
