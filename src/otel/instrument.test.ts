import { metrics } from '@opentelemetry/api';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createRetryBudget } from '../budget/budget.js';
import { FakeClock } from '../clock/fake.js';
import { createDependency } from '../dependency/dependency.js';
import { InvalidOptionsError } from '../errors/options.js';
import { createLatencyRecorder } from '../latency/recorder.js';
import { ATTR, DURATION_BUCKETS_S, METRICS } from './constants.js';
import { instrumentPrazo } from './instrument.js';
import { createSdk, EventSource, histogramPoint, pointValue, type SdkHarness } from './sdk.test-helpers.js';

const dep = (name = 'supplier') => ({ [ATTR.dependency]: name });
const M = METRICS;

describe('instrumentPrazo: dependency events (SPEC R7, D6, H3)', () => {
  let sdk: SdkHarness;
  beforeEach(() => {
    sdk = createSdk();
  });
  afterEach(() => sdk.shutdown());

  it('counts attempts by kind, refusals by kind, timeouts by phase, fast failures and hedges won', async () => {
    const source = new EventSource('supplier');
    const otel = instrumentPrazo({ meterProvider: sdk.provider, dependencies: [source] });
    const d = 'supplier';
    for (let i = 0; i < 5; i += 1)
      source.emit({ type: 'attempt', dependency: d, kind: 'original', attempt: 1 });
    source.emit({ type: 'attempt', dependency: d, kind: 'retry', attempt: 2 });
    source.emit({ type: 'attempt', dependency: d, kind: 'hedge', attempt: 3 });
    source.emit({ type: 'budget-refused', dependency: d, kind: 'retry' });
    source.emit({ type: 'budget-refused', dependency: d, kind: 'retry' });
    source.emit({ type: 'budget-refused', dependency: d, kind: 'hedge' });
    const end = { type: 'attempt-end', dependency: d, kind: 'original', attempt: 1 } as const;
    source.emit({ ...end, latencyMs: 400, outcome: 'timeout', phase: 'connect' });
    source.emit({ ...end, latencyMs: 300, outcome: 'timeout', phase: 'response' });
    source.emit({ ...end, latencyMs: 90, outcome: 'timeout', phase: 'deadline' });
    source.emit({ ...end, latencyMs: 20, outcome: 'success' });
    source.emit({ type: 'deadline-insufficient', dependency: d, remainingMs: 10, neededMs: 250, attempt: 1 });
    source.emit({ type: 'hedge-won', dependency: d, attempt: 3 });
    source.emit({ type: 'retry-after', dependency: d, waitMs: 100, honoured: true });

    const got = await sdk.collect();
    const at = (key: keyof typeof M, extra: Record<string, string> = {}) =>
      pointValue(got.get(M[key].name), { ...dep(), ...extra });
    expect(at('attempts', { [ATTR.attemptKind]: 'original' })).toBe(5);
    expect(at('attempts', { [ATTR.attemptKind]: 'retry' })).toBe(1);
    expect(at('attempts', { [ATTR.attemptKind]: 'hedge' })).toBe(1);
    expect(at('budgetRefusals', { [ATTR.attemptKind]: 'retry' })).toBe(2);
    expect(at('budgetRefusals', { [ATTR.attemptKind]: 'hedge' })).toBe(1);
    for (const phase of ['connect', 'response', 'deadline']) {
      expect(at('timeouts', { [ATTR.timeoutPhase]: phase })).toBe(1);
    }
    expect(at('timeouts', { [ATTR.timeoutPhase]: 'body' })).toBeUndefined();
    expect(at('deadlineInsufficient')).toBe(1);
    expect(at('hedgesWon')).toBe(1);
    otel.dispose();
  });

  it('records attempt durations in seconds, by outcome, on the semantic-convention buckets', async () => {
    const source = new EventSource('db');
    instrumentPrazo({ meterProvider: sdk.provider, dependencies: [source] });
    const end = { type: 'attempt-end', dependency: 'db', kind: 'original', attempt: 1 } as const;
    source.emit({ ...end, latencyMs: 20, outcome: 'success' });
    source.emit({ ...end, latencyMs: 80, outcome: 'success' });
    source.emit({ ...end, latencyMs: 3, outcome: 'error' });
    source.emit({ ...end, latencyMs: Number.NaN, outcome: 'error' });
    source.emit({ ...end, latencyMs: -5, outcome: 'error' });
    const got = (await sdk.collect()).get(M.attemptDuration.name);
    expect(got?.descriptor.unit).toBe('s');
    const ok = histogramPoint(got, { ...dep('db'), [ATTR.outcome]: 'success' });
    expect(ok?.count).toBe(2);
    expect(ok?.sum).toBeCloseTo(0.1, 10);
    expect(ok?.buckets.boundaries).toEqual([...DURATION_BUCKETS_S]);
    // NaN and negative latencies (a broken clock) are dropped, not recorded as garbage.
    expect(histogramPoint(got, { ...dep('db'), [ATTR.outcome]: 'error' })?.count).toBe(1);
  });

  it('labels a timeout reported without a phase as `unknown`, never drops it', async () => {
    const source = new EventSource('x');
    instrumentPrazo({ meterProvider: sdk.provider, dependencies: [source] });
    source.emit({
      type: 'attempt-end',
      dependency: 'x',
      kind: 'retry',
      attempt: 2,
      latencyMs: 5,
      outcome: 'timeout',
    });
    const got = await sdk.collect();
    expect(pointValue(got.get(M.timeouts.name), { ...dep('x'), [ATTR.timeoutPhase]: 'unknown' })).toBe(1);
  });
});

