import type { SpanOutcome, SpanRecord, TracePiece } from './types.js';

/**
 * The parent's half of the demo's traces (issue #26 item 2): the pieces every service of a stack
 * kept (`recorder.ts`) are stitched by trace id into whole checkouts, one is chosen to be drawn, and
 * the span where its time ran out is found.
 *
 * The input crossed a process boundary: every span is checked (ids, finite times, an end not before
 * its start, a known kind and outcome), bad ones are left out, a span whose parent is missing hangs
 * from the trace's root, and a trace without the gateway's server span (a piece from below only) is
 * not a checkout: it is not drawn. Nothing here throws on bad input; at worst there is no trace.
 */

/** A span of a stitched trace, its times in ms from the checkout's arrival at the gateway. */
export interface WaterfallSpan
  extends Omit<SpanRecord, 'startMs' | 'endMs' | 'deadlineEpochMs' | 'giveUpEpochMs' | 'events'> {
  readonly startMs: number;
  readonly endMs: number;
  /** Hops from the root (the gateway's server span is 0). */
  readonly depth: number;
  /** Server spans: the deadline the service read, in ms from the trace's start. */
  readonly deadlineMs?: number;
  readonly events?: readonly { readonly name: string; readonly atMs: number; readonly detail?: string }[];
}

/** One checkout's trace, ready to draw. */
export interface Waterfall {
  readonly traceId: string;
  /** Epoch ms of the checkout's arrival at the gateway. */
  readonly startEpochMs: number;
  /** The gateway's work for it, in ms (its server span). */
  readonly durationMs: number;
  readonly failed: boolean;
  /** Every span, ordered by start (then depth). */
  readonly spans: readonly WaterfallSpan[];
  /** The deadline the gateway gave the request (prazo), in ms from the start. */
  readonly deadlineMs?: number;
  /** When the user gave up, in ms from the start. */
  readonly giveUpMs?: number;
  /**
   * The span marked on the drawing: where the deadline (else the user's patience) ran out — the
   * deepest span still waiting at that instant, a timeout first — or, for a failure that came
   * sooner, the first span to fail.
   */
  readonly ranOut?: { readonly spanId: string; readonly how: 'deadline' | 'gave-up' | 'failed' };
  /** Services on the trace, in the order of the chain. */
  readonly hops: readonly string[];
  /** Spans the services did not keep (their per-trace cap) or that were malformed. */
  readonly dropped: number;
}

/** The trace drawn for one stack in one scenario, and what it was chosen from. */
export interface TraceChoice {
  readonly stack: string;
  readonly waterfall: Waterfall | undefined;
  /** Whole checkouts stitched (with the gateway's server span). */
  readonly sampled: number;
  /** Of those, failed ones. */
  readonly failed: number;
}

/** How the drawn checkout is chosen, said in the report. */
export const REPRESENTATIVE_RULE =
  'the failed checkout whose duration is closest to the median of the failed ones, else (none failed) the slowest; ' +
  'chosen among the checkouts each service traced (the same sample at every hop: the traces with the smallest ids)';

const KINDS = new Set(['server', 'call', 'attempt']);
const OUTCOMES = new Set<SpanOutcome>(['ok', 'error', 'timeout', 'cancelled', 'refused', 'open']);
const ID32 = /^[0-9a-f]{32}$/;
const ID16 = /^[0-9a-f]{16}$/;
/** How far apart two services' clocks may read the same instant (whole ms, converted once each). */
const SKEW_MS = 2;
/** Within this many ms of the deadline, a span that ended is one the deadline ended. */
const DEADLINE_SLACK_MS = 10;

const finite = (x: unknown): x is number => typeof x === 'number' && Number.isFinite(x);

/** True for a span that can be drawn (what crossed the IPC is checked, not trusted). */
export function isValidSpan(span: unknown): span is SpanRecord {
  if (span === null || typeof span !== 'object') return false;
  const s = span as Partial<SpanRecord>;
  return (
    typeof s.traceId === 'string' &&
    ID32.test(s.traceId) &&
    typeof s.spanId === 'string' &&
    ID16.test(s.spanId) &&
    (s.parentId === undefined || (typeof s.parentId === 'string' && ID16.test(s.parentId))) &&
    typeof s.service === 'string' &&
    typeof s.name === 'string' &&
    typeof s.kind === 'string' &&
    KINDS.has(s.kind) &&
    typeof s.outcome === 'string' &&
    OUTCOMES.has(s.outcome) &&
    finite(s.startMs) &&
    finite(s.endMs) &&
    s.endMs >= s.startMs
  );
}

