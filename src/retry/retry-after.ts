import { MAX_RETRY_AFTER_LENGTH, MAX_RETRY_AFTER_MS, RETRY_AFTER_STATUS } from './constants.js';
import { parseHttpDate } from './http-date.js';

/**
 * `Retry-After` (RFC 9110 §10.2.3, SPEC R3): the server's own instruction on when to come back, as
 * `delay-seconds` or an HTTP-date. For 429 and 503 the client waits exactly that, never its own
 * backoff: the server knows its recovery better than a random jitter does.
 */

/** delay-seconds: any run of digits (the 64-character bound applies first); one too large to represent is the largest wait. */
const SECONDS = /^\d+$/;

/**
 * The wait a `Retry-After` value asks for, in ms, or `undefined` when the value is malformed (then
 * the client falls back to its own backoff). A date is read against `nowEpochMs` (the clock's
 * `epochNow()`); a date in the past means 0. Bounded: values over 64 characters are refused, and
 * waits are capped at 2^31 − 1 ms. Surrounding spaces and tabs are allowed.
 */
export function parseRetryAfter(value: unknown, nowEpochMs: number): number | undefined {
  if (typeof value !== 'string' || value.length > MAX_RETRY_AFTER_LENGTH) return undefined;
  const text = value.trim();
  if (SECONDS.test(text)) return Math.min(Number(text) * 1000, MAX_RETRY_AFTER_MS);
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