describe('instrumentPrazo: gauges read at collection (SPEC R7, C5, V1)', () => {
  it('exports the budget ratio, the configured timeouts and the live p99, side by side', async () => {
    const sdk = createSdk();
    const clock = new FakeClock();
    const budget = createRetryBudget({ clock, maxRatio: 0.1, minPerSecond: 0 });
    const recorder = createLatencyRecorder({ clock, windowMs: 1_000, minSamples: 100 });
    const timeouts = { connectMs: 400, responseMs: 252 };
    const source = Object.assign(new EventSource('orders'), { budget, recorder, timeouts });
    instrumentPrazo({ meterProvider: sdk.provider, dependencies: [source] });

    let got = await sdk.collect();
    expect(pointValue(got.get(M.retryRatio.name), dep('orders'))).toBe(0);
    // No full window yet: no p99 point at all, rather than a made-up one.
    expect(got.get(M.latencyP99.name)?.dataPoints ?? []).toHaveLength(0);

    for (let i = 0; i < 50; i += 1) budget.recordOriginal();
    expect(budget.tryConsume()).toBe(true);
    for (let i = 1; i <= 200; i += 1) recorder.record(i, 'success');
    clock.advance(1_000);
    timeouts.responseMs = 300;

    got = await sdk.collect();
    expect(pointValue(got.get(M.retryRatio.name), dep('orders'))).toBeCloseTo(1 / 50, 12);
    const phase = (p: string) => ({ ...dep('orders'), [ATTR.timeoutPhase]: p });
    expect(pointValue(got.get(M.timeoutConfigured.name), phase('connect'))).toBeCloseTo(0.4, 12);
    expect(pointValue(got.get(M.timeoutConfigured.name), phase('response'))).toBeCloseTo(0.3, 12);
    const p99 = pointValue(got.get(M.latencyP99.name), dep('orders'));
    expect(p99).toBeGreaterThan(0.198 * 0.99);
    expect(p99).toBeLessThan(0.198 * 1.01);
    await sdk.shutdown();
  });

  it('counts instances by state now: ejected and in rotation, 0 included; nothing for one origin (SPEC X5)', async () => {
    const sdk = createSdk();
    let states: { instance: string; state: string }[] = [
      { instance: 'http://a', state: 'active' },
      { instance: 'http://b', state: 'active' },
      { instance: 'http://c', state: 'active' },
    ];
    // The executor the client runs through has no instances: they are read from the client itself.
    const client = Object.assign(new EventSource('stock'), {
      dependency: { budget: { state: () => ({ ratio: 0 }) } },
      instances: () => states,
    });
    const single = Object.assign(new EventSource('single'), { instances: () => [] });
    instrumentPrazo({ meterProvider: sdk.provider, dependencies: [client, single] });
    const by = (state: string, name = 'stock') => ({ ...dep(name), [ATTR.instanceState]: state });
    const read = async () => {
      const gauge = (await sdk.collect()).get(M.instances.name);
      const points = (gauge?.dataPoints ?? []) as { attributes: Record<string, unknown> }[];
      expect(points.every((p) => p.attributes[ATTR.dependency] === 'stock')).toBe(true);
      return ['active', 'probation', 'ejected'].map((s) => pointValue(gauge, by(s)));
    };
    expect(await read()).toEqual([3, 0, 0]);
    states = [
      { instance: 'http://a', state: 'active' },
      { instance: 'http://b', state: 'ejected' },
      { instance: 'http://c', state: 'probation' },
    ];
    expect(await read()).toEqual([1, 1, 1]);
    states = [...states, { instance: 'http://d', state: 'ejected' }];
    expect(await read()).toEqual([1, 1, 2]);
    await sdk.shutdown();
  });

  it('keeps the other dependencies’ gauges when one throws or reports NaN', async () => {
    const sdk = createSdk();
    const broken = Object.assign(new EventSource('broken'), {
      budget: {
        state(): { ratio: number } {
          throw new Error('boom');
        },
      },
    });
    const nan = Object.assign(new EventSource('nan'), { budget: { state: () => ({ ratio: Number.NaN }) } });
    const fine = Object.assign(new EventSource('fine'), { budget: { state: () => ({ ratio: 0.05 }) } });
    instrumentPrazo({ meterProvider: sdk.provider, dependencies: [broken, nan, fine] });
    const ratio = (await sdk.collect()).get(M.retryRatio.name);
    expect(ratio?.dataPoints).toHaveLength(1);
    expect(pointValue(ratio, dep('fine'))).toBe(0.05);
    await sdk.shutdown();
  });
});

