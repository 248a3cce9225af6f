import type { Dispatcher } from 'undici';
import { describe, expect, it } from 'vitest';
import { FakeClock } from '../../clock/fake.js';
import { ThrottledError } from '../../errors/throttle.js';
import { ResponseTimeoutError } from '../../errors/timeout.js';
import { SpanRecorder, withTraceparent } from './recorder.js';
import {
  formatTraceparent,
  parseTraceparent,
  randomIds,
  sequentialIds,
  traceStartEpochMs,
} from './traceparent.js';
import type { SpanRecord } from './types.js';

/** A dispatch that keeps what it was given and lets the test answer through the handler. */
function fakeDispatch() {
  const sent: { opts: Dispatcher.DispatchOptions; handler: Dispatcher.DispatchHandler }[] = [];
  const dispatch = (opts: Dispatcher.DispatchOptions, handler: Dispatcher.DispatchHandler): boolean => {
    sent.push({ opts, handler });
    return true;
  };
  return { sent, dispatch: dispatch as Dispatcher['dispatch'] };
}

const controller = {} as Dispatcher.DispatchController;
const traceparentOf = (opts: Dispatcher.DispatchOptions) =>
  parseTraceparent((opts.headers as Record<string, string>).traceparent);
const byKind = (spans: readonly SpanRecord[], kind: SpanRecord['kind']) =>
  spans.filter((s) => s.kind === kind);

