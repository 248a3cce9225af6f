import { randomUUID } from 'node:crypto';
import { Readable } from 'node:stream';
import { IDEMPOTENT_METHODS } from './constants.js';

/**
 * Whether a request may be sent more than once (SPEC R5, H2). Retries and hedges duplicate work on
 * the server; only requests whose repetition is harmless may have them: the idempotent methods, or
 * any request carrying an idempotency key end to end (the server deduplicates by key). A POST
 * without a key is sent exactly once, whatever fails.
 */

/** True for GET, HEAD, OPTIONS, PUT and DELETE (case-insensitive). */
export function isIdempotentMethod(method: string): boolean {
  return IDEMPOTENT_METHODS.has(method) || IDEMPOTENT_METHODS.has(method.toUpperCase());
}

/**
 * A body that can be sent again as is. A stream is consumed by the first attempt, so a request
 * with one is sent once even when its method is idempotent.
 */
export function isReplayableBody(body: unknown): boolean {
  if (body == null || typeof body === 'string' || body instanceof Uint8Array) return true;
  if (body instanceof Readable) return false;
  // undici serialises a FormData (its own or Node's global one) afresh for each attempt
  if ((body as { [Symbol.toStringTag]?: unknown })[Symbol.toStringTag] === 'FormData') return true;
  return !(typeof body === 'object' && (Symbol.asyncIterator in body || Symbol.iterator in body));
}

/** A fresh idempotency key: a random UUID, unique per logical request (shared by its attempts). */
export function newIdempotencyKey(): string {
  return randomUUID();
}
