import type { Dispatcher } from 'undici';
import { describe, expect, it } from 'vitest';
import { FakeClock } from '../../clock/fake.js';
import { ResponseTimeoutError } from '../../errors/timeout.js';
import { SpanRecorder } from './recorder.js';
import { chooseTrace, representative, stitchTrace, type Waterfall } from './stitch.js';
import { sequentialIds } from './traceparent.js';
import type { SpanRecord, TracePiece } from './types.js';

/**
 * Stitching on the fake clock: four recorders (one per service, as four processes would have), the
 * `traceparent` each attempt sends handed to the next hop's server span as its headers.
 */
function chain(clock: FakeClock) {
  const ids = sequentialIds();
  const make = (service: string) =>
    new SpanRecorder({ service, clock, ids: { traceId: ids.traceId, spanId: ids.spanId } });
  return {
    gateway: make('gateway'),
    orders: make('orders'),
    inventory: make('inventory'),
    supplier: make('supplier #2'),
  };
}

/** Runs a prazo call with one attempt from `recorder`'s current server span; `send` gets the headers it sent. */
function callOnce(
  recorder: SpanRecorder,
  next: string,
  left: number,
  send: (headers: Record<string, string>) => void,
): { end: (outcome: 'success' | 'timeout' | 'error', status?: number, error?: unknown) => void } {
  const call = recorder.tracer.startCall(next, left, undefined)!;
  let sent: Record<string, string> = {};
  const intercepted = recorder.interceptor(next)((opts: Dispatcher.DispatchOptions) => {
    sent = opts.headers as Record<string, string>;
    return true;
  });
  const attempt = call.attempt('original', 1, left, left, undefined, () => {
    intercepted({ origin: 'http://x', path: '/', method: 'GET', headers: {} }, {});
  });
  send(sent);
  return {
    end: (outcome, status, error) => {
      const attributes = status === undefined ? undefined : { 'http.response.status_code': status };
      attempt.end(outcome, outcome === 'success', error, attributes);
      call.end(outcome === 'success', error, attributes);
    },
  };
}

/** A prazo checkout whose supplier hangs: inventory's attempt waits until the deadline. */
function hungCheckout(clock: FakeClock): TracePiece[] {
  const r = chain(clock);
  const t0 = clock.epochNow();
  const gw = r.gateway.startServer('GET /checkout', {});
  let orders!: ReturnType<SpanRecorder['startServer']>;
  let inventory!: ReturnType<SpanRecorder['startServer']>;
  let supplier!: ReturnType<SpanRecorder['startServer']>;
  const toOrders = gw.run(() =>
    callOnce(r.gateway, 'orders', 1_900, (h) => (orders = r.orders.startServer('GET /orders/checkout', h))),
  );
  clock.advance(1);
  const toInventory = orders.run(() =>
    callOnce(r.orders, 'inventory', 1_898, (h) => (inventory = r.inventory.startServer('GET /stock', h))),
  );
  clock.advance(1);
  const toSupplier = inventory.run(() =>
    callOnce(r.inventory, 'supplier', 1_896, (h) => (supplier = r.supplier.startServer('GET /quote', h))),
  );
  clock.advance(1_896);
  const timeout = new ResponseTimeoutError({ dependency: 'supplier', elapsedMs: 1_896, timeoutMs: 1_896 });
  toSupplier.end('timeout', undefined, timeout);
  supplier.end({ status: undefined });
  inventory.end({ status: 504, deadlineEpochMs: t0 + 1_900 });
  toInventory.end('success', 504);
  orders.end({ status: 504, deadlineEpochMs: t0 + 1_900 });
  toOrders.end('success', 504);
  clock.advance(1);
  gw.end({ status: 504, deadlineEpochMs: t0 + 1_900, giveUpEpochMs: t0 + 2_000 });
  return [r.supplier, r.inventory, r.orders, r.gateway].flatMap((x) => x.collect());
}

