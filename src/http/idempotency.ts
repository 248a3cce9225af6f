/**
 * Whether a request may be sent more than once (SPEC R5, H2). The rules themselves (idempotent
 * methods, valid keys) live in `retry/idempotency.ts`; what HTTP adds is the body: a stream is
 * consumed by the first attempt, so a request with one is sent once even when its method is
 * idempotent.
 */

const isFunction = (value: unknown): boolean => typeof value === 'function';

/**
 * A body that can be sent again as is: none, a string, bytes, a FormData or a Blob (undici reads them
 * afresh for each attempt). Never a stream: anything with `pipe` and `on` functions (undici's own
 * test, which also covers `form-data` and legacy `Stream`s that are not `Readable`s), nor an
 * (async) iterable, which a first attempt consumes.
 */
export function isReplayableBody(body: unknown): boolean {
  if (body == null || typeof body === 'string' || body instanceof Uint8Array) return true;
  if (typeof body !== 'object') return false;
  const b = body as Record<string | symbol, unknown>;
  if (isFunction(b.pipe) && isFunction(b.on)) return false;
  if (body instanceof ArrayBuffer || ArrayBuffer.isView(body)) return true;
  const tag = b[Symbol.toStringTag];
  if (tag === 'FormData') return true;
  if ((tag === 'Blob' || tag === 'File') && isFunction(b.stream) && isFunction(b.arrayBuffer)) return true;
  return !(Symbol.asyncIterator in body || Symbol.iterator in body);
}
