import {
  type MeterProvider as ApiMeterProvider,
  type Attributes,
  type Context,
  context,
  type Meter,
  ROOT_CONTEXT,
  type Span,
  type SpanOptions,
  type Tracer,
  type TracerProvider,
  trace,
} from '@opentelemetry/api';
import { PrometheusSerializer } from '@opentelemetry/exporter-prometheus';
import { MeterProvider, MetricReader } from '@opentelemetry/sdk-metrics';
import fc from 'fast-check';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FakeClock } from '../../../src/clock/fake.js';
import { Deadline } from '../../../src/deadline/deadline.js';
import { fakeCall } from '../../../src/dependency/dependency.test-helpers.js';
import {
  type AttemptContext,
  createDependency,
  type DependencyEvent,
  type DependencyOptions,
} from '../../../src/dependency/index.js';
import { executorOf } from '../../../src/dependency/transport.js';
import { isInvalidOptions } from '../../../src/errors/index.js';
import type { LatencySource } from '../../../src/latency/types.js';
import { ATTR, METRICS as M, SPAN_ATTR } from '../../../src/otel/constants.js';
import { type InstrumentableDependency, instrumentPrazo } from '../../../src/otel/index.js';
import {
  createSdk,
  EventSource,
  histogramPoint,
  pointValue,
  type SdkHarness,
} from '../../../src/otel/sdk.test-helpers.js';
import { admittedHookOf } from '../../../src/server/admitted.js';
import { createServerEventHub } from '../../../src/server/events.js';
import { createOverrunTracker } from '../../../src/slo/overrun.js';
import { parseBudget } from '../../../src/slo/parse.js';
import { parseExposition, sampleValue } from '../../otel/exposition.js';
import { flush, watch } from './watch.js';

/**
 * Attacks on prazo/otel's public API (`instrumentPrazo`, `addDependency`, `addServer`, `trackSlices`,
 * `dispose`), on the fake clock, through the real metrics SDK (a pull reader) and a span-counting
 * tracer: the same dependency instrumented twice, updated under instrumentation, meters and tracers
 * that throw from every method, odd names and attribute values, handles disposed twice, work after
 * close, many dependencies, option typos; and every span ended exactly once whatever the call's
 * outcome (SPEC X3, R7, V1, H1, H3, D4, D6; traces: issue #26).
 *
 * A test named "Was a defect: ..." pinned a defect found here (it fails on the code before its fix).
 */

// ── helpers ──────────────────────────────────────────────────────────────────────────────────────

interface CountedSpan extends Span {
  readonly name: string;
  readonly attrs: Record<string, unknown>;
  readonly seen: string[];
  ends: number;
}

/** A tracer provider whose spans count their `end()` calls (the SDK would ignore a second one). */
function countingProvider(): TracerProvider & { readonly spans: CountedSpan[] } {
  const spans: CountedSpan[] = [];
  const startSpan = (name: string, options?: SpanOptions): Span => {
    const id = (spans.length + 1).toString(16).padStart(16, '0');
    const span: CountedSpan = {
      name,
      attrs: { ...options?.attributes },
      seen: [],
      ends: 0,
      spanContext: () => ({ traceId: `${'0'.repeat(31)}1`, spanId: id, traceFlags: 1 }),
      setAttribute(key, value) {
        span.attrs[key] = value;
        return span;
      },
      setAttributes(attributes) {
        Object.assign(span.attrs, attributes);
        return span;
      },
      addEvent(eventName) {
        span.seen.push(eventName);
        return span;
      },
      addLink: () => span,
      addLinks: () => span,
      setStatus: () => span,
      updateName: () => span,
      end() {
        span.ends += 1;
      },
      isRecording: () => true,
      recordException() {},
    };
    spans.push(span);
    return span;
  };
  const tracer = { startSpan, startActiveSpan: () => undefined } as unknown as Tracer;
  return { spans, getTracer: () => tracer };
}

/** An object every method of which throws (a broken meter, tracer, span or instrument). */
function broken<T extends object>(what: string): T {
  return new Proxy({} as T, {
    get: (_target, key) =>
      key === 'then'
        ? undefined
        : () => {
            throw new Error(`${what}.${String(key)} is broken`);
          },
  });
}

/** A provider whose tracer makes spans from `span()` (each method may throw). */
const providerOf = (span: () => Span): TracerProvider => ({
  getTracer: () => ({ startSpan: span, startActiveSpan: () => undefined }) as unknown as Tracer,
});

/** A latency source with fixed quantiles: a hedge is sent at a known instant. */
const fixedLatency = (p95: number): LatencySource => ({
  record: () => {},
  quantile: (q) => (q === 0.95 ? p95 : q === 0.5 ? 1 : undefined),
  lastWindow: () => undefined,
  currentWindow: () => {
    throw new Error('unused');
  },
});

function setup(options: Partial<DependencyOptions> = {}) {
  const clock = new FakeClock();
  const dependency = createDependency({
    name: 'supplier',
    clock,
    p99Ms: 100, // attempt timeout 140 ms
    random: () => 0.5,
    ...options,
  } as DependencyOptions);
  return { clock, dependency };
}

const caught = (fn: () => unknown): unknown => {
  try {
    fn();
  } catch (error) {
    return error;
  }
  return undefined;
};

const problemsOf = (error: unknown): string => {
  expect(isInvalidOptions(error), String(error)).toBe(true);
  return (error as { problems: readonly string[] }).problems.join('\n');
};

/** Starts a call, lets the fake clock run it out, and says how it ended. */
async function settle<T>(clock: FakeClock, call: Promise<T>) {
  const box = watch(call);
  await clock.runAllAsync();
  await flush();
  return box;
}

const ok =
  (clock: FakeClock, ms = 10) =>
  (ctx: AttemptContext) =>
    fakeCall(clock, ctx, ms, () => 'ok');

let sdk: SdkHarness;
beforeEach(() => {
  sdk = createSdk();
});
afterEach(() => sdk.shutdown());
const dep = (name: string) => ({ [ATTR.dependency]: name });

// ── a tracer or a meter that throws ─────────────────────────────────────────────────────────────

