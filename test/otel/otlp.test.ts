import diagnostics from 'node:diagnostics_channel';
import { once } from 'node:events';
import { Agent, createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  type Context,
  context,
  defaultTextMapGetter,
  defaultTextMapSetter,
  ROOT_CONTEXT,
  type Span,
  SpanKind,
  type Tracer,
  trace,
} from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { BasicTracerProvider, BatchSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { sleep } from '../../src/clock/clock.js';
import { FakeClock } from '../../src/clock/fake.js';
import { systemClock } from '../../src/clock/system.js';
import { createHttpClient } from '../../src/http/client.js';
import { startServer } from '../../src/http/servers.test-helpers.js';
import { createLatencyRecorder } from '../../src/latency/recorder.js';
import { instrumentPrazo } from '../../src/otel/instrument.js';
import { createServerEventHub } from '../../src/server/events.js';
import { withIncomingDeadline } from '../../src/server/node.js';

/**
 * prazo/otel's traces through a real OTLP exporter (issue #26 item 1): what a collector receives, not
 * what the SDK holds in memory. The same two-hop loopback chain as `traces.test.ts` (test → `orders`,
 * hedged because its original hangs → the orders service → `inventory`, retried after a 503 with
 * `Retry-After: 0`), its spans batched by the SDK's `BatchSpanProcessor`, sent by
 * `@opentelemetry/exporter-trace-otlp-http` (OTLP/HTTP, JSON encoding) to a receiver on 127.0.0.1 made
 * of `node:http`, and decoded from the OTLP/JSON body as a collector would.
 *
 * Then the other side of the bargain: a collector that answers 503 or never answers must cost prazo's
 * calls nothing. The exporter runs off the request path (the batch processor's timer), bounded by its
 * `timeoutMillis`; the test measures the calls' latency with the collector healthy, failing and hung.
 *
 * As in `traces.test.ts`, the HTTP instrumentations are played by the test with the API alone (an
 * `undici:request:create` subscriber injects `traceparent`; the service starts a SERVER span from it).
 */

const propagator = new W3CTraceContextPropagator();
const contextManager = new AsyncLocalStorageContextManager();

const inject = (message: unknown): void => {
  const { request } = message as { request: { addHeader(name: string, value: string): void } };
  const carrier: Record<string, string> = {};
  propagator.inject(context.active(), carrier, defaultTextMapSetter);
  for (const [name, value] of Object.entries(carrier)) request.addHeader(name, value);
};

/** TCP handles (sockets, listeners) open in this process: what a leak would leave behind. */
const tcpHandles = (): number =>
  process.getActiveResourcesInfo().filter((name) => name.startsWith('TCP')).length;

let baselineTcp = 0;
beforeAll(() => {
  baselineTcp = tcpHandles();
  context.setGlobalContextManager(contextManager.enable());
  diagnostics.subscribe('undici:request:create', inject);
});
afterAll(() => {
  diagnostics.unsubscribe('undici:request:create', inject);
  context.disable();
});

const cleanup: Array<() => Promise<void> | void> = [];
const closeAll = async (): Promise<void> => {
  for (const fn of cleanup.splice(0).reverse()) await fn();
};
const receivers: Receiver[] = [];
afterEach(async () => {
  await closeAll();
  for (const receiver of receivers.splice(0)) await receiver.close();
});

/**
 * Closes everything but the receiver, then checks that no connection to it is left (the exporter's
 * sockets are gone, not cut by the receiver's close), then closes it and checks that this process
 * holds no more TCP handles than before the tests.
 */
async function expectNothingLeft(receiver: Receiver): Promise<void> {
  await closeAll();
  for (let i = 0; i < 50 && receiver.open() > 0; i += 1) await sleep(systemClock, 20);
  expect(receiver.open()).toBe(0);
  await receiver.close();
  for (let i = 0; i < 50 && tcpHandles() > baselineTcp; i += 1) await sleep(systemClock, 20);
  expect(tcpHandles()).toBe(baselineTcp);
}

// --- OTLP/JSON, as opentelemetry-proto's JSON mapping spells it (hex ids, int64 as string or number) ---

interface AnyValue {
  stringValue?: string;
  intValue?: number | string;
  doubleValue?: number;
  boolValue?: boolean;
  arrayValue?: { values?: AnyValue[] };
}
interface KeyValue {
  key: string;
  value?: AnyValue;
}
interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind?: number;
  startTimeUnixNano: string | number;
  endTimeUnixNano: string | number;
  attributes?: KeyValue[];
  events?: Array<{ timeUnixNano: string | number; name: string; attributes?: KeyValue[] }>;
  status?: { code?: number; message?: string };
}
interface ExportTraceServiceRequest {
  resourceSpans?: Array<{
    resource?: { attributes?: KeyValue[] };
    scopeSpans?: Array<{ scope?: { name?: string; version?: string }; spans?: OtlpSpan[] }>;
  }>;
}