interface Raw {
  readonly traceId: string;
  readonly spans: SpanRecord[];
  dropped: number;
}

/** The services' pieces grouped by trace id, bad spans out, each span once. */
function group(pieces: readonly unknown[]): Map<string, Raw> {
  const traces = new Map<string, Raw>();
  const seen = new Set<string>();
  for (const piece of pieces) {
    if (piece === null || typeof piece !== 'object') continue;
    const p = piece as Partial<TracePiece>;
    const spans = Array.isArray(p.spans) ? p.spans : [];
    let bad = finite(p.dropped) && p.dropped > 0 ? Math.floor(p.dropped) : 0;
    for (const span of spans) {
      if (!isValidSpan(span) || seen.has(`${span.traceId}/${span.spanId}`)) {
        bad += 1;
        continue;
      }
      seen.add(`${span.traceId}/${span.spanId}`);
      let raw = traces.get(span.traceId);
      if (raw === undefined) {
        raw = { traceId: span.traceId, spans: [], dropped: 0 };
        traces.set(span.traceId, raw);
      }
      raw.spans.push(span);
    }
    if (bad > 0 && typeof p.traceId === 'string') {
      const raw = traces.get(p.traceId);
      if (raw !== undefined) raw.dropped += bad;
    }
  }
  return traces;
}

const KIND_ORDER = { server: 0, call: 1, attempt: 2 } as const;
const CHAIN = ['gateway', 'orders', 'inventory', 'supplier'];
const chainIndex = (service: string): number => {
  const i = CHAIN.findIndex((c) => service === c || service.startsWith(`${c} `));
  return i < 0 ? CHAIN.length : i;
};

/** One trace stitched, or undefined when it has no gateway server span (not a whole checkout). */
export function stitchTrace(raw: {
  traceId: string;
  spans: readonly SpanRecord[];
  dropped?: number;
}): Waterfall | undefined {
  const byId = new Map(raw.spans.map((s) => [s.spanId, s]));
  const root = raw.spans
    .filter(
      (s) =>
        s.kind === 'server' &&
        chainIndex(s.service) === 0 &&
        (s.parentId === undefined || !byId.has(s.parentId)),
    )
    .sort((a, b) => a.startMs - b.startMs)[0];
  if (root === undefined) return undefined;
  const depthOf = new Map<string, number>();
  /** Spans whose parent chain does not reach the root: they hang from it. */
  const adopted = new Set<string>();
  const depth = (span: SpanRecord): number => {
    const known = depthOf.get(span.spanId);
    if (known !== undefined) return known;
    let d = 0;
    let at: SpanRecord | undefined = span;
    const path = new Set<string>();
    while (at !== undefined && at !== root && !path.has(at.spanId)) {
      path.add(at.spanId);
      d += 1;
      at = at.parentId === undefined ? undefined : byId.get(at.parentId);
    }
    // A span whose parent chain does not reach the root (a parent not kept, a cycle) hangs from it.
    const value = at === root ? d : 1;
    if (at !== root) adopted.add(span.spanId);
    depthOf.set(span.spanId, value);
    return value;
  };
  const t0 = root.startMs;
  const rel = (epoch: number): number => Math.round((epoch - t0) * 10) / 10;
  const spans: WaterfallSpan[] = raw.spans.map((s) => {
    const { startMs, endMs, deadlineEpochMs, giveUpEpochMs, events, ...rest } = s;
    const d = s === root ? 0 : depth(s);
    return {
      ...rest,
      ...(s === root ? {} : { parentId: adopted.has(s.spanId) ? root.spanId : s.parentId }),
      depth: d,
      startMs: rel(startMs),
      endMs: rel(endMs),
      ...(finite(deadlineEpochMs) ? { deadlineMs: rel(deadlineEpochMs) } : {}),
      ...(Array.isArray(events)
        ? {
            events: events
              .filter(
                (e) => e !== null && typeof e === 'object' && typeof e.name === 'string' && finite(e.atMs),
              )
              .map((e) => ({ ...e, atMs: rel(e.atMs) })),
          }
        : {}),
    };
  });
  alignToParents(spans);
  spans.sort((a, b) => a.startMs - b.startMs || a.depth - b.depth || KIND_ORDER[a.kind] - KIND_ORDER[b.kind]);
  const deadlineMs = finite(root.deadlineEpochMs) ? rel(root.deadlineEpochMs) : undefined;
  const giveUpMs = finite(root.giveUpEpochMs) ? rel(root.giveUpEpochMs) : undefined;
  const durationMs = rel(root.endMs);
  const failed =
    root.outcome !== 'ok' ||
    (root.status !== undefined && root.status !== 200) ||
    (giveUpMs !== undefined && durationMs > giveUpMs);
  const hops = [
    ...new Set(spans.filter((s) => s.kind === 'server').map((s) => s.service.split(' ')[0]!)),
  ].sort((a, b) => chainIndex(a) - chainIndex(b));
  const ranOut = failed ? whereItRanOut(spans, deadlineMs, giveUpMs) : undefined;
  return {
    traceId: raw.traceId,
    startEpochMs: t0,
    durationMs,
    failed,
    spans,
    ...(deadlineMs === undefined ? {} : { deadlineMs }),
    ...(giveUpMs === undefined ? {} : { giveUpMs }),
    ...(ranOut === undefined ? {} : { ranOut }),
    hops,
    dropped: raw.dropped ?? 0,
  };
}

