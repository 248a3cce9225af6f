import { Readable } from 'node:stream';

/**
 * Whether a request may be sent more than once (SPEC R5, H2). The rules themselves (idempotent
 * methods, valid keys) live in `retry/idempotency.ts`; what HTTP adds is the body: a stream is
 * consumed by the first attempt, so a request with one is sent once even when its method is
 * idempotent.
 */

/** A body that can be sent again as is: none, a string, bytes, or a FormData. */
export function isReplayableBody(body: unknown): boolean {
  if (body == null || typeof body === 'string' || body instanceof Uint8Array) return true;
  if (body instanceof Readable) return false;
  // undici serialises a FormData (its own or Node's global one) afresh for each attempt
  if ((body as { [Symbol.toStringTag]?: unknown })[Symbol.toStringTag] === 'FormData') return true;
  return !(typeof body === 'object' && (Symbol.asyncIterator in body || Symbol.iterator in body));
}
