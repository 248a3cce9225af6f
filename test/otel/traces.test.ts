import diagnostics from 'node:diagnostics_channel';
import type { IncomingMessage, ServerResponse } from 'node:http';
import {
  type Context,
  context,
  defaultTextMapGetter,
  defaultTextMapSetter,
  ROOT_CONTEXT,
  type Span,
  SpanKind,
  trace,
} from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  type ReadableSpan,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { sleep } from '../../src/clock/clock.js';
import { FakeClock } from '../../src/clock/fake.js';
import { systemClock } from '../../src/clock/system.js';
import { createHttpClient } from '../../src/http/client.js';
import { startServer, type TestServer } from '../../src/http/servers.test-helpers.js';
import { createLatencyRecorder } from '../../src/latency/recorder.js';
import { instrumentPrazo } from '../../src/otel/instrument.js';
import { createServerEventHub } from '../../src/server/events.js';
import { withIncomingDeadline } from '../../src/server/node.js';

/**
 * prazo/otel's traces (issue #26) end to end: a two-hop loopback chain (test → `orders` → the orders
 * service → `inventory`) through prazo/http, prazo/server and the real OpenTelemetry SDK, exported to
 * the SDK's in-memory exporter. The `orders` call is hedged (its original hangs), the `inventory` call
 * retried (its first answer is a 503).
 *
 * What an HTTP instrumentation would do is played by the test, with the API alone: an
 * `undici:request:create` subscriber injects `traceparent` from the context active when undici creates
 * the request (what `@opentelemetry/instrumentation-undici` does), and the service starts a SERVER span
 * from the incoming `traceparent` (what `-http` does). The trace is therefore linked across the hop
 * only if prazo dispatches each attempt inside its attempt span's context, which is what is tested.
 */

const propagator = new W3CTraceContextPropagator();
const exporter = new InMemorySpanExporter();
const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
const tracer = provider.getTracer('test');
const contextManager = new AsyncLocalStorageContextManager();

const inject = (message: unknown): void => {
  const { request } = message as { request: { addHeader(name: string, value: string): void } };
  const carrier: Record<string, string> = {};
  propagator.inject(context.active(), carrier, defaultTextMapSetter);
  for (const [name, value] of Object.entries(carrier)) request.addHeader(name, value);
};

beforeAll(() => {
  context.setGlobalContextManager(contextManager.enable());
  diagnostics.subscribe('undici:request:create', inject);
});
afterAll(async () => {
  diagnostics.unsubscribe('undici:request:create', inject);
  context.disable();
  await provider.shutdown();
});

const cleanup: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const fn of cleanup.splice(0).reverse()) await fn();
  exporter.reset();
});

/** A SERVER span from the incoming `traceparent`, active while `handler` runs, ended at the close. */
function serverSpan(name: string, handler: (req: IncomingMessage, res: ServerResponse) => void) {
  return (req: IncomingMessage, res: ServerResponse): void => {
    const parent: Context = propagator.extract(ROOT_CONTEXT, req.headers, defaultTextMapGetter);
    const span: Span = tracer.startSpan(name, { kind: SpanKind.SERVER }, parent);
    res.once('close', () => span.end());
    context.with(trace.setSpan(parent, span), () => handler(req, res));
  };
}

async function chain() {
  const inventory: TestServer = await startServer((_req, res, index) => {
    res.statusCode = index === 0 ? 503 : 200;
    res.end(index === 0 ? 'busy' : 'stock: 7');
  });
  const toInventory = createHttpClient({ name: 'inventory', origin: inventory.origin, p99Ms: 200 });
  const hub = createServerEventHub();
  let hang = true;
  const service = await startServer(
    serverSpan(
      'GET /order',
      withIncomingDeadline(
        async (req, res) => {
          if (req.url === '/warm') {
            res.end('ok');
            return;
          }
          if (hang) {
            hang = false; // the original hangs: the hedge answers
            return;
          }
          const answer = await toInventory.request('/stock');
          res.end(await answer.body.text());
        },
        { events: hub, maxMs: 5_000 },
      ),
    ),
  );
  // The recorder's windows run on a fake clock: the test decides when the warm-up window is full.
  const windows = new FakeClock();
  const recorder = createLatencyRecorder({ clock: windows, windowMs: 1_000, minSamples: 10 });
  const orders = createHttpClient({
    recorder,
    name: 'orders',
    origin: service.origin,
    p99Ms: 1_000,
    hedge: { minDelayMs: 100 },
  });
  const instrumentation = instrumentPrazo({
    tracerProvider: provider,
    dependencies: [orders, toInventory],
    servers: [{ name: 'orders-service', events: hub }],
  });
  cleanup.push(
    () => inventory.close(),
    () => service.close(),
    () => toInventory.destroy(),
    () => orders.destroy(),
    () => instrumentation.dispose(),
  );
  // A hedge waits for the live latency's p95: a few calls give it one (their spans are dropped).
  for (let i = 0; i < 20; i += 1) await (await orders.request('/warm')).body.text();
  windows.advance(1_000);
  exporter.reset();
  return { orders, instrumentation };
}