/**
 * The services' clocks agree only to about a millisecond (each converts its monotonic time to the
 * wall clock once, and the wall clock counts whole ms): a request may seem to arrive a fraction of a
 * ms before the attempt that sent it. A child that starts less than {@link SKEW_MS} before its
 * parent is moved to the parent's start (its end no earlier), so the rows read in causal order; a
 * larger gap is left as measured.
 */
function alignToParents(spans: WaterfallSpan[]): void {
  const byId = new Map(spans.map((s, i) => [s.spanId, i]));
  const order = spans.map((_, i) => i).sort((a, b) => spans[a]!.depth - spans[b]!.depth);
  for (const i of order) {
    const span = spans[i]!;
    const p = span.parentId === undefined ? undefined : byId.get(span.parentId);
    if (p === undefined) continue;
    const parentStart = spans[p]!.startMs;
    const early = parentStart - span.startMs;
    if (early > 0 && early < SKEW_MS)
      spans[i] = { ...span, startMs: parentStart, endMs: Math.max(span.endMs, parentStart) };
  }
}

/**
 * Where a failed checkout's time ran out. With a deadline (prazo's, else the user's give-up): the
 * spans that failed while waiting across it (started before it, ended at it or later), a timeout
 * before any other outcome, the deepest of them (the hop furthest down the chain that was still
 * waiting), the latest started on a tie. Failed before the deadline: the first span to fail (the
 * earliest end among the failed ones, the deepest on a tie), where the failure started.
 */
export function whereItRanOut(
  spans: readonly WaterfallSpan[],
  deadlineMs: number | undefined,
  giveUpMs: number | undefined,
): Waterfall['ranOut'] {
  const failed = spans.filter((s) => s.outcome !== 'ok' && s.depth > 0);
  const limit = deadlineMs ?? giveUpMs;
  if (limit !== undefined) {
    const across = failed.filter((s) => s.startMs < limit && s.endMs >= limit - DEADLINE_SLACK_MS);
    const pick = (list: WaterfallSpan[]): WaterfallSpan | undefined =>
      [...list].sort((a, b) => b.depth - a.depth || b.startMs - a.startMs)[0];
    const best = pick(across.filter((s) => s.outcome === 'timeout')) ?? pick(across);
    if (best !== undefined)
      return { spanId: best.spanId, how: deadlineMs !== undefined ? 'deadline' : 'gave-up' };
  }
  const first = [...failed].sort((a, b) => a.endMs - b.endMs || b.depth - a.depth)[0];
  return first === undefined ? undefined : { spanId: first.spanId, how: 'failed' };
}

/** The representative of a list of checkouts (see {@link REPRESENTATIVE_RULE}). */
export function representative(traces: readonly Waterfall[]): Waterfall | undefined {
  const failed = traces.filter((t) => t.failed);
  if (failed.length > 0) {
    const sorted = failed.map((t) => t.durationMs).sort((a, b) => a - b);
    const median = sorted[Math.floor((sorted.length - 1) / 2)]!;
    return [...failed].sort(
      (a, b) =>
        Math.abs(a.durationMs - median) - Math.abs(b.durationMs - median) || a.startEpochMs - b.startEpochMs,
    )[0];
  }
  return [...traces].sort((a, b) => b.durationMs - a.durationMs || a.startEpochMs - b.startEpochMs)[0];
}

/** Stitches every piece one stack's services kept and chooses the checkout to draw. */
export function chooseTrace(stack: string, pieces: readonly unknown[] | undefined): TraceChoice {
  const whole: Waterfall[] = [];
  for (const raw of group(Array.isArray(pieces) ? pieces : []).values()) {
    const trace = stitchTrace(raw);
    if (trace !== undefined) whole.push(trace);
  }
  return {
    stack,
    waterfall: representative(whole),
    sampled: whole.length,
    failed: whole.filter((t) => t.failed).length,
  };
}
