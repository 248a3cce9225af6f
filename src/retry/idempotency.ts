import { randomUUID } from 'node:crypto';
import { IDEMPOTENCY_KEY_HEADER, MAX_IDEMPOTENCY_KEY_LENGTH } from './constants.js';
import { readHeader } from './retry-after.js';

/**
 * Idempotency (SPEC R5, H2): two copies of a read are harmless, two copies of a charge are a
 * financial incident. Even with cancellation the race exists (the second copy may be processed before
 * the cancel is seen), so retries and hedges are only for methods RFC 9110 §9.2.2 defines as
 * idempotent, or for a request whose key makes the server apply it once.
 */

/**
 * Methods RFC 9110 §9.2.2 defines as idempotent: the list a mesh's retry route names (prazo export).
 * QUERY is idempotent too (see {@link isIdempotentMethod}) but kept out of this list: Gateway API's
 * `HTTPMethod` enum cannot name it yet, so an HTTPRoute match on it would be refused.
 */
export const IDEMPOTENT_METHODS: ReadonlySet<string> = new Set([
  'GET',
  'HEAD',
  'OPTIONS',
  'PUT',
  'DELETE',
  'TRACE',
]);

/**
 * `QUERY` (IETF httpbis, "The HTTP QUERY Method"): a GET whose query travels in the body, defined
 * safe and idempotent, so retried and hedged like GET. Its body must be replayable (a string or bytes:
 * a stream is sent once), as any retried request's.
 */
const QUERY = 'QUERY';

/**
 * True for an idempotent HTTP method: RFC 9110's ({@link IDEMPOTENT_METHODS}) and `QUERY`. Method
 * names are case-sensitive; `get` is not `GET`.
 */
export function isIdempotentMethod(method: string): boolean {
  return IDEMPOTENT_METHODS.has(method) || method === QUERY;
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
 * `Idempotency-Key` header (fetch `Headers`, a header record in any case, or `[name, value]` pairs).
 * Anything that is not a readable request (`null`, a getter that throws) is not known to be
 * idempotent: `false`, sent once.
 */
export function isIdempotentRequest(request: {
  readonly method: string;
  readonly headers?: unknown;
}): boolean {
  if (request === null || typeof request !== 'object') return false;
  try {
    return (
      isIdempotentMethod(request.method) ||
      isValidIdempotencyKey(readHeader(request.headers, IDEMPOTENCY_KEY_HEADER))
    );
  } catch {
    return false;
  }
}

/** A fresh idempotency key (a random UUID), for a POST the caller wants to make retryable. */
export function generateIdempotencyKey(): string {
  return randomUUID();
}