describe('prazo/otel: the application’s tracer throws (issue #26)', () => {
  it('Was a defect: a tracer whose startSpan throws failed every call with its error; now the call answers, untraced', async () => {
    const { clock, dependency } = setup();
    const otel = instrumentPrazo({
      tracerProvider: providerOf(() => broken<Tracer>('tracer').startSpan('x')),
    });
    otel.addDependency(dependency);
    expect(otel.tracing).toBe(true);
    const box = await settle(clock, dependency.execute(ok(clock), { idempotent: true, deadline: 1_000 }));
    expect(box).toEqual({ state: 'ok', value: 'ok' });
    otel.dispose();
  });

  it('Was a defect: a span whose every method throws failed the call; every outcome now answers as untraced', async () => {
    const { clock, dependency } = setup({ attempts: 3, hedge: true, recorder: fixedLatency(30) });
    const otel = instrumentPrazo({ tracerProvider: providerOf(() => broken<Span>('span')) });
    otel.addDependency(dependency);
    // success
    expect(await settle(clock, dependency.execute(ok(clock), { idempotent: true, deadline: 1_000 }))).toEqual(
      {
        state: 'ok',
        value: 'ok',
      },
    );
    // a retry after an error, then a success
    let n = 0;
    const retried = dependency.execute(
      (ctx) => {
        n += 1;
        return n === 1
          ? Promise.reject(Object.assign(new Error('reset'), { code: 'ECONNRESET' }))
          : ok(clock)(ctx);
      },
      { idempotent: true, deadline: 1_000 },
    );
    expect(await settle(clock, retried)).toEqual({ state: 'ok', value: 'ok' });
    // every attempt times out: the deadline answers
    const stalled = dependency.execute((ctx) => fakeCall(clock, ctx, 10_000, () => 'late'), {
      idempotent: true,
      deadline: 300,
    });
    expect((await settle(clock, stalled)).state).toBe('err');
  });

  it('Was a defect: a span.end() that threw left the call unanswered for ever (its end is handed over after); now it answers', async () => {
    const { clock, dependency } = setup();
    const counting = countingProvider();
    const tracerProvider = providerOf(() => {
      const span = counting.getTracer('t').startSpan('s');
      span.end = () => {
        throw new Error('end is broken');
      };
      return span;
    });
    const otel = instrumentPrazo({ tracerProvider, dependencies: [dependency] });
    const box = await settle(clock, dependency.execute(ok(clock), { idempotent: true, deadline: 1_000 }));
    expect(box).toEqual({ state: 'ok', value: 'ok' });
    const failed = await settle(
      clock,
      dependency.execute(() => Promise.reject(new Error('no')), { idempotent: false, deadline: 1_000 }),
    );
    expect(failed.state).toBe('err');
    expect((failed.error as Error).message).toBe('no');
    otel.dispose();
  });

  it('Was a defect: a context manager whose `with` throws failed the call or never started its attempt; now the attempt runs once, untraced context', async () => {
    const { clock, dependency } = setup();
    const manager = {
      active: () => ROOT_CONTEXT,
      with: () => {
        throw new Error('context manager is broken');
      },
      bind: <T>(_c: Context, target: T) => target,
      enable() {
        return manager;
      },
      disable() {
        return manager;
      },
    };
    context.setGlobalContextManager(manager);
    try {
      const provider = countingProvider();
      const otel = instrumentPrazo({ tracerProvider: provider, dependencies: [dependency] });
      let runs = 0;
      const box = await settle(
        clock,
        dependency.execute(
          (ctx) => {
            runs += 1;
            return ok(clock)(ctx);
          },
          { idempotent: true, deadline: 1_000 },
        ),
      );
      expect(box).toEqual({ state: 'ok', value: 'ok' });
      expect(runs).toBe(1);
      expect(provider.spans.map((s) => s.ends)).toEqual([1, 1]);
      otel.dispose();
    } finally {
      context.disable();
    }
  });

  it('Was a defect: a meter or tracer provider that throws at set-up escaped as its own anonymous error; now INVALID_OPTIONS names the option', () => {
    const meter = problemsOf(caught(() => instrumentPrazo({ meter: broken<Meter>('meter') })));
    expect(meter).toMatch(/`meter` threw .*meter\.createCounter is broken/);
    const provider = problemsOf(
      caught(() =>
        instrumentPrazo({
          meterProvider: { getMeter: () => broken<Meter>('m') } as unknown as ApiMeterProvider,
        }),
      ),
    );
    expect(provider).toMatch(/`meterProvider` threw/);
    const tracer = problemsOf(
      caught(() =>
        instrumentPrazo({
          tracerProvider: {
            getTracer: () => {
              throw new Error('shut down');
            },
          },
        }),
      ),
    );
    expect(tracer).toMatch(/`tracerProvider` threw .*shut down/);
  });

  it('Was a defect: a counter that throws broke the emitter: listeners after prazo/otel missed the event; now only the metric is lost', () => {
    // A meter whose instruments are made but whose every recording throws (a half-shut SDK).
    const instrument = broken<object>('instrument');
    const meter = new Proxy({} as Meter, {
      get: (_t, key) =>
        key === 'addBatchObservableCallback' || key === 'removeBatchObservableCallback'
          ? () => {}
          : () => instrument,
    });
    // A source that hands each event to its listeners in turn, without guarding (as a relay does).
    const source = new EventSource('relay');
    const otel = instrumentPrazo({ meter, dependencies: [source] });
    const heard: DependencyEvent[] = [];
    source.on((e) => heard.push(e));
    const event: DependencyEvent = { type: 'hedge-won', dependency: 'relay', attempt: 2 };
    expect(() => source.emit(event)).not.toThrow();
    expect(heard).toEqual([event]);
    // The server side and the slices too: the request and the tracker's answer go on.
    const hub = createServerEventHub();
    otel.addServer({ name: 'api', events: hub });
    expect(() => hub.emit({ type: 'rejected-expired' } as never)).not.toThrow();
    const tracker = otel.trackSlices({ observe: (_c: string, _ms: number) => true }, 'GET /');
    expect(tracker.observe('db', 5)).toBe(true);
    // and a meter that cannot remove its callback does not make dispose throw
    const sticky = new Proxy({} as Meter, {
      get: (_t, key) =>
        key === 'removeBatchObservableCallback'
          ? () => {
              throw new Error('cannot remove');
            }
          : key === 'addBatchObservableCallback'
            ? () => {}
            : () => instrument,
    });
    const second = instrumentPrazo({ meter: sticky });
    expect(() => second.dispose()).not.toThrow();
    otel.dispose();
  });
});

// ── spans end exactly once ───────────────────────────────────────────────────────────────────────