type Plain = string | number | boolean | Plain[] | undefined;

function plain(value: AnyValue | undefined): Plain {
  if (value === undefined) return undefined;
  if (value.stringValue !== undefined) return value.stringValue;
  if (value.intValue !== undefined) return Number(value.intValue);
  if (value.doubleValue !== undefined) return value.doubleValue;
  if (value.boolValue !== undefined) return value.boolValue;
  if (value.arrayValue !== undefined) return (value.arrayValue.values ?? []).map(plain);
  return undefined;
}

const attributesOf = (list: KeyValue[] | undefined): Record<string, Plain> =>
  Object.fromEntries((list ?? []).map((kv) => [kv.key, plain(kv.value)]));

/** OTLP's `SpanKind` (the API's kind + 1: 0 is UNSPECIFIED). */
const KINDS = ['UNSPECIFIED', 'INTERNAL', 'SERVER', 'CLIENT', 'PRODUCER', 'CONSUMER'];

interface ReceivedSpan {
  name: string;
  kind: string;
  scope: string | undefined;
  traceId: string;
  spanId: string;
  parentSpanId: string | undefined;
  start: bigint;
  end: bigint;
  status: number;
  attributes: Record<string, Plain>;
  events: Array<{ name: string; attributes: Record<string, Plain> }>;
  resource: Record<string, Plain>;
}

function decode(body: ExportTraceServiceRequest): ReceivedSpan[] {
  const out: ReceivedSpan[] = [];
  for (const rs of body.resourceSpans ?? []) {
    const resource = attributesOf(rs.resource?.attributes);
    for (const ss of rs.scopeSpans ?? []) {
      for (const s of ss.spans ?? []) {
        out.push({
          name: s.name,
          kind: KINDS[s.kind ?? 0] ?? String(s.kind),
          scope: ss.scope?.name,
          traceId: s.traceId,
          spanId: s.spanId,
          parentSpanId: s.parentSpanId === undefined || s.parentSpanId === '' ? undefined : s.parentSpanId,
          start: BigInt(s.startTimeUnixNano),
          end: BigInt(s.endTimeUnixNano),
          status: s.status?.code ?? 0,
          attributes: attributesOf(s.attributes),
          events: (s.events ?? []).map((e) => ({ name: e.name, attributes: attributesOf(e.attributes) })),
          resource,
        });
      }
    }
  }
  return out;
}

/** The received spans depth first (siblings in start order), each with its parent's name. */
function tree(spans: readonly ReceivedSpan[]) {
  const byId = new Map(spans.map((s) => [s.spanId, s]));
  const children = new Map<string | undefined, ReceivedSpan[]>();
  for (const s of spans) {
    const key = s.parentSpanId !== undefined && byId.has(s.parentSpanId) ? s.parentSpanId : undefined;
    children.set(key, [...(children.get(key) ?? []), s]);
  }
  const out: Array<ReceivedSpan & { parent: string | undefined; depth: number }> = [];
  const walk = (id: string | undefined, depth: number): void => {
    const level = (children.get(id) ?? []).sort((a, b) =>
      a.start < b.start ? -1 : a.start > b.start ? 1 : 0,
    );
    for (const s of level) {
      out.push({
        ...s,
        parent: s.parentSpanId === undefined ? undefined : byId.get(s.parentSpanId)?.name,
        depth,
      });
      walk(s.spanId, depth + 1);
    }
  };
  walk(undefined, 0);
  return out;
}

