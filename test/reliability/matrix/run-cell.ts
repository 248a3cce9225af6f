import { createHttpClient } from '../../../src/http/index.js';
import { type FaultCase, TIMEOUTS } from './catalogue.js';

/**
 * One cell of the fault matrix: a fresh fault server, a fresh prazo client, one logical call of one
 * kind, and what came of it, judged on both sides (the client's error, the server's count).
 */

export type CallKind = 'GET' | 'POST' | 'POST+key';
export const KINDS: readonly CallKind[] = ['GET', 'POST', 'POST+key'];

export interface CellResult {
  readonly fault: string;
  readonly kind: CallKind;
  /** The error's `code` (prazo's or Node/undici's), or `HTTP <status>` for an answer. */
  readonly outcome: string;
  /** When it ended: from the call (or, for body faults, from the response head) to the error, in ms. */
  readonly firedMs: number;
  /** Copies of this call the server received. */
  readonly seen: number;
  /** Unkeyed non-idempotent copies beyond the first, server-side (must be 0, SPEC R5). */
  readonly duplicateWrites: number;
  /** Idempotency keys the server saw (every copy of a keyed call must carry the same one). */
  readonly keys: readonly string[];
  /** The error itself, for assertions on its fields. */
  readonly error: unknown;
}

export function codeOf(error: unknown): string {
  const e = error as { code?: unknown; cause?: { code?: unknown } } | undefined;
  if (typeof e?.code === 'string') return e.code;
  if (typeof e?.cause?.code === 'string') return e.cause.code;
  return String(error);
}

export async function runCell(fault: FaultCase, kind: CallKind, id: number): Promise<CellResult> {
  const staged = await fault.stage();
  const client = createHttpClient({
    name: `matrix-${id}`,
    origin: staged.origin,
    connectTimeoutMs: TIMEOUTS.connectMs,
    responseTimeoutMs: TIMEOUTS.responseMs,
    bodyTimeoutMs: TIMEOUTS.bodyMs,
    attempts: 3,
    ...(staged.lookup ? { lookup: staged.lookup } : {}),
  });
  const path = `/call/${id}`;
  const post = kind !== 'GET';
  let outcome: string;
  let error: unknown;
  const t0 = performance.now();
  let from = t0;
  let end: number;
  try {
    const res = await client.request(path, {
      method: post ? 'POST' : 'GET',
      ...(post
        ? { body: JSON.stringify({ call: id }), headers: { 'content-type': 'application/json' } }
        : {}),
      ...(kind === 'POST+key' ? { idempotencyKey: `key-${id}` } : {}),
      deadline: TIMEOUTS.deadlineMs,
    });
    if (fault.inBody) from = performance.now();
    await res.body.text();
    end = performance.now();
    outcome = `HTTP ${res.statusCode}`;
  } catch (e) {
    end = performance.now();
    error = e;
    outcome = codeOf(e);
  }
  await staged.server.settle?.();
  const log = staged.server.log;
  const result: CellResult = {
    fault: fault.name,
    kind,
    outcome,
    firedMs: end - from,
    seen: log.copies(path),
    duplicateWrites: log.duplicateWrites(),
    keys: [...log.byKey().keys()],
    error,
  };
  await client.destroy();
  await staged.stop();
  return result;
}