describe('prazo/otel: every span ends exactly once, whatever the call’s outcome (issue #26, SPEC H1, R6)', () => {
  const traced = (options: Partial<DependencyOptions> = {}) => {
    const s = setup(options);
    const provider = countingProvider();
    const otel = instrumentPrazo({ tracerProvider: provider, dependencies: [s.dependency] });
    const check = (calls: number, attempts: number) => {
      expect(provider.spans.filter((x) => x.name.startsWith('prazo.call')).length).toBe(calls);
      expect(provider.spans.filter((x) => x.name.startsWith('prazo.attempt')).length).toBe(attempts);
      expect(provider.spans.map((x) => x.ends)).toEqual(provider.spans.map(() => 1));
    };
    return { ...s, provider, otel, check };
  };

  it('success, an error, a retry, a timeout (operation ignoring its signal), the deadline', async () => {
    const { clock, dependency, check, provider } = traced({ attempts: 3 });
    expect(
      (await settle(clock, dependency.execute(ok(clock), { idempotent: true, deadline: 500 }))).state,
    ).toBe('ok');
    check(1, 1);
    let n = 0;
    const retried = dependency.execute(
      (ctx) => {
        n += 1;
        return n < 3 ? Promise.reject(Object.assign(new Error('r'), { code: 'ECONNRESET' })) : ok(clock)(ctx);
      },
      { idempotent: true, deadline: 2_000 },
    );
    expect((await settle(clock, retried)).state).toBe('ok');
    check(2, 4);
    // Each attempt is cut at 140 ms and never settles (ignores its signal): the call ends at the deadline.
    const stalled = dependency.execute(() => new Promise<string>(() => {}), {
      idempotent: true,
      deadline: 300,
    });
    const box = await settle(clock, stalled);
    expect((box.error as { code?: string }).code).toMatch(/TIMEOUT|DEADLINE/);
    expect(provider.spans.at(-1)!.attrs[SPAN_ATTR.outcome]).toBe('timeout');
    const attemptsNow = provider.spans.filter((x) => x.name.startsWith('prazo.attempt')).length;
    check(3, attemptsNow);
    expect(attemptsNow).toBeGreaterThan(4);
    // A non-idempotent call that fails: one attempt, one call.
    const once = dependency.execute(() => Promise.reject(new Error('x')), {
      idempotent: false,
      deadline: 300,
    });
    expect((await settle(clock, once)).state).toBe('err');
    check(4, attemptsNow + 1);
  });

  it('the caller aborts mid-attempt, before the call, and while waiting to retry', async () => {
    const { clock, dependency, check, provider } = traced({ attempts: 3 });
    const mid = new AbortController();
    const call = dependency.execute((ctx) => fakeCall(clock, ctx, 100, () => 'ok'), {
      idempotent: true,
      deadline: 1_000,
      signal: mid.signal,
    });
    await clock.advanceAsync(20);
    mid.abort(new Error('caller gone'));
    expect((await settle(clock, call)).state).toBe('err');
    check(1, 1);
    expect(provider.spans[1]!.attrs[SPAN_ATTR.outcome]).toBe('cancelled');

    const before = new AbortController();
    before.abort(new Error('gone already'));
    const early = dependency.execute(ok(clock), { idempotent: true, deadline: 1_000, signal: before.signal });
    expect((await settle(clock, early)).state).toBe('err');
    check(1, 1); // never started: no span at all

    const waiting = new AbortController();
    let n = 0;
    const retrying = dependency.execute(
      () => {
        n += 1;
        if (n === 1) clock.setTimer(() => waiting.abort(new Error('gone in backoff')), 1);
        return Promise.reject(Object.assign(new Error('r'), { code: 'ECONNRESET' }));
      },
      { idempotent: true, deadline: 1_000, signal: waiting.signal },
    );
    expect((await settle(clock, retrying)).state).toBe('err');
    check(2, 2);
  });

  it('a hedge: the loser and the winner each end once; the loser as cancelled', async () => {
    const { clock, dependency, check, provider } = traced({ hedge: true, recorder: fixedLatency(30) });
    const call = dependency.execute(
      (ctx) =>
        ctx.kind === 'original'
          ? new Promise((resolve) => clock.setTimer(() => resolve('slow'), 120)) // ignores its signal
          : fakeCall(clock, ctx, 10, () => 'fast'),
      { idempotent: true, deadline: 1_000, discard: () => {} },
    );
    expect(await settle(clock, call)).toEqual({ state: 'ok', value: 'fast' });
    check(1, 2);
    const [original, hedge] = provider.spans.slice(1);
    expect(original!.attrs[SPAN_ATTR.attemptKind]).toBe('original');
    expect(original!.attrs[SPAN_ATTR.outcome]).toBe('cancelled');
    expect(hedge!.attrs[SPAN_ATTR.attemptKind]).toBe('hedge');
    expect(hedge!.attrs[SPAN_ATTR.outcome]).toBe('success');
  });

  it('a call refused before any attempt (deadline insufficient) ends its one span once', async () => {
    const { clock, dependency, check } = traced();
    const refused = dependency.execute(ok(clock), { idempotent: true, deadline: 10 });
    expect(((await settle(clock, refused)).error as { code?: string }).code).toBe('DEADLINE_INSUFFICIENT');
    check(1, 0);
  });

  it('a call waiting for a concurrency slot: served, cut by its deadline, aborted by its caller; the throttle refusing', async () => {
    const { clock, dependency, check } = traced({ concurrencyLimit: { maxInFlight: 1, maxQueue: 5 } });
    const first = dependency.execute((ctx) => fakeCall(clock, ctx, 100, () => 'first'), {
      idempotent: true,
      deadline: 1_000,
    });
    const served = dependency.execute(ok(clock), { idempotent: true, deadline: 1_000 });
    const cut = dependency.execute(ok(clock), { idempotent: true, deadline: 150 });
    const gone = new AbortController();
    const aborted = dependency.execute(ok(clock), { idempotent: true, deadline: 1_000, signal: gone.signal });
    await clock.advanceAsync(5);
    gone.abort(new Error('caller gone'));
    const boxes = [watch(first), watch(served), watch(cut), watch(aborted)];
    await clock.runAllAsync();
    await flush();
    expect(boxes.map((b) => b.state)).toEqual(['ok', 'ok', 'err', 'err']);
    const attempts = boxes.filter((b) => b.state === 'ok').length;
    check(4, attempts);

    const throttled = traced({ attempts: 1 });
    const fail = () => Promise.reject(Object.assign(new Error('503'), { status: 503 }));
    let refused = 0;
    for (let i = 0; i < 40; i += 1) {
      await throttled.dependency.execute(fail).catch((e: { code?: string }) => {
        if (e.code === 'THROTTLED') refused += 1;
      });
      throttled.clock.advance(5);
    }
    expect(refused).toBeGreaterThan(0);
    throttled.check(40, 40 - refused);
  });

  it('the instrumentation disposed while calls are in flight: their spans still end, once', async () => {
    const { clock, dependency, check, otel } = traced({ hedge: true, recorder: fixedLatency(30) });
    const call = dependency.execute((ctx) => fakeCall(clock, ctx, 50, () => 'ok'), {
      idempotent: true,
      deadline: 1_000,
    });
    await clock.advanceAsync(35); // the hedge is out
    otel.dispose();
    expect(executorOf(dependency)!.plan.events.tracer).toBeUndefined();
    expect((await settle(clock, call)).state).toBe('ok');
    check(1, 2);
  });

  it('property: any mix of successes, errors and stalls, with or without a hedge, ends every span once', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.constantFrom('ok', 'error', 'stall', 'slow'), { minLength: 1, maxLength: 4 }),
        fc.boolean(),
        fc.integer({ min: 150, max: 2_000 }),
        async (plan, hedge, deadline) => {
          const { clock, dependency, provider, otel } = traced({
            attempts: 3,
            hedge,
            recorder: fixedLatency(30),
          });
          let i = 0;
          const call = dependency.execute(
            (ctx) => {
              const step = plan[Math.min(i, plan.length - 1)];
              i += 1;
              if (step === 'ok') return fakeCall(clock, ctx, 5, () => 'ok');
              if (step === 'slow') return fakeCall(clock, ctx, 60, () => 'slow');
              if (step === 'stall') return new Promise<string>(() => {});
              return Promise.reject(Object.assign(new Error('e'), { code: 'ECONNRESET' }));
            },
            { idempotent: true, deadline, discard: () => {} },
          );
          const box = await settle(clock, call);
          expect(box.state).not.toBe('pending');
          expect(provider.spans.map((s) => s.ends)).toEqual(provider.spans.map(() => 1));
          otel.dispose();
        },
      ),
      { numRuns: 100 },
    );
  });
});