// --- a tiny OTLP/HTTP receiver on 127.0.0.1 ---

type Mode = 'ok' | '503' | 'hang';

interface Receiver {
  readonly url: string;
  mode: Mode;
  /** Requests received, by the mode they met. */
  readonly requests: Record<Mode, number>;
  /** What was accepted (answered 200): path, content type, the decoded body. */
  readonly accepted: Array<{ path: string; contentType: string | undefined; spans: ReceivedSpan[] }>;
  /** Connections open now. */
  open(): number;
  /** Idempotent. */
  close(): Promise<void>;
}

async function startReceiver(): Promise<Receiver> {
  let open = 0;
  const state: Omit<Receiver, 'url' | 'open' | 'close'> = {
    mode: 'ok',
    requests: { ok: 0, '503': 0, hang: 0 },
    accepted: [],
  };
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const mode = state.mode;
      state.requests[mode] += 1;
      if (mode === 'hang') return; // read, never answered
      if (mode === '503') {
        res.writeHead(503, { 'content-type': 'application/json' });
        res.end('{}');
        return;
      }
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as ExportTraceServiceRequest;
      state.accepted.push({
        path: req.url ?? '',
        contentType: req.headers['content-type'],
        spans: decode(body),
      });
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{}'); // ExportTraceServiceResponse, no partial success
    });
  });
  server.on('connection', (socket) => {
    open += 1;
    socket.once('close', () => {
      open -= 1;
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  return Object.assign(state, {
    url: `http://127.0.0.1:${port}/v1/traces`,
    open: () => open,
    close: () =>
      new Promise<void>((resolve) => {
        if (!server.listening) return resolve();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  });
}

/** The exporter's bound per export (its `timeoutMillis`): what a hung collector may cost the exporter. */
const EXPORT_TIMEOUT_MS = 1_000;

/**
 * A tracer provider exporting through OTLP/HTTP to `receiver`. The exporter's keep-alive agent is the
 * test's own: the exporter's `shutdown()` leaves its agent's idle socket open (its HTTP transport's
 * `shutdown` is empty, exporter-trace-otlp-http 0.223.0; the socket is unref'd, so it does not hold
 * the process, but the collector keeps the connection until its keep-alive timeout), so the test
 * destroys the agent after the provider's shutdown, as an application that passes its agent can.
 */
function otlpProvider(
  receiver: Receiver,
  batch: { scheduledDelayMillis?: number; maxExportBatchSize?: number },
) {
  const agent = new Agent({ keepAlive: true });
  const exporter = new OTLPTraceExporter({
    url: receiver.url,
    timeoutMillis: EXPORT_TIMEOUT_MS,
    httpAgentOptions: async () => agent,
  });
  const provider = new BasicTracerProvider({
    spanProcessors: [
      new BatchSpanProcessor(exporter, {
        exportTimeoutMillis: 2 * EXPORT_TIMEOUT_MS,
        maxQueueSize: 512,
        ...batch,
      }),
    ],
  });
  return {
    provider,
    tracer: provider.getTracer('test'),
    close: async () => {
      await provider.shutdown().catch(() => {});
      agent.destroy();
    },
  };
}

/** A SERVER span from the incoming `traceparent`, active while `handler` runs, ended at the close. */
function serverSpan(
  tracer: Tracer,
  name: string,
  handler: (req: IncomingMessage, res: ServerResponse) => void,
) {
  return (req: IncomingMessage, res: ServerResponse): void => {
    if (req.url === '/warm') {
      res.end('ok'); // the warm-up calls are not traced
      return;
    }
    const parent: Context = propagator.extract(ROOT_CONTEXT, req.headers, defaultTextMapGetter);
    const span: Span = tracer.startSpan(name, { kind: SpanKind.SERVER }, parent);
    res.once('close', () => span.end());
    context.with(trace.setSpan(parent, span), () => handler(req, res));
  };
}

/**
 * test → `orders` (hedged: the first /order hangs) → the orders service → `inventory` (its first answer
 * a 503 with `Retry-After: 0`: retried at once). Instrumented after the warm-up, so only the calls the
 * test makes are traced.
 */
async function chain(provider: BasicTracerProvider, tracer: Tracer, faults: boolean) {
  const inventory = await startServer((_req, res, index) => {
    if (faults && index === 0) {
      res.writeHead(503, { 'retry-after': '0' });
      res.end('busy');
    } else {
      res.end('stock: 7');
    }
  });
  const toInventory = createHttpClient({ name: 'inventory', origin: inventory.origin, p99Ms: 200 });
  const hub = createServerEventHub();
  let hang = faults;
  const service = await startServer(
    serverSpan(
      tracer,
      'GET /order',
      withIncomingDeadline(
        async (_req, res) => {
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
  cleanup.push(
    () => inventory.close(),
    () => service.close(),
    () => toInventory.destroy(),
    () => orders.destroy(),
  );
  // A hedge waits for the live latency's p95: a few calls give it one.
  for (let i = 0; i < 20; i += 1) await (await orders.request('/warm')).body.text();
  windows.advance(1_000);
  const instrumentation = instrumentPrazo({
    tracerProvider: provider,
    dependencies: [orders, toInventory],
    servers: [{ name: 'orders-service', events: hub }],
  });
  cleanup.push(() => instrumentation.dispose());
  return { orders, instrumentation };
}

/** One line per span, as the closing note quotes it. */
function describeSpan(s: ReturnType<typeof tree>[number]): string {
  const attrs = Object.entries(s.attributes)
    .map(([k, v]) => `${k}=${JSON.stringify(v)}`)
    .join(' ');
  const events = s.events.map((e) => ` event ${e.name} ${JSON.stringify(e.attributes)}`).join('');
  return `${'  '.repeat(s.depth)}${s.name} [${s.kind}, status ${s.status}, parent ${s.parent ?? '-'}] ${attrs}${events}`;
}

const median = (xs: readonly number[]): number => {
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
};

describe('prazo/otel traces through a real OTLP/HTTP exporter', () => {
  it('a collector on loopback receives the two-hop trace: call → attempt → server spans, retry and hedge', async () => {
    const receiver = await startReceiver();
    receivers.push(receiver);
    const otlp = otlpProvider(receiver, { scheduledDelayMillis: 60_000 }); // only forceFlush sends
    cleanup.push(otlp.close);
    const { orders, instrumentation } = await chain(otlp.provider, otlp.tracer, true);
    expect(instrumentation.tracing).toBe(true);

    const root = otlp.tracer.startSpan('checkout');
    const text = await context.with(trace.setSpan(ROOT_CONTEXT, root), async () => {
      const response = await orders.request('/order', { deadline: 3_000 });
      return response.body.text();
    });
    root.end();
    expect(text).toBe('stock: 7');
    const rootTrace = root.spanContext().traceId;
    // The hanging original's server span ends when its connection is let go: flush until all 9 arrived.
    let received: ReceivedSpan[] = [];
    for (let i = 0; i < 50 && received.length < 9; i += 1) {
      await otlp.provider.forceFlush();
      received = receiver.accepted.flatMap((a) => a.spans).filter((s) => s.traceId === rootTrace);
      if (received.length < 9) await sleep(systemClock, 20);
    }

    expect(receiver.requests).toMatchObject({ '503': 0, hang: 0 });
    expect(receiver.accepted.length).toBeGreaterThan(0);
    for (const a of receiver.accepted) {
      expect(a.path).toBe('/v1/traces');
      expect(a.contentType).toBe('application/json');
    }
    const spans = tree(received);
    if (process.env.PRAZO_PRINT_TRACE === '1') console.log(spans.map(describeSpan).join('\n'));
    // One trace, W3C ids in hex, every parent id resolved within it (traceparent crossed the hop).
    expect(new Set(received.map((s) => s.traceId)).size).toBe(1);
    expect(rootTrace).toMatch(/^[0-9a-f]{32}$/);
    for (const s of received) {
      expect(s.spanId).toMatch(/^[0-9a-f]{16}$/);
      expect(s.end >= s.start).toBe(true);
    }
    expect(spans.map((s) => [s.name, s.kind, s.parent, s.scope])).toEqual([
      ['checkout', 'INTERNAL', undefined, 'test'],
      ['prazo.call orders', 'INTERNAL', 'checkout', 'prazo'],
      ['prazo.attempt orders', 'CLIENT', 'prazo.call orders', 'prazo'],
      ['GET /order', 'SERVER', 'prazo.attempt orders', 'test'],
      ['prazo.attempt orders', 'CLIENT', 'prazo.call orders', 'prazo'],
      ['GET /order', 'SERVER', 'prazo.attempt orders', 'test'],
      ['prazo.call inventory', 'INTERNAL', 'GET /order', 'prazo'],
      ['prazo.attempt inventory', 'CLIENT', 'prazo.call inventory', 'prazo'],
      ['prazo.attempt inventory', 'CLIENT', 'prazo.call inventory', 'prazo'],
    ]);
    expect(spans[0]!.resource['service.name']).toEqual(expect.any(String));
    const [, callOrders, original, firstServer, hedge, secondServer, callInventory, first, retry] = spans;
    // Each SERVER span's parent is exactly the attempt that carried its request.
    expect(firstServer!.parentSpanId).toBe(original!.spanId);
    expect(secondServer!.parentSpanId).toBe(hedge!.spanId);
    expect(callInventory!.parentSpanId).toBe(secondServer!.spanId);

    expect(callOrders!.attributes).toMatchObject({
      'prazo.dependency': 'orders',
      'http.request.method': 'GET',
      'server.address': '127.0.0.1',
      'url.full': expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+\/order$/),
      'http.response.status_code': 200,
      'prazo.attempts': 2,
    });
    expect(callOrders!.attributes['server.port']).toEqual(expect.any(Number));
    expect(callOrders!.attributes['prazo.deadline.time_left_ms']).toBeGreaterThan(2_900);
    expect(callOrders!.status).toBe(0); // UNSET: the call succeeded
    expect(original!.attributes).toMatchObject({
      'prazo.attempt': 1,
      'prazo.attempt.kind': 'original',
      'prazo.attempt.outcome': 'cancelled',
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
    // The hedge started while the original was still running: the waterfall a collector can draw.
    expect(hedge!.start > original!.start).toBe(true);
    expect(hedge!.start < original!.end).toBe(true);
    for (const server of [firstServer!, secondServer!]) {
      expect(server.attributes).toMatchObject({
        'prazo.deadline.source': 'x-deadline-epoch-ms',
        'prazo.deadline.capped': false,
      });
      expect(server.attributes['prazo.deadline.time_left_ms']).toBeGreaterThan(1_000);
    }
    expect(callInventory!.attributes).toMatchObject({ 'prazo.dependency': 'inventory', 'prazo.attempts': 2 });
    // The retry's decision is an event on the call span: the server's Retry-After (0) honoured.
    expect(callInventory!.events).toEqual([
      { name: 'prazo.retry_after', attributes: { 'prazo.wait_ms': 0, 'prazo.honoured': true } },
    ]);
    expect(first!.attributes).toMatchObject({
      'prazo.attempt.kind': 'original',
      'prazo.attempt.outcome': 'error',
      'http.response.status_code': 503,
      'error.type': '503',
    });
    expect(first!.status).toBe(2); // STATUS_CODE_ERROR
    expect(retry!.attributes).toMatchObject({
      'prazo.attempt': 2,
      'prazo.attempt.kind': 'retry',
      'http.request.resend_count': 1,
      'prazo.attempt.outcome': 'success',
      'http.response.status_code': 200,
    });
    expect(retry!.status).toBe(0);
    expect(callOrders!.events).toEqual([]);

    await expectNothingLeft(receiver);
  });

  it('a collector answering 503 or hanging never delays prazo’s calls: the exporter is bounded and off the path', async () => {
    const receiver = await startReceiver();
    receivers.push(receiver);
    // Small, frequent batches: exports run while the calls do.
    const otlp = otlpProvider(receiver, { scheduledDelayMillis: 20, maxExportBatchSize: 16 });
    cleanup.push(otlp.close);
    const { orders } = await chain(otlp.provider, otlp.tracer, false);

    const CALLS = 60;
    const phase = async (mode: Mode) => {
      receiver.mode = mode;
      const durations: number[] = [];
      const answers = new Set<string>();
      const before = receiver.requests[mode];
      for (let i = 0; i < CALLS; i += 1) {
        const started = systemClock.now();
        const response = await orders.request('/order', { deadline: 3_000 });
        answers.add(`${response.statusCode} ${await response.body.text()}`);
        durations.push(systemClock.now() - started);
      }
      const flushStarted = systemClock.now();
      const flushed = await otlp.provider.forceFlush().then(
        () => 'ok',
        (e: unknown) => `failed: ${String(e)}`,
      );
      return {
        mode,
        answers: [...answers],
        p50: median(durations),
        max: Math.max(...durations),
        requests: receiver.requests[mode] - before,
        flushed,
        flushMs: systemClock.now() - flushStarted,
      };
    };
    const ok = await phase('ok');
    const hung = await phase('hang');
    const failing = await phase('503');
    // Back to healthy: once the exports still in flight against the 503s are over, spans arrive again.
    receiver.mode = 'ok';
    const accepted = receiver.accepted.length;
    const recovering = systemClock.now();
    let recovered = 'failed';
    for (let i = 0; i < 30 && (recovered !== 'ok' || receiver.accepted.length === accepted); i += 1) {
      const response = await orders.request('/order', { deadline: 3_000 });
      expect(await response.body.text()).toBe('stock: 7');
      recovered = await otlp.provider.forceFlush().then(
        () => 'ok',
        () => 'failed',
      );
      if (recovered !== 'ok') await sleep(systemClock, 100);
    }
    const recoveredMs = systemClock.now() - recovering;
    const after = await phase('ok'); // the healthy baseline again, on a warm process
    const received = receiver.accepted.flatMap((a) => a.spans).filter((s) => s.name === 'prazo.call orders');
    if (process.env.PRAZO_PRINT_TRACE === '1') {
      console.log({ ok, hung, failing, recovered, recoveredMs, after, calls: received.length });
    }

    for (const r of [ok, hung, failing, after]) expect(r.answers).toEqual(['200 stock: 7']); // the service kept answering
    // The exporter did try in each phase: the collector saw its requests.
    for (const r of [ok, hung, failing, after]) expect(r.requests).toBeGreaterThan(0);
    expect(ok.flushed).toBe('ok');
    expect(hung.flushed).toMatch(/^failed/);
    expect(failing.flushed).toMatch(/^failed/);
    // No call waited for an export: one that waited for a hung export would take EXPORT_TIMEOUT_MS.
    for (const r of [hung, failing]) {
      expect(r.max).toBeLessThan(EXPORT_TIMEOUT_MS);
      expect(r.p50).toBeLessThan(3 * Math.min(ok.p50, after.p50) + 20);
    }
    // The exporter is bounded: a flush against a hung collector gives up near its timeout, not never.
    expect(hung.flushMs).toBeLessThan(2 * EXPORT_TIMEOUT_MS + 1_000);
    expect(failing.flushMs).toBeLessThan(2 * EXPORT_TIMEOUT_MS + 1_000);
    // Once the collector is back, spans reach it again; what the outage cost is spans, not calls.
    expect(recovered).toBe('ok');
    expect(after.flushed).toBe('ok');
    expect(received.length).toBeGreaterThanOrEqual(2 * CALLS);

    // Nothing left open: the provider, its agent, the clients, the servers and the receiver closed.
    await expectNothingLeft(receiver);
  });
});
