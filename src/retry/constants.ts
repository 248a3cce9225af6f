import { MAX_TIMER_DELAY_MS } from '../clock/clock.js';

/** What counts as retryable, and the bounds of backoff and `Retry-After`, in one place (SPEC R2–R4). */

/** HTTP statuses worth another attempt (SPEC R2). Everything else the server said on purpose. */
export const RETRYABLE_STATUS: ReadonlySet<number> = new Set([408, 429, 500, 502, 503, 504]);

/**
 * Statuses that say the server failed (every 5xx, 408, 429), whether or not they are retried: their
 * latency never calibrates the healthy p99 (SPEC C4), and only they can carry a pushback (X6).
 */
export function isFailureStatus(status: number): boolean {
  return status >= 500 || status === 408 || status === 429;
}

/** Statuses whose `Retry-After` is the server's own instruction on when to come back (SPEC R3). */
export const RETRY_AFTER_STATUS: ReadonlySet<number> = new Set([429, 503]);

/**
 * Error codes meaning the request never reached a live server (SPEC R4: retry at once, ideally on
 * another instance): refused, unreachable, the connect timed out, a transient DNS failure.
 * `ENOTFOUND` is deliberately absent: a name that does not resolve will not resolve a few ms later
 * (a typo, a deleted service), so retrying only spends the budget.
 */
export const CONNECT_FAILURE_CODES: ReadonlySet<string> = new Set([
  'ECONNREFUSED',
  'ETIMEDOUT', // the OS gave up on the TCP handshake
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EHOSTDOWN',
  'ENETDOWN',
  'EAI_AGAIN', // DNS: temporary failure in name resolution
  'UND_ERR_CONNECT_TIMEOUT', // undici's ConnectTimeoutError
]);

/**
 * Error codes of a connection that died under the request. Retryable only before any response byte
 * (SPEC R2); after that the server may have acted, so an error marked with `markResponseStarted` is not.
 * `UND_ERR_SOCKET` is undici's "other side closed" (typically a keep-alive connection the server had
 * just closed). Its `socket.bytesRead` counts the whole connection's life, not this request, so it
 * cannot tell "before the response" apart; an error thrown by undici's `request()` itself is.
 */
export const CONNECTION_LOST_CODES: ReadonlySet<string> = new Set([
  'ECONNRESET',
  'EPIPE',
  'ECONNABORTED',
  'UND_ERR_SOCKET',
]);

/** undici's response timeout (no response head in time): same rule as prazo's ResponseTimeoutError. */
export const RESPONSE_TIMEOUT_CODES: ReadonlySet<string> = new Set(['UND_ERR_HEADERS_TIMEOUT']);

/** undici's body timeout (the body stalled): same rule as prazo's BodyTimeoutError. */
export const BODY_TIMEOUT_CODES: ReadonlySet<string> = new Set(['UND_ERR_BODY_TIMEOUT']);

/** gRPC's UNAVAILABLE: the one status gRPC itself documents as safe to retry. */
export const GRPC_UNAVAILABLE = 14;

/** How deep `cause` chains (fetch's `TypeError: fetch failed` → the socket error) are followed. */
export const MAX_CAUSE_DEPTH = 4;

/** How many members of an AggregateError (happy-eyeballs connects) are looked at. */
export const MAX_AGGREGATE_ERRORS = 8;

/**
 * A `Retry-After` value longer than this is malformed (an HTTP-date is 29 characters), unless it is
 * digits only: delta-seconds of any length, read in one pass (past the cap: the longest wait).
 */
export const MAX_RETRY_AFTER_LENGTH = 64;

/**
 * The farthest instant from 1970 an epoch time can name, in ms (ECMAScript's time range, ±100 million
 * days; year 275760). A "now" past it is no clock's reading: an HTTP-date read against it would be
 * arithmetic on numbers that have lost their milliseconds (1e308 − a date is 1e308).
 */
export const MAX_EPOCH_MS = 8.64e15;

/** The longest wait a `Retry-After` can ask for, in ms (what a timer can hold, about 24.8 days). */
export const MAX_RETRY_AFTER_MS = MAX_TIMER_DELAY_MS;

/**
 * The response header (HTTP) and trailer (gRPC metadata) by which a server pushes back (SPEC X6): gRPC's
 * own name (proposal A6), read the same way on both.
 */
export const PUSHBACK_HEADER = 'grpc-retry-pushback-ms';

/** A pushback value longer than this is not an integer worth parsing ("-2147483648" is 11). */
export const MAX_PUSHBACK_LENGTH = 16;

/** The request header carrying an idempotency key end to end (SPEC R5, H2). */
export const IDEMPOTENCY_KEY_HEADER = 'idempotency-key';

/** Longest idempotency key accepted, in characters. */
export const MAX_IDEMPOTENCY_KEY_LENGTH = 255;