// ── the same dependency, twice, and updated ──────────────────────────────────────────────────────

describe('prazo/otel: one dependency instrumented twice, updated, removed (SPEC X3, X2)', () => {
  it('Was a defect: disposing a second instrumentation of a dependency switched the first one’s tracing off for good', async () => {
    const { clock, dependency } = setup();
    const first = countingProvider();
    const second = countingProvider();
    const a = instrumentPrazo({ tracerProvider: first, dependencies: [dependency] });
    const b = instrumentPrazo({ tracerProvider: second, dependencies: [dependency] });
    await settle(clock, dependency.execute(ok(clock), { idempotent: true, deadline: 500 }));
    // The newest traces, alone: one call span per call, never two.
    expect([first.spans.length, second.spans.length]).toEqual([0, 2]);
    b.dispose();
    b.dispose();
    await settle(clock, dependency.execute(ok(clock), { idempotent: true, deadline: 500 }));
    expect([first.spans.length, second.spans.length]).toEqual([2, 2]);
    a.dispose();
    expect(executorOf(dependency)!.plan.events.tracer).toBeUndefined();
    await settle(clock, dependency.execute(ok(clock), { idempotent: true, deadline: 500 }));
    expect([first.spans.length, second.spans.length]).toEqual([2, 2]);
  });

  it('disposed in the order made, too: the newer keeps tracing, then nothing does', async () => {
    const { clock, dependency } = setup();
    const first = countingProvider();
    const second = countingProvider();
    const a = instrumentPrazo({ tracerProvider: first, dependencies: [dependency] });
    const b = instrumentPrazo({ tracerProvider: second, dependencies: [dependency] });
    a.dispose();
    await settle(clock, dependency.execute(ok(clock), { idempotent: true, deadline: 500 }));
    expect([first.spans.length, second.spans.length]).toEqual([0, 2]);
    b.dispose();
    expect(executorOf(dependency)!.plan.events.tracer).toBeUndefined();
  });

  it('the same dependency twice in one instrumentation is INVALID_OPTIONS, in the options or added later', () => {
    const { dependency } = setup();
    expect(problemsOf(caught(() => instrumentPrazo({ dependencies: [dependency, dependency] })))).toContain(
      '"supplier" appears twice',
    );
    const otel = instrumentPrazo({ meterProvider: sdk.provider, dependencies: [dependency] });
    expect(problemsOf(caught(() => otel.addDependency(dependency)))).toContain('already instrumented');
    otel.dispose();
  });

  it('an update of the dependency’s options: the gauges follow it, the spans keep coming, the counters count on', async () => {
    const { clock, dependency } = setup();
    const provider = countingProvider();
    const otel = instrumentPrazo({
      meterProvider: sdk.provider,
      tracerProvider: provider,
      dependencies: [dependency],
    });
    const response = { ...dep('supplier'), [ATTR.timeoutPhase]: 'response' };
    let got = await sdk.collect();
    expect(pointValue(got.get(M.timeoutConfigured.name), response)).toBeCloseTo(0.14, 10);
    await settle(clock, dependency.execute(ok(clock), { idempotent: true, deadline: 1_000 }));
    dependency.update({ p99Ms: 200 });
    dependency.recalibrate(300);
    await settle(clock, dependency.execute(ok(clock), { idempotent: true, deadline: 1_000 }));
    got = await sdk.collect();
    expect(pointValue(got.get(M.timeoutConfigured.name), response)).toBeCloseTo(0.42, 10);
    expect(pointValue(got.get(M.attempts.name), { ...dep('supplier'), [ATTR.attemptKind]: 'original' })).toBe(
      2,
    );
    expect(provider.spans.filter((s) => s.name === 'prazo.call supplier')).toHaveLength(2);
    // An update the executor refuses (a name cannot change) changes nothing here either.
    expect(() => dependency.update({ name: 'other' } as never)).toThrow();
    got = await sdk.collect();
    expect(pointValue(got.get(M.timeoutConfigured.name), response)).toBeCloseTo(0.42, 10);
    otel.dispose();
  });

  it('instrumenting after the SDK is shut down, or the SDK shut down under it: nothing throws, calls answer', async () => {
    const { clock, dependency } = setup();
    const closed = createSdk();
    await closed.shutdown();
    const late = instrumentPrazo({ meterProvider: closed.provider, dependencies: [dependency] });
    expect(late.active).toBe(false); // the SDK hands out its no-op meter once shut down
    late.dispose();

    const live = createSdk();
    const otel = instrumentPrazo({ meterProvider: live.provider, dependencies: [dependency] });
    await live.shutdown();
    expect(await settle(clock, dependency.execute(ok(clock), { idempotent: true, deadline: 500 }))).toEqual({
      state: 'ok',
      value: 'ok',
    });
    expect(() => otel.dispose()).not.toThrow();
  });

  it('handles disposed twice, in any order, after the instrumentation itself: no throw, no name taken back', () => {
    const otel = instrumentPrazo({ meterProvider: sdk.provider });
    const one = new EventSource('x');
    const h1 = otel.addDependency(one);
    h1.dispose();
    const two = new EventSource('x');
    const h2 = otel.addDependency(two);
    h1.dispose(); // an old handle must not free the name its successor holds
    expect(problemsOf(caught(() => otel.addDependency(new EventSource('x'))))).toContain(
      'already instrumented',
    );
    expect(two.listeners).toBe(1);
    otel.dispose();
    h2.dispose();
    otel.dispose();
    expect([one.listeners, two.listeners]).toEqual([0, 0]);
  });

  it('after dispose: adding subscribes nothing, installs no tracer, observes no gauge, and says so by a no-op handle', async () => {
    const { dependency } = setup();
    const otel = instrumentPrazo({ meterProvider: sdk.provider, tracerProvider: countingProvider() });
    otel.dispose();
    let read = 0;
    const late = Object.assign(new EventSource('late'), {
      budget: {
        state: () => {
          read += 1;
          return { ratio: 0.5 };
        },
      },
    });
    otel.addDependency(late).dispose();
    otel.addDependency(late);
    otel.addDependency(dependency);
    otel.addServer({ name: 'api', events: createServerEventHub() });
    expect(late.listeners).toBe(0);
    expect(executorOf(dependency)!.plan.events.tracer).toBeUndefined();
    const got = await sdk.collect();
    expect(read).toBe(0);
    expect(got.get(M.retryRatio.name)?.dataPoints ?? []).toHaveLength(0);
    const tracker = { observe: (_c: string, _ms: number) => false };
    otel.trackSlices(tracker, 'e').observe('c', 1);
    expect((await sdk.collect()).get(M.sliceObservations.name)?.dataPoints ?? []).toHaveLength(0);
  });
});