describe('instrumentPrazo: the adaptive throttle (docs/throttling.md, #23)', () => {
  it('counts refusals and exports the refusal probability of a real executor, read at collection', async () => {
    const sdk = createSdk();
    const clock = new FakeClock();
    // A dependency whose every attempt fails: the throttle's window fills with requests and no accepts.
    const dependency = createDependency({
      name: 'supplier',
      clock,
      p99Ms: 20,
      attempts: 1,
      defaultDeadlineMs: 1_000,
      random: () => 0.5,
    });
    const off = createDependency({ name: 'off', clock, p99Ms: 20, attempts: 1, throttle: false });
    instrumentPrazo({ meterProvider: sdk.provider, dependencies: [dependency, off] });
    let got = await sdk.collect();
    // Switched on and quiet: a 0, not "no data"; switched off: no point at all.
    expect(pointValue(got.get(M.throttleProbability.name), dep('supplier'))).toBe(0);
    expect(pointValue(got.get(M.throttleProbability.name), dep('off'))).toBeUndefined();

    const fail = () => Promise.reject(Object.assign(new Error('503'), { status: 503 }));
    let refused = 0;
    for (let i = 0; i < 40; i += 1) {
      await dependency.execute(fail).catch((e: unknown) => {
        if ((e as { code?: string }).code === 'THROTTLED') refused += 1;
      });
      clock.advance(5);
    }
    const state = dependency.throttling()!;
    expect(refused).toBeGreaterThan(0);
    got = await sdk.collect();
    expect(pointValue(got.get(M.throttled.name), dep('supplier'))).toBe(refused);
    expect(got.get(M.throttled.name)?.descriptor.unit).toBe('{request}');
    expect(pointValue(got.get(M.throttleProbability.name), dep('supplier'))).toBeCloseTo(
      state.probability,
      12,
    );
    expect(state.probability).toBeGreaterThan(0.5);
    expect(got.get(M.throttleProbability.name)?.descriptor.unit).toBe('1');
    // The window forgets: a second later the probability reads 0 again, the refusals stay counted.
    clock.advance(1_000);
    got = await sdk.collect();
    expect(pointValue(got.get(M.throttleProbability.name), dep('supplier'))).toBe(0);
    expect(pointValue(got.get(M.throttled.name), dep('supplier'))).toBe(refused);
    await sdk.shutdown();
  });

  it('a hand-driven source: each `throttled` event is one refusal; a broken or NaN probability is no point', async () => {
    const sdk = createSdk();
    const source = Object.assign(new EventSource('db'), { throttling: () => ({ probability: 0.25 }) });
    const nan = Object.assign(new EventSource('nan'), { throttling: () => ({ probability: Number.NaN }) });
    const broken = Object.assign(new EventSource('broken'), {
      throttling(): { probability: number } {
        throw new Error('boom');
      },
    });
    instrumentPrazo({ meterProvider: sdk.provider, dependencies: [source, nan, broken] });
    const event = {
      type: 'throttled',
      dependency: 'db',
      requests: 30,
      accepts: 2,
      probability: 0.8,
    } as const;
    source.emit(event);
    source.emit(event);
    const got = await sdk.collect();
    expect(pointValue(got.get(M.throttled.name), dep('db'))).toBe(2);
    expect(got.get(M.throttleProbability.name)?.dataPoints).toHaveLength(1);
    expect(pointValue(got.get(M.throttleProbability.name), dep('db'))).toBe(0.25);
    await sdk.shutdown();
  });
});

