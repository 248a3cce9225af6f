import type { DependencyEvent } from '../../../src/dependency/index.js';
import { createHttpClient } from '../../../src/http/index.js';
import { CLIENT, type FaultCase } from './catalogue.js';

/**
 * One cell of the fault matrix: a fresh fault server, a fresh prazo client, one logical call of one
 * kind, and what came of it, judged on both sides: the client's error and attempts (timed here, from
 * the executor's events), and the copies the server received.
 */

export type CallKind = 'GET' | 'POST' | 'POST+key';
export const KINDS: readonly CallKind[] = ['GET', 'POST', 'POST+key'];

export interface CellResult {
  readonly fault: string;
  readonly kind: CallKind;
  /** The error's `code` (prazo's or Node/undici's), or `HTTP <status>` for an answer. */
  readonly outcome: string;
  /** The whole call, in ms (for body faults: from the response head to the error). */
  readonly totalMs: number;
  /** Each attempt's duration, measured here between the executor's attempt and attempt-end events. */
  readonly attemptMs: readonly number[];
  /** Copies of this call the server received. */
  readonly seen: number;
  /** Unkeyed non-idempotent copies beyond the first, server-side (must be 0, SPEC R5). */
  readonly duplicateWrites: number;
  /** Idempotency keys the server saw (every copy of a keyed call must carry the same one). */
  readonly keys: readonly string[];
  /** Server-side gap between the first two copies, in ms (a Retry-After must be honoured). */
  readonly gapMs: number | undefined;
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
  const { deadlineMs, ...options } = CLIENT;
  const client = createHttpClient({
    name: `matrix-${id}`,
    origin: staged.origin,
    ...options,
    ...(staged.lookup ? { lookup: staged.lookup } : {}),
  });
  const starts: number[] = [];
  const attemptMs: number[] = [];
  const sub = client.options.dependency.on((e: DependencyEvent) => {
    if (e.type === 'attempt') starts.push(performance.now());
    if (e.type === 'attempt-end') attemptMs.push(performance.now() - starts[e.attempt - 1]!);
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
      deadline: deadlineMs,
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
  sub.dispose();
  await staged.server.settle?.();
  const log = staged.server.log;
  const copies = log.all.filter((r) => r.path === path);
  const result: CellResult = {
    fault: fault.name,
    kind,
    outcome,
    totalMs: end - from,
    attemptMs,
    seen: copies.length,
    duplicateWrites: log.duplicateWrites(),
    keys: [...log.byKey().keys()],
    gapMs: copies.length >= 2 ? copies[1]!.at - copies[0]!.at : undefined,
    error,
  };
  await client.destroy();
  await staged.stop();
  return result;
}