// ── bad arguments and options ────────────────────────────────────────────────────────────────────

describe('prazo/otel: bad arguments are INVALID_OPTIONS, every problem at once', () => {
  it('Was a defect: addDependency/addServer of a wrong argument threw a plain TypeError from inside (or took a number for a name)', () => {
    const otel = instrumentPrazo({ meterProvider: sdk.provider });
    const hub = createServerEventHub();
    const noop = { dispose() {} };
    for (const bad of [
      null,
      undefined,
      'x',
      42,
      {},
      { name: 'x' },
      { name: 3, on: () => noop },
      { name: '', on: () => noop },
    ]) {
      const error = caught(() => otel.addDependency(bad as never));
      expect(isInvalidOptions(error), `addDependency(${JSON.stringify(bad)})`).toBe(true);
      expect((error as Error).message).toContain('instrumentPrazo.addDependency');
    }
    for (const bad of [null, undefined, 'x', {}, { name: 'x' }, { name: 3, events: hub }, { events: {} }]) {
      const error = caught(() => otel.addServer(bad as never));
      expect(isInvalidOptions(error), `addServer(${JSON.stringify(bad)})`).toBe(true);
    }
    // Nothing was left half-made: the good ones go in after.
    otel.addDependency(new EventSource('x'));
    otel.addServer(hub);
    otel.dispose();
  });

  it('Was a defect: two servers under one name through addServer merged their series silently (the options refuse it)', async () => {
    const otel = instrumentPrazo({
      meterProvider: sdk.provider,
      servers: [{ name: 'api', events: createServerEventHub() }],
    });
    expect(
      problemsOf(caught(() => otel.addServer({ name: 'api', events: createServerEventHub() }))),
    ).toContain('already instrumented');
    const hub = createServerEventHub();
    otel.addServer(hub); // named `default`
    expect(problemsOf(caught(() => otel.addServer(createServerEventHub())))).toContain('"default"');
    // Freed when its handle goes.
    const other = otel.addServer({ name: 'other', events: createServerEventHub() });
    other.dispose();
    otel.addServer({ name: 'other', events: createServerEventHub() });
    otel.dispose();
  });

  it('Was a defect: an addDependency whose `on` threw kept its name (and its tracer) for ever; now nothing is left behind', () => {
    const { dependency } = setup();
    const otel = instrumentPrazo({ meterProvider: sdk.provider, tracerProvider: countingProvider() });
    const refusing: InstrumentableDependency = {
      name: 'supplier',
      dependency: dependency as never,
      on: () => {
        throw new Error('not now');
      },
    };
    expect(() => otel.addDependency(refusing)).toThrow('not now');
    expect(executorOf(dependency)!.plan.events.tracer).toBeUndefined();
    otel.addDependency(dependency); // the name is free
    expect(executorOf(dependency)!.plan.events.tracer).toBeDefined();
    otel.dispose();
  });

  it('Was a defect: instrumentPrazo whose second dependency’s `on` throws left the first subscribed, traced and gauged, with no handle to undo it', async () => {
    const { dependency } = setup();
    let reads = 0;
    const first = Object.assign(new EventSource('first'), {
      budget: {
        state: () => {
          reads += 1;
          return { ratio: 0 };
        },
      },
    });
    const refusing = {
      name: 'refusing',
      on: () => {
        throw new Error('not now');
      },
    };
    const provider = countingProvider();
    expect(() =>
      instrumentPrazo({
        meterProvider: sdk.provider,
        tracerProvider: provider,
        dependencies: [first, dependency, refusing],
      }),
    ).toThrow('not now');
    expect(first.listeners).toBe(0);
    expect(executorOf(dependency)!.plan.events.tracer).toBeUndefined();
    await sdk.collect();
    expect(reads).toBe(0);
    // A tracer provider that throws at set-up leaves no gauge callback behind either.
    const caughtError = caught(() =>
      instrumentPrazo({
        meterProvider: sdk.provider,
        tracerProvider: {
          getTracer: () => {
            throw new Error('shut down');
          },
        },
        dependencies: [first],
      }),
    );
    expect(isInvalidOptions(caughtError)).toBe(true);
    await sdk.collect();
    expect([reads, first.listeners]).toEqual([0, 0]);
  });

  it('Was a defect: a source whose `on` hands back nothing (or a throwing dispose) made dispose() throw half-way, the sources after it left subscribed', async () => {
    let reads = 0;
    const budget = {
      state: () => {
        reads += 1;
        return { ratio: 0 };
      },
    };
    const nothing = { name: 'nothing', on: () => undefined as never, budget };
    const throwing = {
      name: 'throwing',
      on: () => ({
        dispose: () => {
          throw new Error('cannot');
        },
      }),
      budget,
    };
    const later = Object.assign(new EventSource('later'), { budget });
    const otel = instrumentPrazo({ meterProvider: sdk.provider, dependencies: [nothing, throwing, later] });
    const hub = { onServerEvent: () => undefined as never };
    otel.addServer({ name: 'odd', events: hub });
    expect(() => otel.dispose()).not.toThrow();
    expect(later.listeners).toBe(0);
    reads = 0;
    await sdk.collect();
    expect(reads).toBe(0);
  });

  it('option typos and wrong types: each named, with a suggestion, all together', () => {
    const problems = problemsOf(
      caught(() =>
        instrumentPrazo({
          meterprovider: sdk.provider,
          dependancies: [],
          trace: false,
          traces: 'no',
          servers: 'api',
          tracerProvider: {},
        } as never),
      ),
    );
    for (const fragment of [
      'did you mean `meterProvider`',
      'did you mean `dependencies`',
      'unknown option `trace`',
      '`traces` must be true or false',
      '`servers`',
      '`tracerProvider`',
    ]) {
      expect(problems).toContain(fragment);
    }
    for (const bad of [null, 'x', 3, [], new Map([['meter', 1]])]) {
      expect(isInvalidOptions(caught(() => instrumentPrazo(bad as never))), String(bad)).toBe(true);
    }
    // A Map where the list goes: its entries are not dependencies.
    expect(
      problemsOf(caught(() => instrumentPrazo({ dependencies: new Map([['a', 1]]) as never }))),
    ).toContain('dependencies[0].name');
    // Prototype keys are unknown options, not prototypes.
    expect(problemsOf(caught(() => instrumentPrazo(JSON.parse('{"__proto__": {"traces": 1}}'))))).toContain(
      '__proto__',
    );
  });

  it('trackSlices with wrong arguments: INVALID_OPTIONS; odd times and names count as the tracker decides', async () => {
    const otel = instrumentPrazo({ meterProvider: sdk.provider });
    for (const [tracker, endpoint] of [
      [null, 'e'],
      [{}, 'e'],
      [{ observe: () => true }, ''],
      [{ observe: () => true }, 3],
    ] as const) {
      expect(isInvalidOptions(caught(() => otel.trackSlices(tracker as never, endpoint as never)))).toBe(
        true,
      );
    }
    const { budget } = parseBudget({
      endpoint: 'POST /orders',
      total_slo_ms: 100,
      components: [{ name: 'db', kind: 'remote', slice_ms: 100, dependency: 'db' }],
    });
    const tracker = otel.trackSlices(createOverrunTracker({ budget: budget! }), 'POST /orders');
    for (const ms of [Number.NaN, -0, -5, Number.POSITIVE_INFINITY, 1e308, 50, 150])
      tracker.observe('db', ms);
    tracker.observe('__proto__', 150);
    tracker.observe('constructor', 150);
    const got = await sdk.collect();
    const points = got.get(M.sliceObservations.name)?.dataPoints ?? [];
    // Only the budget's own component, NaN left out; no series for names outside the budget.
    expect(points.map((p) => p.attributes[ATTR.component])).toEqual(['db']);
    expect(points[0]!.value).toBe(6);
    expect(tracker.report()[0]!.name).toBe('db');
    otel.dispose();
  });
});

