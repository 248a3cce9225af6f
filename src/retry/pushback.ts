import { MAX_TIMER_DELAY_MS } from '../clock/clock.js';
import { MAX_PUSHBACK_LENGTH, PUSHBACK_HEADER } from './constants.js';

/**
 * Pushback (SPEC X6): the server's own word on whether its caller may retry, in gRPC's terms
 * (proposal A6, "Pushback"). A service whose dependency failed has already spent that dependency's
 * retry budget; if its callers retried too, an outage four hops deep would cost one budget per hop
 * (1.1⁴ with prazo, 3⁴ naively). So the failing hop answers "do not retry", and only the hop next to
 * the failure retries: the SRE book's "retry at one layer".
 *
 * The signal is gRPC's metadata entry `grpc-retry-pushback-ms`, read the same way on HTTP responses
 * (prazo already reads gRPC's `grpc-timeout` on HTTP requests, as gRPC-Web and Envoy send it):
 * - a non-negative integer `n`: retry, but not before `n` ms (a `Retry-After` in ms);
 * - a negative integer, or anything that is not an ASCII signed 32-bit integer without unnecessary
 *   leading zeros: **do not retry at all**, and send no further hedge. prazo writes `-1`.
 *
 * grpc-js 1.14 reads an unparseable value as "retry after NaN ms" (at once); A6 says the opposite,
 * and prazo follows A6.
 */

/** What a pushback value says: retry after `afterMs`, or not at all. */
export type Pushback = { readonly retry: true; readonly afterMs: number } | { readonly retry: false };

/** The pushback "do not retry" (shared, frozen). */
export const STOP: Pushback = Object.freeze({ retry: false });

/** The value prazo writes to ask its caller not to retry. */
export const DO_NOT_RETRY = '-1';

/** An ASCII signed integer with no unnecessary leading zeros ("-0" is one). */
const INTEGER = /^(?:0|-?[1-9]\d*)$/;

/**
 * What one `grpc-retry-pushback-ms` value says (surrounding spaces and tabs ignored, as HTTP field
 * values are). `undefined` only for no value at all; any other string that is not a valid signed
 * 32-bit integer means "do not retry", as A6 specifies. Bounded: a value over 16 characters is not
 * parsed at all.
 */
export function parsePushback(value: unknown): Pushback | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string' || value.length > MAX_PUSHBACK_LENGTH) return STOP;
  const text = value.trim();
  if (!INTEGER.test(text)) return STOP;
  const n = Number(text);
  if (n < 0 || n > MAX_TIMER_DELAY_MS) return STOP; // negative, or not a signed 32-bit integer
  return { retry: true, afterMs: n };
}

/**
 * The first `grpc-retry-pushback-ms` of a response's headers or a gRPC status' metadata: an undici /
 * Node header record (string or list), a fetch `Headers` (its comma-joined list is one value, so a
 * repeated header reads as "do not retry"), or grpc-js `Metadata` (whose `get` returns a list).
 */
export function readPushback(headers: unknown): Pushback | undefined {
  if (headers === null || typeof headers !== 'object') return undefined;
  let value: unknown;
  const get = (headers as { get?: unknown }).get;
  if (typeof get === 'function') {
    value = get.call(headers, PUSHBACK_HEADER);
  } else {
    value = (headers as Record<string, unknown>)[PUSHBACK_HEADER];
  }
  if (Array.isArray(value)) {
    if (value.length === 0) return undefined;
    value = value[0];
    if (Buffer.isBuffer(value)) return STOP; // a binary metadata value is not an ASCII integer
  }
  return parsePushback(value ?? undefined);
}