describe('the demo services span recorder (issue #26), on the fake clock', () => {
  it('prazo: a server span, the call, its attempts and decisions; each request carries its attempt as parent', () => {
    const clock = new FakeClock({ epoch: 1_000_000 });
    const recorder = new SpanRecorder({ service: 'inventory', clock, ids: sequentialIds() });
    const upstream = formatTraceparent('ab'.repeat(16), 'cd'.repeat(8));
    const server = recorder.startServer('GET /stock', { traceparent: upstream });
    expect(server.traceId).toBe('ab'.repeat(16));
    const { sent, dispatch } = fakeDispatch();
    const intercepted = recorder.interceptor('supplier')(dispatch);
    server.run(() => {
      const call = recorder.tracer.startCall('supplier', 1_500, undefined)!;
      clock.advance(2);
      const first = call.attempt('original', 1, 1_498, 350, 'http://127.0.0.1:1', () =>
        intercepted({ origin: 'http://127.0.0.1:1', path: '/quote', method: 'GET', headers: { a: '1' } }, {}),
      );
      clock.advance(350);
      first.end(
        'timeout',
        false,
        new ResponseTimeoutError({ dependency: 'supplier', elapsedMs: 350, timeoutMs: 350 }),
        undefined,
      );
      const hedge = call.attempt('hedge', 2, 1_148, 350, 'http://127.0.0.1:2', () =>
        intercepted({ origin: 'http://127.0.0.1:2', path: '/quote', method: 'GET', headers: ['a', '1'] }, {}),
      );
      clock.advance(80);
      hedge.end('success', true, {}, { 'http.response.status_code': 200 });
      call.event('budget-refused', { 'prazo.attempt.kind': 'retry' });
      call.end(true, {}, { 'http.response.status_code': 200 });
    });
    clock.advance(1);
    server.end({ status: 200, deadlineEpochMs: 1_001_500, giveUpEpochMs: 1_002_000 });

    const [piece] = recorder.collect();
    const spans = piece!.spans;
    const [root] = byKind(spans, 'server');
    expect(root).toMatchObject({
      service: 'inventory',
      name: 'GET /stock',
      parentId: 'cd'.repeat(8),
      outcome: 'ok',
      status: 200,
    });
    expect(root!.startMs).toBe(1_000_000);
    expect(root!.endMs).toBe(1_000_433);
    expect(root!.deadlineEpochMs).toBe(1_001_500);
    const [call] = byKind(spans, 'call');
    expect(call).toMatchObject({
      parentId: root!.spanId,
      name: 'supplier',
      outcome: 'ok',
      timeLeftMs: 1_500,
    });
    expect(call!.events).toEqual([{ name: 'budget-refused', atMs: 1_000_432, detail: 'attempt kind retry' }]);
    const attempts = byKind(spans, 'attempt');
    expect(attempts.map((a) => [a.attempt, a.attemptKind, a.outcome, a.error, a.endMs - a.startMs])).toEqual([
      [1, 'original', 'timeout', 'RESPONSE_TIMEOUT', 350],
      [2, 'hedge', 'ok', undefined, 80],
    ]);
    // Each request on the wire names its attempt's span as its parent, in the same trace.
    expect(
      sent.map((s) => traceparentOf(s.opts)?.parentId ?? parseTraceparent((s.opts.headers as string[])[3])),
    ).toEqual([attempts[0]!.spanId, expect.objectContaining({ parentId: attempts[1]!.spanId })]);
    expect((sent[0]!.opts.headers as Record<string, string>).a).toBe('1');
  });

  it('prazo: a call refused locally is `refused`, with its decision, and sends nothing', () => {
    const clock = new FakeClock();
    const recorder = new SpanRecorder({ service: 'inventory', clock, ids: sequentialIds() });
    const server = recorder.startServer('GET /stock', {});
    server.run(() => {
      const call = recorder.tracer.startCall('supplier', 1_000, undefined)!;
      call.event('throttled', { 'prazo.probability': 0.8 });
      call.end(
        false,
        new ThrottledError({
          dependency: 'supplier',
          requests: 10,
          accepts: 1,
          probability: 0.8,
          windowMs: 1000,
        }),
        undefined,
      );
    });
    server.end({ status: 503 });
    const spans = recorder.collect()[0]!.spans;
    expect(byKind(spans, 'call')[0]).toMatchObject({ outcome: 'refused', error: 'THROTTLED' });
    expect(byKind(spans, 'server')[0]).toMatchObject({ outcome: 'error', status: 503 });
    expect(byKind(spans, 'server')[0]!.parentId).toBeUndefined(); // no traceparent: a new trace
  });

  it('no executor (naive): each request on the wire is an attempt, numbered, with the outcome its handler saw', () => {
    const clock = new FakeClock();
    const recorder = new SpanRecorder({ service: 'orders', clock, ids: sequentialIds() });
    const server = recorder.startServer('GET /orders/checkout', { traceparent: 'garbage' });
    const { sent, dispatch } = fakeDispatch();
    const intercepted = recorder.interceptor('inventory')(dispatch);
    const seen: string[] = [];
    const handler: Dispatcher.DispatchHandler = {
      onRequestStart: () => seen.push('start'),
      onResponseStart: (_c, status) => {
        seen.push(`status ${status}`);
      },
      onResponseEnd: () => seen.push('end'),
      onResponseError: (_c, e) => seen.push(`error ${e.message}`),
    };
    server.run(() => {
      intercepted({ origin: 'http://o', path: '/stock', method: 'GET' }, handler);
      clock.advance(3_000);
      sent[0]!.handler.onResponseError!(controller, new Error('inventory: timeout after 3000 ms'));
      intercepted({ origin: 'http://o', path: '/stock', method: 'GET' }, handler);
      clock.advance(5);
      sent[1]!.handler.onRequestStart!(controller, {});
      sent[1]!.handler.onResponseStart!(controller, 503, {}, 'Service Unavailable');
      sent[1]!.handler.onResponseEnd!(controller, {});
    });
    server.end({ status: undefined }); // the caller had hung up: nothing answered
    expect(seen).toEqual(['error inventory: timeout after 3000 ms', 'start', 'status 503', 'end']);
    const spans = recorder.collect()[0]!.spans;
    expect(byKind(spans, 'call')).toEqual([]);
    const [root] = byKind(spans, 'server');
    expect(root).toMatchObject({ outcome: 'cancelled' });
    expect(byKind(spans, 'attempt').map((a) => [a.attempt, a.attemptKind, a.outcome, a.parentId])).toEqual([
      [1, 'original', 'timeout', root!.spanId],
      [2, 'retry', 'error', root!.spanId],
    ]);
    expect(sent.map((s) => traceparentOf(s.opts)?.traceId)).toEqual([root!.traceId, root!.traceId]);
  });

  it('outside a server span nothing is recorded or sent (the catalog)', () => {
    const recorder = new SpanRecorder({ service: 'gateway', clock: new FakeClock() });
    const { sent, dispatch } = fakeDispatch();
    recorder.interceptor('orders')(dispatch)({ origin: 'http://o', path: '/catalog', method: 'GET' }, {});
    expect(recorder.tracer.startCall('orders', 100, undefined)).toBeUndefined();
    expect(sent[0]!.opts.headers).toBeUndefined();
    expect(recorder.collect()).toEqual([]);
  });

  it('constant memory: keeps the traces with the smallest ids (the same at every hop), spans capped', () => {
    const clock = new FakeClock();
    const ids = (n: number) => n.toString(16).padStart(32, '0');
    const gateway = new SpanRecorder({ service: 'gateway', clock, maxTraces: 5 });
    const supplier = new SpanRecorder({ service: 'supplier #1', clock, maxTraces: 5, maxSpansPerTrace: 2 });
    const order = Array.from({ length: 200 }, (_, i) => ((i * 7919) % 200) + 1); // a shuffled 1..200
    for (const n of order) {
      const header = { traceparent: formatTraceparent(ids(n), '1'.repeat(16)) };
      gateway.startServer('GET /checkout', header).end({ status: 200 });
      if (n % 3 === 0) {
        // a third of the checkouts reach the supplier, three times each
        for (let k = 0; k < 3; k += 1) supplier.startServer('GET /quote', header).end({ status: 200 });
      }
      expect(gateway.size).toBeLessThanOrEqual(5);
      expect(supplier.size).toBeLessThanOrEqual(5);
    }
    const kept = (r: SpanRecorder) =>
      r
        .collect()
        .map((p) => Number.parseInt(p.traceId, 16))
        .sort((a, b) => a - b);
    expect(kept(gateway)).toEqual([1, 2, 3, 4, 5]);
    expect(kept(supplier)).toEqual([3, 6, 9, 12, 15]);
    // The gateway's trace 3 reached the supplier, and the supplier kept it: they stitch.
    const piece = supplier.collect().find((p) => p.traceId === ids(3))!;
    expect(piece.spans).toHaveLength(2);
    expect(piece.dropped).toBe(1);
  });

  it("a trace begun before the recorder (the last scenario's work still arriving) is not kept, yet passed on", () => {
    const t = 1_700_000_000_000;
    const clock = new FakeClock({ epoch: t });
    const inventory = new SpanRecorder({ service: 'inventory', clock, maxTraces: 3 });
    const id = (startedMs: number, rank: number) =>
      startedMs.toString(16).padStart(12, '0') + rank.toString(16).padStart(20, '0');
    const { sent, dispatch } = fakeDispatch();
    const intercepted = inventory.interceptor('supplier')(dispatch);
    // Lingering checkouts of the previous scenario, begun 3 s ago, with the smallest ranks of all...
    for (let rank = 1; rank <= 5; rank += 1) {
      const old = inventory.startServer('GET /stock', {
        traceparent: formatTraceparent(id(t - 3_000, rank), '1'.repeat(16)),
      });
      old.run(() => intercepted({ origin: 'http://s', path: '/quote', method: 'GET' }, {}));
      old.end({ status: 504 });
    }
    // ...then this scenario's, begun after the reset.
    for (let rank = 100; rank < 110; rank += 1)
      inventory
        .startServer('GET /stock', { traceparent: formatTraceparent(id(t + 20, rank), '1'.repeat(16)) })
        .end({ status: 200 });
    const kept = inventory.collect().map((p) => Number.parseInt(p.traceId.slice(12), 16));
    expect(kept.sort((a, b) => a - b)).toEqual([100, 101, 102]);
    // The old ones were still passed on: the next hop decides for itself.
    expect(sent.map((s) => traceparentOf(s.opts)?.traceId.slice(0, 12))).toEqual(
      Array(5).fill((t - 3_000).toString(16).padStart(12, '0')),
    );
    expect(traceStartEpochMs(randomIds.traceId(t))).toBe(t);
    expect(traceStartEpochMs(sequentialIds().traceId(t))).toBeUndefined();
  });

  it('a span still running when collected is cut there, `open`', () => {
    const clock = new FakeClock();
    const recorder = new SpanRecorder({ service: 'supplier #1', clock });
    recorder.startServer('GET /quote', {});
    clock.advance(40);
    const [span] = recorder.collect()[0]!.spans;
    expect(span).toMatchObject({ outcome: 'open' });
    expect(span!.endMs - span!.startMs).toBe(40);
  });

  it('sets traceparent whatever form the headers take, replacing one already there', () => {
    const v = formatTraceparent('1'.repeat(32), '2'.repeat(16));
    const base = { path: '/', method: 'GET' as const };
    expect(withTraceparent({ ...base }, v).headers).toEqual({ traceparent: v });
    expect(withTraceparent({ ...base, headers: { TraceParent: 'old', x: 'y' } }, v).headers).toEqual({
      x: 'y',
      traceparent: v,
    });
    expect(withTraceparent({ ...base, headers: ['traceparent', 'old', 'x', 'y'] }, v).headers).toEqual([
      'x',
      'y',
      'traceparent',
      v,
    ]);
    expect(withTraceparent({ ...base, headers: new Map([['x', 'y']]) as never }, v).headers).toEqual([
      'x',
      'y',
      'traceparent',
      v,
    ]);
  });
});