// ── what a user's event source or tracker may be ─────────────────────────────────────────────────

describe('prazo/otel: a user’s own event source, tracker and server hub (SPEC X3, B3, D7)', () => {
  it('Was a defect: an event whose kind, outcome, phase or reason is `__proto__`/`constructor` counted a series without `prazo.dependency`', async () => {
    const source = new EventSource('x');
    const otel = instrumentPrazo({ meterProvider: sdk.provider, dependencies: [source] });
    const end = { type: 'attempt-end', dependency: 'x', kind: 'original', attempt: 1, latencyMs: 5 };
    for (const key of ['__proto__', 'constructor', 'toString', 'hasOwnProperty']) {
      source.emit({ type: 'attempt', dependency: 'x', kind: key, attempt: 1 } as never);
      source.emit({ type: 'budget-refused', dependency: 'x', kind: key } as never);
      source.emit({ ...end, outcome: key } as never);
      source.emit({ ...end, outcome: 'timeout', phase: key } as never);
      source.emit({ type: 'instance-ejected', dependency: 'x', instance: 'http://a', reason: key } as never);
    }
    const got = await sdk.collect();
    for (const [name, metric] of got) {
      for (const point of metric.dataPoints) {
        expect(point.attributes, name).not.toBeNull();
        expect(typeof point.attributes, name).toBe('object');
        expect(point.attributes[ATTR.dependency], name).toBe('x');
      }
    }
    expect(pointValue(got.get(M.attempts.name), dep('x'))).toBe(4);
    expect(pointValue(got.get(M.timeouts.name), { ...dep('x'), [ATTR.timeoutPhase]: 'unknown' })).toBe(4);
    otel.dispose();
  });

  it('Was a defect: an event of a user’s source with no (or a non-string) dependency name counted a series without `prazo.dependency`', async () => {
    const source = new EventSource('x');
    const otel = instrumentPrazo({ meterProvider: sdk.provider, dependencies: [source] });
    for (const name of [undefined, null, 3, '', {}]) {
      source.emit({ type: 'attempt', dependency: name, kind: 'original', attempt: 1 } as never);
    }
    source.emit({ type: 'attempt', dependency: 'other', kind: 'original', attempt: 1 });
    source.emit({ type: 'instance-returned', dependency: undefined, instance: 'http://a' } as never);
    const got = await sdk.collect();
    expect(pointValue(got.get(M.instanceReturns.name), { ...dep('x'), [ATTR.instance]: 'http://a' })).toBe(1);
    const points = got.get(M.attempts.name)?.dataPoints ?? [];
    expect(points.map((p) => [p.attributes[ATTR.dependency], p.value])).toEqual([
      ['x', 5],
      ['other', 1],
    ]);
    otel.dispose();
  });

  it('Was a defect: instances of two dependencies whose names join alike (`a\\0b`+`c`, `a`+`b\\0c`) shared one attribute set', async () => {
    const source = new EventSource('a');
    const otel = instrumentPrazo({ meterProvider: sdk.provider, dependencies: [source] });
    source.emit({ type: 'attempt', dependency: 'a\u0000b', kind: 'original', attempt: 1, instance: 'c' });
    source.emit({ type: 'attempt', dependency: 'a', kind: 'original', attempt: 1, instance: 'b\u0000c' });
    const points = (await sdk.collect()).get(M.instanceAttempts.name)?.dataPoints ?? [];
    expect(points.map((p) => [p.attributes[ATTR.dependency], p.attributes[ATTR.instance], p.value])).toEqual([
      ['a\u0000b', 'c', 1],
      ['a', 'b\u0000c', 1],
    ]);
    otel.dispose();
  });

  it('Was a defect: one attempt-end with an Infinity latency made the duration histogram’s sum +Inf for good', async () => {
    const source = new EventSource('x');
    const otel = instrumentPrazo({ meterProvider: sdk.provider, dependencies: [source] });
    const end = {
      type: 'attempt-end',
      dependency: 'x',
      kind: 'original',
      attempt: 1,
      outcome: 'success',
    } as const;
    for (const latencyMs of [Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, Number.NaN, -0, 1e308, 20]) {
      source.emit({ ...end, latencyMs });
    }
    const got = await sdk.collect();
    const point = histogramPoint(got.get(M.attemptDuration.name), { ...dep('x'), [ATTR.outcome]: 'success' });
    expect(point?.count).toBe(3); // -0, 1e308 (a finite value, in the last bucket) and 20 ms
    expect(Number.isFinite(point?.sum)).toBe(true);
    otel.dispose();
  });

  it('Was a defect: trackSlices’ tracker, a class with private fields, threw a TypeError from its own methods', () => {
    class Tracker {
      #runs = 0;
      observe(_component: string, elapsedMs: number): boolean {
        this.#runs += 1;
        return elapsedMs > 10;
      }
      get runs(): number {
        return this.#runs;
      }
      report(): { name: string }[] {
        return [{ name: `db:${this.#runs}` }];
      }
    }
    const otel = instrumentPrazo({ meterProvider: sdk.provider });
    const tracker = otel.trackSlices(new Tracker(), 'GET /');
    expect(tracker.observe('db:0', 20)).toBe(true);
    expect(tracker.runs).toBe(1);
    expect(tracker.report()).toEqual([{ name: 'db:1' }]);
    expect(tracker).toBeInstanceOf(Tracker);
    // A frozen one (createOverrunTracker's) still gets its observe counted.
    const frozen = otel.trackSlices(
      Object.freeze({ observe: (_c: string, _ms: number) => false, extra: 1 }),
      'GET /x',
    );
    expect(frozen.observe('a', 1)).toBe(false);
    expect(frozen.extra).toBe(1);
    otel.dispose();
  });

  it('Was a defect: trackSlices of a tracker whose `report` returns something else (nothing, a string) or throws threw a TypeError', async () => {
    const otel = instrumentPrazo({ meterProvider: sdk.provider });
    const reports: (() => unknown)[] = [
      () => undefined,
      () => 'db',
      () => [null, 3],
      () => {
        throw new Error('no report yet');
      },
    ];
    for (const [i, report] of reports.entries()) {
      const tracker = otel.trackSlices({ observe: (_c: string, ms: number) => ms > 10, report }, `e${i}`);
      expect(tracker.observe('db', 20)).toBe(true);
    }
    const points = (await sdk.collect()).get(M.sliceOverruns.name)?.dataPoints ?? [];
    expect(points.map((p) => p.value)).toEqual([1, 1, 1, 1]);
    otel.dispose();
  });

  it('Was a defect: a server span whose methods throw made the deadline hook throw (a process warning per request)', () => {
    const hub = createServerEventHub();
    const otel = instrumentPrazo({ tracerProvider: countingProvider(), servers: [hub] });
    const hook = admittedHookOf(hub)!;
    const manager = {
      active: () => trace.setSpan(ROOT_CONTEXT, broken<Span>('span')),
      with: <F extends (...a: never[]) => unknown>(_c: Context, fn: F) => fn(),
      bind: <T>(_c: Context, target: T) => target,
      enable() {
        return manager;
      },
      disable() {
        return manager;
      },
    };
    context.setGlobalContextManager(manager as never);
    try {
      const incoming = { source: 'grpc-timeout', capped: false } as never;
      expect(() => hook(incoming, 100)).not.toThrow();
    } finally {
      context.disable();
      otel.dispose();
    }
  });

  it('Was a defect: disposing a second instrumentation of a server hub took the first one’s deadline hook away for good', () => {
    const hub = createServerEventHub();
    const a = instrumentPrazo({
      tracerProvider: countingProvider(),
      servers: [{ name: 'api', events: hub }],
    });
    const hookA = admittedHookOf(hub);
    expect(hookA).toBeDefined();
    const b = instrumentPrazo({
      tracerProvider: countingProvider(),
      servers: [{ name: 'api', events: hub }],
    });
    expect(admittedHookOf(hub)).not.toBe(hookA);
    b.dispose();
    expect(admittedHookOf(hub)).toBe(hookA);
    b.dispose();
    expect(admittedHookOf(hub)).toBe(hookA);
    a.dispose();
    expect(admittedHookOf(hub)).toBeUndefined();
  });
});