const startOf = (s: ReadableSpan): number => s.startTime[0] * 1e9 + s.startTime[1];

/** The exported spans depth first (siblings in start order), each with its parent's name. */
function tree(spans: readonly ReadableSpan[]) {
  const byId = new Map(spans.map((s) => [s.spanContext().spanId, s]));
  const children = new Map<string | undefined, ReadableSpan[]>();
  for (const s of spans) {
    const parent = s.parentSpanContext?.spanId;
    const key = parent !== undefined && byId.has(parent) ? parent : undefined;
    children.set(key, [...(children.get(key) ?? []), s]);
  }
  const out: ReadableSpan[] = [];
  const walk = (id: string | undefined): void => {
    for (const s of (children.get(id) ?? []).sort((a, b) => startOf(a) - startOf(b))) {
      out.push(s);
      walk(s.spanContext().spanId);
    }
  };
  walk(undefined);
  return out.map((s) => ({
    name: s.name,
    kind: SpanKind[s.kind],
    parent: byId.get(s.parentSpanContext?.spanId ?? '')?.name,
    traceId: s.spanContext().traceId,
    status: s.status.code,
    attributes: s.attributes,
    events: s.events.map((e) => ({ name: e.name, attributes: e.attributes })),
  }));
}

describe('prazo/otel traces', () => {
  it('exports a two-hop trace: call spans, attempt spans (retry, hedge), server spans, linked', async () => {
    const { orders, instrumentation } = await chain();
    expect(instrumentation.tracing).toBe(true);
    expect(instrumentation.active).toBe(false); // no meter: traces do not need metrics
    const root = tracer.startSpan('checkout');
    const text = await context.with(trace.setSpan(ROOT_CONTEXT, root), async () => {
      const response = await orders.request('/order', { deadline: 3_000 });
      return response.body.text();
    });
    root.end();
    expect(text).toBe('stock: 7');
    // The hanging original's server span ends when its connection is let go.
    for (let i = 0; i < 100 && exporter.getFinishedSpans().length < 9; i += 1) await sleep(systemClock, 20);

    const spans = tree(exporter.getFinishedSpans());
    const traceIds = new Set(spans.map((s) => s.traceId));
    expect(traceIds.size).toBe(1); // one trace, across both hops
    const shape = spans.map((s) => [s.name, s.kind, s.parent]);
    expect(shape).toEqual([
      ['checkout', 'INTERNAL', undefined],
      ['prazo.call orders', 'INTERNAL', 'checkout'],
      ['prazo.attempt orders', 'CLIENT', 'prazo.call orders'],
      ['GET /order', 'SERVER', 'prazo.attempt orders'],
      ['prazo.attempt orders', 'CLIENT', 'prazo.call orders'],
      ['GET /order', 'SERVER', 'prazo.attempt orders'],
      ['prazo.call inventory', 'INTERNAL', 'GET /order'],
      ['prazo.attempt inventory', 'CLIENT', 'prazo.call inventory'],
      ['prazo.attempt inventory', 'CLIENT', 'prazo.call inventory'],
    ]);
    const [, callOrders, original, firstServer, hedge, secondServer, callInventory, first, retry] = spans;

    expect(callOrders!.attributes).toMatchObject({
      'prazo.dependency': 'orders',
      'http.request.method': 'GET',
      'server.address': '127.0.0.1',
      'url.full': expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+\/order$/),
      'http.response.status_code': 200,
      'prazo.attempts': 2,
    });
    expect(callOrders!.attributes['prazo.deadline.time_left_ms']).toBeGreaterThan(2_900);
    expect(original!.attributes).toMatchObject({
      'prazo.attempt': 1,
      'prazo.attempt.kind': 'original',
      'prazo.attempt.outcome': 'cancelled',
      'server.address': '127.0.0.1',
    });
    expect(original!.attributes['http.request.resend_count']).toBeUndefined();
    expect(hedge!.attributes).toMatchObject({
      'prazo.attempt': 2,
      'prazo.attempt.kind': 'hedge',
      'prazo.attempt.outcome': 'success',
      'http.request.resend_count': 1,
      'http.response.status_code': 200,
    });
    expect(hedge!.attributes['prazo.attempt.timeout_ms']).toBeGreaterThan(0);
    // The server records the incoming deadline on its span: the header, the time left, not capped.
    for (const server of [firstServer!, secondServer!]) {
      expect(server.attributes).toMatchObject({
        'prazo.deadline.source': 'x-deadline-epoch-ms',
        'prazo.deadline.capped': false,
      });
      expect(server.attributes['prazo.deadline.time_left_ms']).toBeGreaterThan(1_000);
    }
    expect(callInventory!.attributes).toMatchObject({ 'prazo.dependency': 'inventory', 'prazo.attempts': 2 });
    expect(first!.attributes).toMatchObject({
      'prazo.attempt.kind': 'original',
      'prazo.attempt.outcome': 'error',
      'http.response.status_code': 503,
      'error.type': '503',
    });
    expect(first!.status).toBe(2); // SpanStatusCode.ERROR
    expect(retry!.attributes).toMatchObject({
      'prazo.attempt': 2,
      'prazo.attempt.kind': 'retry',
      'http.request.resend_count': 1,
      'prazo.attempt.outcome': 'success',
    });
  });

  it('an attempt that waited for DNS discovery is still dispatched inside its own attempt span', async () => {
    const server = await startServer(serverSpan('GET /stock', (_req, res) => res.end('ok')));
    cleanup.push(() => server.close());
    // The first lookup answers late, from a timer armed outside any call's context.
    let answer: (() => void) | undefined;
    const lookup = ((_host: string, _options: unknown, callback: (...args: unknown[]) => void) => {
      answer = () => callback(null, [{ address: '127.0.0.1', family: 4 }]);
    }) as never;
    const discovered = createHttpClient({
      name: 'discovered',
      origin: `http://stock.test:${server.port}`,
      discovery: { lookup, intervalMs: 60_000 },
      p99Ms: 200,
    });
    const instrumentation = instrumentPrazo({ tracerProvider: provider, dependencies: [discovered] });
    cleanup.push(
      () => discovered.destroy(),
      () => instrumentation.dispose(),
    );
    const roots = [tracer.startSpan('first'), tracer.startSpan('second')];
    const calls = roots.map((root) =>
      context.with(trace.setSpan(ROOT_CONTEXT, root), async () =>
        (await discovered.request('/stock', { deadline: 2_000 })).body.text(),
      ),
    );
    for (let i = 0; i < 100 && answer === undefined; i += 1) await sleep(systemClock, 5);
    context.with(ROOT_CONTEXT, () => answer!());
    expect(await Promise.all(calls)).toEqual(['ok', 'ok']);
    for (const root of roots) root.end();
    for (let i = 0; i < 100 && exporter.getFinishedSpans().length < 8; i += 1) await sleep(systemClock, 10);
    const spans = tree(exporter.getFinishedSpans());
    expect(spans.map((s) => [s.name, s.parent])).toEqual([
      ['first', undefined],
      ['prazo.call discovered', 'first'],
      ['prazo.attempt discovered', 'prazo.call discovered'],
      ['GET /stock', 'prazo.attempt discovered'],
      ['second', undefined],
      ['prazo.call discovered', 'second'],
      ['prazo.attempt discovered', 'prazo.call discovered'],
      ['GET /stock', 'prazo.attempt discovered'],
    ]);
    // Each request carried its own attempt's context, not the other call's.
    expect(new Set(spans.map((s) => s.traceId)).size).toBe(2);
  });

  it('traces nothing, and installs nothing, when the tracer provider is the API’s no-op', async () => {
    const toNowhere = createHttpClient({ name: 'nowhere', origin: 'http://127.0.0.1:9', p99Ms: 100 });
    cleanup.push(() => toNowhere.destroy());
    const instrumentation = instrumentPrazo({ dependencies: [toNowhere] });
    cleanup.push(() => instrumentation.dispose());
    expect(instrumentation.tracing).toBe(false);
    const off = instrumentPrazo({ tracerProvider: provider, traces: false });
    expect(off.tracing).toBe(false);
    off.dispose();
  });
});