describe('instrumentPrazo: the global meter', () => {
  afterEach(() => metrics.disable());

  it('with no SDK installed, subscribes to nothing (zero cost) and still accepts every call', () => {
    metrics.disable();
    const source = new EventSource('a');
    const otel = instrumentPrazo({ dependencies: [source] });
    expect(otel.active).toBe(false);
    expect(source.listeners).toBe(0);
    source.emit({ type: 'hedge-won', dependency: 'a', attempt: 2 });
    const tracker = { observe: () => true };
    expect(otel.trackSlices(tracker, 'e')).toBe(tracker);
    expect(() => otel.addDependency(new EventSource('a'))).toThrow(InvalidOptionsError);
    otel.dispose();
  });

  it('with an SDK registered globally, records through metrics.getMeter("prazo")', async () => {
    const sdk = createSdk();
    metrics.setGlobalMeterProvider(sdk.provider);
    const source = new EventSource('a');
    const otel = instrumentPrazo({ dependencies: [source] });
    expect(otel.active).toBe(true);
    source.emit({ type: 'hedge-won', dependency: 'a', attempt: 2 });
    const got = await sdk.collect();
    expect(pointValue(got.get(M.hedgesWon.name), dep('a'))).toBe(1);
    otel.dispose();
    await sdk.shutdown();
  });
});

describe('instrumentPrazo: lifecycle and options', () => {
  it('dispose() unsubscribes every source and stops the gauges', async () => {
    const sdk = createSdk();
    const source = Object.assign(new EventSource('a'), { budget: { state: () => ({ ratio: 0.5 }) } });
    const otel = instrumentPrazo({ meterProvider: sdk.provider, dependencies: [source] });
    expect(source.listeners).toBe(1);
    source.emit({ type: 'hedge-won', dependency: 'a', attempt: 2 });
    otel.dispose();
    otel.dispose();
    expect(source.listeners).toBe(0);
    source.emit({ type: 'hedge-won', dependency: 'a', attempt: 2 });
    const got = await sdk.collect();
    expect(pointValue(got.get(M.hedgesWon.name), dep('a'))).toBe(1);
    expect(got.get(M.retryRatio.name)?.dataPoints ?? []).toHaveLength(0);
    // Adding after dispose subscribes nothing.
    otel.addDependency(new EventSource('late')).dispose();
    await sdk.shutdown();
  });

  it('a dependency added later can be removed alone, and its name reused', () => {
    const sdk = createSdk();
    const otel = instrumentPrazo({ meterProvider: sdk.provider });
    const first = new EventSource('x');
    const handle = otel.addDependency(first);
    expect(() => otel.addDependency(new EventSource('x'))).toThrow(InvalidOptionsError);
    handle.dispose();
    expect(first.listeners).toBe(0);
    const second = new EventSource('x');
    otel.addDependency(second);
    expect(second.listeners).toBe(1);
    otel.dispose();
  });

  it('reports every bad option together', () => {
    const error = (() => {
      try {
        instrumentPrazo({
          meter: {} as never,
          meterProvider: {} as never,
          dependencies: [{ name: '', on: 3 } as never, new EventSource('d'), new EventSource('d')],
          servers: [{ name: 'api' } as never],
        });
      } catch (e) {
        return e;
      }
    })();
    expect(error).toBeInstanceOf(InvalidOptionsError);
    const problems = (error as InvalidOptionsError).problems.join('\n');
    for (const fragment of [
      'not both',
      'Meter',
      'MeterProvider',
      'dependencies[0].name',
      'on(listener)',
      '"d"',
      'servers[0]',
    ]) {
      expect(problems).toContain(fragment);
    }
  });
});