// ── names and values ─────────────────────────────────────────────────────────────────────────────

class PullReader extends MetricReader {
  protected override async onForceFlush(): Promise<void> {}
  protected override async onShutdown(): Promise<void> {}
}

describe('prazo/otel: odd names and gauge values reach Prometheus intact or not at all (SPEC X3, V1)', () => {
  it('property: any dependency name (control characters, quotes, backslashes, huge, __proto__) is one label value Prometheus reads back', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          fc.string({ unit: 'binary', minLength: 1, maxLength: 30 }),
          fc.constantFrom('__proto__', 'constructor', 'a\nb', 'a"b\\c', '\r\n', 'x'.repeat(5_000), '\u0000'),
        ),
        async (name) => {
          const reader = new PullReader();
          const provider = new MeterProvider({ readers: [reader] });
          const source = Object.assign(new EventSource(name), {
            budget: { state: () => ({ ratio: 0.25 }) },
            timeouts: { connectMs: 1e308, responseMs: Number.NaN },
          });
          const otel = instrumentPrazo({ meterProvider: provider, dependencies: [source] });
          source.emit({ type: 'attempt', dependency: name, kind: 'original', attempt: 1 });
          const { resourceMetrics } = await reader.collect();
          const text = new PrometheusSerializer('', false).serialize(resourceMetrics);
          const parsed = parseExposition(text);
          expect(
            sampleValue(parsed, 'prazo_dependency_attempts_total', {
              prazo_dependency: name,
              prazo_attempt_kind: 'original',
            }),
          ).toBe(1);
          expect(sampleValue(parsed, 'prazo_dependency_retry_ratio', { prazo_dependency: name })).toBe(0.25);
          // A NaN timeout is no point; a huge one is its value, not Infinity.
          expect(text).not.toMatch(/prazo_dependency_timeout_configured\{[^}]*response[^}]*\}/);
          expect(text).not.toMatch(/\bNaN\b|\+Inf(?!")/);
          otel.dispose();
          await provider.shutdown();
        },
      ),
      { numRuns: 60 },
    );
  });

  it('gauge values NaN, ±Infinity, negative, -0, strings and getters that throw: no point, the others unharmed', async () => {
    const bad = [Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, -1, '0.5', null, {}];
    const sources = bad.map((value, i) =>
      Object.assign(new EventSource(`bad${i}`), {
        budget: { state: () => ({ ratio: value }) },
        recorder: { quantile: () => value },
        timeouts: { connectMs: value, responseMs: value },
        configVersion: { hash: 'h', generation: value },
        throttling: () => ({ probability: value }),
        instances: () => value,
      }),
    );
    const getter = Object.defineProperty(new EventSource('getter'), 'timeouts', {
      get: () => {
        throw new Error('boom');
      },
    });
    const zero = Object.assign(new EventSource('zero'), { budget: { state: () => ({ ratio: -0 }) } });
    const fine = Object.assign(new EventSource('fine'), { budget: { state: () => ({ ratio: 0.1 }) } });
    const otel = instrumentPrazo({
      meterProvider: sdk.provider,
      dependencies: [...sources, getter, zero, fine] as never,
    });
    const got = await sdk.collect();
    for (const metric of [
      M.retryRatio,
      M.timeoutConfigured,
      M.latencyP99,
      M.configGeneration,
      M.throttleProbability,
      M.instances,
    ]) {
      const names = (got.get(metric.name)?.dataPoints ?? []).map((p) => p.attributes[ATTR.dependency]);
      expect(
        names.filter((n) => String(n).startsWith('bad')),
        metric.name,
      ).toEqual([]);
    }
    expect(pointValue(got.get(M.retryRatio.name), dep('fine'))).toBe(0.1);
    expect(
      Object.is(pointValue(got.get(M.retryRatio.name), dep('zero')), 0) ||
        pointValue(got.get(M.retryRatio.name), dep('zero')) === 0,
    ).toBe(true);
    otel.dispose();
  });
});

