import type { DependencyEvent } from '../../../src/dependency/index.js';
import { createHttpClient } from '../../../src/http/index.js';
import { CLIENT, type FaultCase, phaseMs, type Staged } from './catalogue.js';

/**
 * One cell of the fault matrix: a fresh fault server, a fresh prazo client, one logical call of one
 * kind, and what came of it, judged on both sides: the client's error and attempts (timed here, from
 * the executor's events), and the copies the server received.
 *
 * The cells share nothing (each has its own server, client, dependency and retry budget), so the
 * matrix runs them concurrently ({@link runMatrix}).
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

/** One cell to run: its fault, already staged, the kind of call and the call's id (its path). */
interface Cell {
  readonly fault: FaultCase;
  readonly kind: CallKind;
  readonly id: number;
  readonly staged: Staged;
}

async function stageAll(
  faults: readonly FaultCase[],
  kinds: readonly CallKind[],
  first: number,
): Promise<Cell[]> {
  const plan = faults.flatMap((fault) => kinds.map((kind) => ({ fault, kind })));
  const settled = await Promise.allSettled(plan.map(({ fault }) => fault.stage()));
  const failed = settled.find((s) => s.status === 'rejected');
  if (failed !== undefined) {
    await Promise.all(settled.map((s) => (s.status === 'fulfilled' ? s.value.stop() : undefined)));
    throw failed.reason;
  }
  return plan.map((p, i) => ({
    ...p,
    id: first + i,
    staged: (settled[i] as PromiseFulfilledResult<Staged>).value,
  }));
}

/** Between two cells' starts, in ms: one cell's start (client, connect, request written) is not another's. */
export const STAGGER_MS = 30;

/** About how long a cell's call lasts when it ends as it must: phase timer × attempts, or its wait. */
function expectedMs(fault: FaultCase, kind: CallKind): number {
  const end = kind === 'POST' ? fault.once : fault.idempotent;
  return end.minMs ?? (fault.phase === undefined ? 0 : end.attempts * phaseMs(fault.phase));
}

/**
 * Every fault × every kind, results keyed `<fault>/<kind>`. All faults are staged first (servers
 * listening, child processes up, black holes filled), so no process is spawned and no port bound
 * while a phase timer is measured. Faults marked `stageLast` (a port that must stay free) are
 * staged after every other server listens, so no server of this matrix can be given their port.
 * Then the cells run concurrently, started {@link STAGGER_MS} apart, longest first: started all at
 * once, thirty first attempts wrote their requests in one burst, and phase timers armed after it
 * fired up to 100 ms late against the tolerance of max(20 ms, 10 %).
 */
export async function runMatrix(
  faults: readonly FaultCase[],
  kinds: readonly CallKind[] = KINDS,
): Promise<Map<string, CellResult>> {
  const early = await stageAll(
    faults.filter((f) => !f.stageLast),
    kinds,
    1,
  );
  let late: Cell[];
  try {
    late = await stageAll(
      faults.filter((f) => f.stageLast),
      kinds,
      early.length + 1,
    );
  } catch (e) {
    await Promise.all(early.map((c) => c.staged.stop()));
    throw e;
  }
  const cells = [...early, ...late].sort((a, b) => expectedMs(b.fault, b.kind) - expectedMs(a.fault, a.kind));
  const running: Promise<CellResult>[] = [];
  for (const [i, c] of cells.entries()) {
    if (i > 0) await new Promise((resolve) => setTimeout(resolve, STAGGER_MS));
    const result = runCell(c.fault, c.kind, c.id, c.staged);
    result.catch(() => {}); // observed by Promise.all below; not unhandled while later cells start
    running.push(result);
  }
  const results = await Promise.all(running);
  return new Map(results.map((r) => [`${r.fault}/${r.kind}`, r]));
}

/** One call through a fresh client against `staged`; stops `staged` when done. */
export async function runCell(
  fault: FaultCase,
  kind: CallKind,
  id: number,
  staged: Staged,
): Promise<CellResult> {
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
