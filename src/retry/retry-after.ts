import { MAX_EPOCH_MS, MAX_RETRY_AFTER_LENGTH, MAX_RETRY_AFTER_MS, RETRY_AFTER_STATUS } from './constants.js';
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
 * `epochNow()`); a date in the past means 0, and a `nowEpochMs` that is no epoch time (NaN, or past
 * ECMAScript's ±8.64e15) reads no date at all. Surrounding spaces and tabs are allowed. Bounded: a
 * value over 64 characters once trimmed (a date padded with spaces is still a date) is refused unless
 * it is delay-seconds, which a run of digits is at any
 * length (read in one pass), and waits are capped at 2^31 − 1 ms, longer than any deadline.
 */
export function parseRetryAfter(value: unknown, nowEpochMs: number): number | undefined {
  if (typeof value !== 'string') return undefined;
  const text = value.trim();
  const seconds = delaySecondsMs(text);
  if (seconds !== undefined) return seconds;
  if (text.length > MAX_RETRY_AFTER_LENGTH) return undefined;
  if (typeof nowEpochMs !== 'number' || !(Math.abs(nowEpochMs) <= MAX_EPOCH_MS)) return undefined;
  const at = parseHttpDate(text, nowEpochMs);
  if (at === undefined) return undefined;
  const wait = at - nowEpochMs;
  return wait > 0 ? Math.min(wait, MAX_RETRY_AFTER_MS) : 0;
}

/** A header name equal to lower-case `name` ignoring case (lengths first: most names differ in it). */
const sameName = (key: unknown, name: string): boolean =>
  typeof key === 'string' && key.length === name.length && key.toLowerCase() === name;

/**
 * One header's value as given, unread: from a fetch `Headers` or anything with `get(name)` (a `Map`,
 * grpc-js `Metadata`), a header record (Node's and undici's, lower-cased; a fetch init's, in any case:
 * an exact own key first, then one equal ignoring case), or a fetch init's list of `[name, value]`
 * pairs (names in any case). `name` is lower-case. Own keys only: a `retry-after` planted on
 * `Object.prototype` is no response's header. Never throws: headers that cannot be read (a `get` or
 * getter that throws, a revoked Proxy) have no value.
 */
export function headerValue(headers: unknown, name: string): unknown {
  if (headers === null || typeof headers !== 'object') return undefined;
  try {
    const get = (headers as { get?: unknown }).get;
    if (typeof get === 'function') return get.call(headers, name);
    if (Array.isArray(headers)) {
      for (const pair of headers) {
        if (Array.isArray(pair) && sameName(pair[0], name)) return pair[1];
      }
      return undefined;
    }
    const record = headers as Record<string, unknown>;
    if (Object.hasOwn(record, name)) return record[name];
    for (const key of Object.keys(record)) if (sameName(key, name)) return record[key];
  } catch {
    // unreadable headers: none
  }
  return undefined;
}

/**
 * One header as a string (see {@link headerValue} for the forms read); a list of values (undici's
 * record for a repeated header, `Metadata`) is its first, as Node keeps the first of a repeated
 * `Retry-After`.
 */
export function readHeader(headers: unknown, name: string): string | undefined {
  const v = headerValue(headers, name);
  if (typeof v === 'string') return v;
  try {
    const first: unknown = Array.isArray(v) ? v[0] : undefined;
    return typeof first === 'string' ? first : undefined;
  } catch {
    return undefined; // a list that cannot be read (a Proxy): no value
  }
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