// ── many dependencies: nothing kept alive ────────────────────────────────────────────────────────

describe('prazo/otel: many dependencies and instrumentations, nothing kept alive after dispose', () => {
  it('1,000 dependencies added and removed: no listener, no gauge read, no name held; a collection stays empty', async () => {
    const otel = instrumentPrazo({ meterProvider: sdk.provider });
    let reads = 0;
    const sources = Array.from({ length: 1_000 }, (_, i) =>
      Object.assign(new EventSource(`d${i}`), {
        budget: {
          state: () => {
            reads += 1;
            return { ratio: 0 };
          },
        },
      }),
    );
    const handles = sources.map((s) => otel.addDependency(s));
    expect((await sdk.collect()).get(M.retryRatio.name)?.dataPoints).toHaveLength(1_000);
    for (const h of handles) h.dispose();
    for (const h of handles) h.dispose();
    reads = 0;
    await sdk.collect();
    // prazo observes none of them any more. (The JS SDK, 2.x, under cumulative temporality, keeps
    // exporting an observable gauge's attribute sets at their last value once no callback observes
    // them: a removed dependency's gauge series stay, frozen, until the process restarts. Not prazo's
    // to undo: the API has no way to withdraw an attribute set.)
    expect(reads).toBe(0);
    expect(sources.every((s) => s.listeners === 0)).toBe(true);
    // Every name is free again.
    for (const s of sources.slice(0, 10)) otel.addDependency(new EventSource(s.name));
    otel.dispose();
  });

  it('200 instrumentations of one dependency made and disposed: its gauges are read by none, its tracer slot is empty', async () => {
    const { dependency } = setup();
    let reads = 0;
    const watched = Object.assign(new EventSource('w'), {
      budget: {
        state: () => {
          reads += 1;
          return { ratio: 0 };
        },
      },
    });
    for (let i = 0; i < 200; i += 1) {
      instrumentPrazo({
        meterProvider: sdk.provider,
        tracerProvider: countingProvider(),
        dependencies: [dependency, watched],
      }).dispose();
    }
    await sdk.collect();
    expect(reads).toBe(0);
    expect(watched.listeners).toBe(0);
    expect(executorOf(dependency)!.plan.events.tracer).toBeUndefined();
  });
});

// ── endless deadlines in spans ───────────────────────────────────────────────────────────────────

describe('prazo/otel: span attributes are numbers a backend reads (issue #26)', () => {
  it('Was a defect: an endless deadline wrote time_left_ms = Infinity on the call and attempt spans (null in OTLP/JSON); now no attribute', async () => {
    const { clock, dependency } = setup();
    const provider = countingProvider();
    const otel = instrumentPrazo({ tracerProvider: provider, dependencies: [dependency] });
    const endless = Deadline.after(Number.POSITIVE_INFINITY, { clock });
    expect(
      await settle(clock, dependency.execute(ok(clock), { idempotent: true, deadline: endless })),
    ).toEqual({
      state: 'ok',
      value: 'ok',
    });
    expect(provider.spans).toHaveLength(2);
    for (const span of provider.spans) {
      expect(span.attrs).not.toHaveProperty([SPAN_ATTR.timeLeft]);
      for (const value of Object.values(span.attrs)) {
        if (typeof value === 'number') expect(Number.isFinite(value), span.name).toBe(true);
      }
    }
    // A finite deadline still says it.
    await settle(clock, dependency.execute(ok(clock), { idempotent: true, deadline: 800 }));
    expect(provider.spans[2]!.attrs[SPAN_ATTR.timeLeft]).toBe(800);
    otel.dispose();
  });
});

void (null as unknown as Context | Attributes);
