import { randomUUID } from 'node:crypto';
import { IDEMPOTENCY_KEY_HEADER, MAX_IDEMPOTENCY_KEY_LENGTH } from './constants.js';
import { readHeader } from './retry-after.js';

/**
 * Idempotency (SPEC R5, H2): two copies of a read are harmless, two copies of a charge are a
 * financial incident. Even with cancellation the race exists (the second copy may be processed before
 * the cancel is seen), so retries and hedges are only for methods RFC 9110 §9.2.2 defines as
 * idempotent, or for a request whose key makes the server apply it once.
 */

/** Methods that may run more than once (RFC 9110 §9.2.2). */
export const IDEMPOTENT_METHODS: ReadonlySet<string> = new Set([
  'GET',
  'HEAD',
  'OPTIONS',
  'PUT',
  'DELETE',
  'TRACE',
]);

/** True for an idempotent HTTP method (method names are case-sensitive; `get` is not `GET`). */
export function isIdempotentMethod(method: string): boolean {
  return IDEMPOTENT_METHODS.has(method);
}

/** A valid key: 1 to 255 visible ASCII characters (a header value that cannot smuggle a line break). */
export function isValidIdempotencyKey(key: unknown): key is string {
  return (
    typeof key === 'string' &&
    key.length > 0 &&
    key.length <= MAX_IDEMPOTENCY_KEY_LENGTH &&
    /^[\x21-\x7e]+$/.test(key)
  );
}

/**
 * True when a request may be sent more than once: an idempotent method, or a valid
 * `Idempotency-Key` header (fetch `Headers` or a lower-cased header record).
 */
export function isIdempotentRequest(request: {
  readonly method: string;
  readonly headers?: unknown;
}): boolean {
  return (
    isIdempotentMethod(request.method) ||
    isValidIdempotencyKey(readHeader(request.headers, IDEMPOTENCY_KEY_HEADER))
  );
}

/** A fresh idempotency key (a random UUID), for a POST the caller wants to make retryable. */
export function generateIdempotencyKey(): string {
  return randomUUID();
}