describe('stitching the services pieces into one checkout (issue #26)', () => {
  it('four hops from four services, ordered by start, the deadline and where it ran out', () => {
    const clock = new FakeClock({ epoch: 5_000_000 });
    const trace = stitchTrace({ traceId: '', spans: hungCheckout(clock).flatMap((p) => p.spans) })!;
    expect(trace.hops).toEqual(['gateway', 'orders', 'inventory', 'supplier']);
    expect(trace.failed).toBe(true);
    expect(trace.deadlineMs).toBe(1_900);
    expect(trace.giveUpMs).toBe(2_000);
    expect(trace.durationMs).toBe(1_899);
    const starts = trace.spans.map((s) => s.startMs);
    expect(starts).toEqual([...starts].sort((a, b) => a - b));
    expect(trace.spans.map((s) => `${s.depth} ${s.service} ${s.kind}`)).toEqual([
      '0 gateway server',
      '1 gateway call',
      '2 gateway attempt',
      '3 orders server',
      '4 orders call',
      '5 orders attempt',
      '6 inventory server',
      '7 inventory call',
      '8 inventory attempt',
      '9 supplier #2 server',
    ]);
    // The deadline ran out while inventory's attempt to the supplier waited: a timeout beats the
    // supplier's own span (cancelled) and the spans above it.
    const marked = trace.spans.find((s) => s.spanId === trace.ranOut?.spanId);
    expect(trace.ranOut?.how).toBe('deadline');
    expect(marked).toMatchObject({
      service: 'inventory',
      kind: 'attempt',
      outcome: 'timeout',
      error: 'RESPONSE_TIMEOUT',
    });
  });

  it('a failure before the deadline is marked where it started (the first span to fail)', () => {
    const clock = new FakeClock();
    const r = chain(clock);
    const gw = r.gateway.startServer('GET /checkout', {});
    gw.run(() => {
      const call = r.gateway.tracer.startCall('orders', 1_900, undefined)!;
      clock.advance(1);
      call.end(false, Object.assign(new Error('refused'), { code: 'ECONNREFUSED' }), undefined);
    });
    clock.advance(1);
    gw.end({ status: 503, deadlineEpochMs: clock.epochNow() + 1_898 });
    const trace = stitchTrace({ traceId: '', spans: r.gateway.collect()[0]!.spans })!;
    expect(trace.ranOut?.how).toBe('failed');
    expect(trace.spans.find((s) => s.spanId === trace.ranOut?.spanId)).toMatchObject({
      kind: 'call',
      error: 'ECONNREFUSED',
    });
  });

  it('the representative: the failed checkout closest to the failed ones median, else the slowest', () => {
    const t = (durationMs: number, failed: boolean, startEpochMs = 0) =>
      ({
        traceId: `${durationMs}`,
        durationMs,
        failed,
        startEpochMs,
        spans: [],
        hops: [],
        dropped: 0,
      }) as Waterfall;
    expect(representative([t(10, true), t(300, true), t(2_000, true), t(5_000, false)])?.durationMs).toBe(
      300,
    );
    expect(representative([t(10, true), t(40, true), t(2_000, true), t(2_100, true)])?.durationMs).toBe(40);
    expect(representative([t(10, false), t(900, false), t(30, false)])?.durationMs).toBe(900);
    expect(representative([])).toBeUndefined();
  });

  it('bad or partial input never throws: bad spans are left out, no gateway span means no checkout', () => {
    const clock = new FakeClock();
    const pieces = hungCheckout(clock);
    const good = chooseTrace('prazo', pieces);
    expect(good).toMatchObject({ sampled: 1, failed: 1 });
    const gatewayless = pieces.map((p) => ({ ...p, spans: p.spans.filter((s) => s.service !== 'gateway') }));
    expect(chooseTrace('prazo', gatewayless)).toMatchObject({ waterfall: undefined, sampled: 0 });
    for (const garbage of [
      undefined,
      null,
      42,
      'x',
      [null],
      [{ spans: 'no' }],
      [{ spans: [{ traceId: 1 }] }],
    ])
      expect(chooseTrace('naive', garbage as never).waterfall).toBeUndefined();
    const spans = pieces.flatMap((p) => p.spans);
    const root = spans.find((s) => s.service === 'gateway' && s.kind === 'server')!;
    const broken: unknown[] = [
      { ...root, spanId: 'ff'.repeat(8), endMs: root.startMs - 5 }, // ends before it starts
      { ...root, spanId: 'fe'.repeat(8), startMs: Number.NaN },
      { ...root, spanId: 'fd'.repeat(8), kind: 'bogus' },
      { ...spans[1]!, spanId: 'fc'.repeat(8), parentId: 'ab'.repeat(8) }, // its parent was not kept
      { ...spans[2]!, spanId: 'fb'.repeat(8), parentId: 'fa'.repeat(8) }, // a cycle
      { ...spans[2]!, spanId: 'fa'.repeat(8), parentId: 'fb'.repeat(8) },
    ];
    const choice = chooseTrace('prazo', [...pieces, { traceId: root.traceId, dropped: 2, spans: broken }]);
    const trace = choice.waterfall!;
    expect(trace.spans).toHaveLength(spans.length + 3);
    expect(trace.dropped).toBe(2 + 3);
    for (const id of ['fc', 'fb', 'fa']) {
      const s = trace.spans.find((x) => x.spanId === id.repeat(8))!;
      expect(s.depth).toBe(1);
      expect(s.parentId).toBe(root.spanId);
    }
  });

  it('spans with a good shape but wrong ids are refused', () => {
    const clock = new FakeClock();
    const span = hungCheckout(clock)[0]!.spans[0]!;
    const bad: SpanRecord[] = [
      { ...span, traceId: 'XYZ' },
      { ...span, spanId: '0' },
      { ...span, parentId: 'nope' },
    ];
    expect(chooseTrace('prazo', [{ traceId: span.traceId, dropped: 0, spans: bad }]).sampled).toBe(0);
  });
});

describe('clocks of separate processes', () => {
  it('a request that seems to arrive a fraction of a ms before the attempt that sent it is drawn after it', () => {
    const clock = new FakeClock({ epoch: 7_000_000 });
    const spans = hungCheckout(clock).flatMap((p) => p.spans);
    const attempt = spans.find((s) => s.kind === 'attempt' && s.service === 'orders')!;
    const skewed = spans.map((s) =>
      s.kind === 'server' && s.parentId === attempt.spanId ? { ...s, startMs: attempt.startMs - 0.4 } : s,
    );
    const trace = stitchTrace({ traceId: '', spans: skewed })!;
    const server = trace.spans.find((s) => s.service === 'inventory' && s.kind === 'server')!;
    const sent = trace.spans.find((s) => s.spanId === attempt.spanId)!;
    expect(server.startMs).toBe(sent.startMs);
    expect(trace.spans.indexOf(server)).toBeGreaterThan(trace.spans.indexOf(sent));
    // A gap larger than clocks can explain is drawn as measured.
    const far = spans.map((s) =>
      s.kind === 'server' && s.parentId === attempt.spanId ? { ...s, startMs: attempt.startMs - 50 } : s,
    );
    const measured = stitchTrace({ traceId: '', spans: far })!;
    expect(measured.spans.find((s) => s.service === 'inventory' && s.kind === 'server')!.startMs).toBe(
      sent.startMs - 50,
    );
  });
});
