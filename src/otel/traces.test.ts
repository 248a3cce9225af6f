import { context, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  type ReadableSpan,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { FakeClock } from '../clock/fake.js';
import { createDependency } from '../dependency/dependency.js';
import { fakeCall } from '../dependency/dependency.test-helpers.js';
import { executorOf } from '../dependency/transport.js';
import { instrumentPrazo } from './instrument.js';

/**
 * The executor's decisions as spans and span events (issue #26), on the fake clock, through the real
 * SDK's in-memory exporter. The HTTP chain, end to end, is test/otel/traces.test.ts.
 */

const exporter = new InMemorySpanExporter();
const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
const contextManager = new AsyncLocalStorageContextManager();
beforeAll(() => void context.setGlobalContextManager(contextManager.enable()));
afterAll(async () => {
  context.disable();
  await provider.shutdown();
});
const disposers: Array<() => void> = [];
afterEach(() => {
  for (const d of disposers.splice(0)) d();
  exporter.reset();
});

const named = (prefix: string): ReadableSpan[] =>
  exporter.getFinishedSpans().filter((s) => s.name.startsWith(prefix));
const eventsOf = (span: ReadableSpan | undefined) =>
  span?.events.map((e) => ({ name: e.name, attributes: e.attributes }));

function traced(options: Record<string, unknown> = {}) {
  const clock = new FakeClock();
  const dependency = createDependency({
    name: 'supplier',
    clock,
    p99Ms: 100,
    random: () => 0.5,
    ...options,
  });
  const instrumentation = instrumentPrazo({ tracerProvider: provider, dependencies: [dependency] });
  disposers.push(() => instrumentation.dispose());
  return { clock, dependency, instrumentation };
}

const status503 = () => ({ retryable: true, outcome: 'error' as const });

describe('prazo/otel: spans of one call', () => {
  it('a call span and one attempt span per attempt; a Retry-After wait is an event; the attempt runs in its span', async () => {
    const { clock, dependency } = traced();
    const activeInAttempts: (string | undefined)[] = [];
    let n = 0;
    const call = dependency.execute(
      (ctx) => {
        activeInAttempts.push(trace.getActiveSpan()?.spanContext().spanId);
        n += 1;
        return fakeCall(clock, ctx, 10, () => (n === 1 ? { status: 503 } : { status: 200 }));
      },
      {
        idempotent: true,
        deadline: 1_000,
        classify: (r: { status: number }) =>
          r.status === 503 ? { retryable: true, retryAfterMs: 50, outcome: 'error' } : { retryable: false },
      },
    );
    await clock.runAllAsync();
    expect(await call).toEqual({ status: 200 });

    const [callSpan] = named('prazo.call');
    const attempts = named('prazo.attempt');
    expect(callSpan!.name).toBe('prazo.call supplier');
    expect(callSpan!.kind).toBe(SpanKind.INTERNAL);
    expect(callSpan!.attributes).toMatchObject({
      'prazo.dependency': 'supplier',
      'prazo.deadline.time_left_ms': 1_000,
      'prazo.attempts': 2,
    });
    expect(attempts.map((s) => [s.name, s.kind, s.parentSpanContext?.spanId])).toEqual([
      ['prazo.attempt supplier', SpanKind.CLIENT, callSpan!.spanContext().spanId],
      ['prazo.attempt supplier', SpanKind.CLIENT, callSpan!.spanContext().spanId],
    ]);
    expect(attempts[0]!.attributes).toMatchObject({
      'prazo.attempt': 1,
      'prazo.attempt.kind': 'original',
      'prazo.attempt.timeout_ms': 140,
      'prazo.attempt.outcome': 'error',
      'error.type': '_OTHER',
    });
    expect(attempts[0]!.status.code).toBe(SpanStatusCode.ERROR);
    expect(attempts[1]!.attributes).toMatchObject({
      'prazo.attempt': 2,
      'prazo.attempt.kind': 'retry',
      'http.request.resend_count': 1,
      'prazo.deadline.time_left_ms': 940, // 10 ms of the original, then the 50 ms Retry-After
      'prazo.attempt.outcome': 'success',
    });
    expect(eventsOf(callSpan)).toEqual([
      { name: 'prazo.retry_after', attributes: { 'prazo.wait_ms': 50, 'prazo.honoured': true } },
    ]);
    // Each attempt's operation ran with its own attempt span active (an HTTP instrumentation's parent).
    expect(activeInAttempts).toEqual(attempts.map((s) => s.spanContext().spanId));
  });

  it('too little time left: the call span says so (event, error.type), and no attempt span exists', async () => {
    const { dependency } = traced();
    await expect(
      dependency.execute(() => Promise.resolve(1), { idempotent: true, deadline: 50 }),
    ).rejects.toMatchObject({ code: 'DEADLINE_INSUFFICIENT' });
    const [callSpan] = named('prazo.call');
    expect(named('prazo.attempt')).toEqual([]);
    expect(callSpan!.status.code).toBe(SpanStatusCode.ERROR);
    expect(callSpan!.attributes).toMatchObject({
      'error.type': 'DEADLINE_INSUFFICIENT',
      'prazo.attempts': 0,
    });
    expect(eventsOf(callSpan)).toEqual([
      {
        name: 'prazo.deadline_insufficient',
        attributes: { 'prazo.time_left_ms': 50, 'prazo.needed_ms': 100, 'prazo.attempt': 1 },
      },
    ]);
  });

  it('a retry the budget refuses is an event; so is a pushback', async () => {
    const { clock, dependency } = traced({ retryBudget: { maxRatio: 0, minPerSecond: 0 } });
    const refused = dependency.execute((ctx) => fakeCall(clock, ctx, 10, () => 503), {
      idempotent: true,
      deadline: 1_000,
      classify: status503,
    });
    await clock.runAllAsync();
    expect(await refused).toBe(503); // the failed answer is delivered
    expect(eventsOf(named('prazo.call')[0])).toEqual([
      { name: 'prazo.budget_refused', attributes: { 'prazo.attempt.kind': 'retry' } },
    ]);
    exporter.reset();

    const pushed = dependency.execute((ctx) => fakeCall(clock, ctx, 10, () => 503), {
      idempotent: true,
      deadline: 1_000,
      classify: () => ({ retryable: true, pushback: true, outcome: 'error' }),
    });
    await clock.runAllAsync();
    expect(await pushed).toBe(503);
    expect(eventsOf(named('prazo.call')[0])).toEqual([
      { name: 'prazo.pushback', attributes: { 'prazo.attempt': 1, 'prazo.attempt.kind': 'original' } },
    ]);
  });

  it('a call the adaptive throttle refuses is an event on its span', async () => {
    const { clock, dependency } = traced({ attempts: 1 });
    const fail = () => Promise.reject(Object.assign(new Error('503'), { status: 503 }));
    for (let i = 0; i < 40 && !named('prazo.call').some((s) => s.events.length > 0); i += 1) {
      await dependency.execute(fail).catch(() => {});
      clock.advance(5);
    }
    const throttled = named('prazo.call').find((s) => s.events.length > 0)!;
    expect(throttled.attributes['error.type']).toBe('THROTTLED');
    expect(throttled.events[0]!.name).toBe('prazo.throttled');
    expect(throttled.events[0]!.attributes!['prazo.throttle.probability']).toBeGreaterThan(0);
  });

  it('the call span is a child of the span active at the call; disposing stops tracing', async () => {
    const { clock, dependency, instrumentation } = traced();
    const parent = provider.getTracer('test').startSpan('handler');
    const call = context.with(trace.setSpan(ROOT_CONTEXT, parent), () =>
      dependency.execute((ctx) => fakeCall(clock, ctx, 10, () => 'ok'), { idempotent: true, deadline: 500 }),
    );
    await clock.runAllAsync();
    await call;
    parent.end();
    expect(named('prazo.call')[0]!.parentSpanContext?.spanId).toBe(parent.spanContext().spanId);

    instrumentation.dispose();
    expect(executorOf(dependency)!.plan.events.tracer).toBeUndefined();
    exporter.reset();
    const untraced = dependency.execute(() => Promise.resolve('ok'), { idempotent: true, deadline: 500 });
    await clock.runAllAsync();
    await untraced;
    expect(exporter.getFinishedSpans()).toEqual([]);
  });
});
