import fc from 'fast-check';
import { describe, expect, it, vi } from 'vitest';
import { FakeClock } from '../clock/fake.js';
import { InvalidOptionsError } from '../errors/index.js';
import { exactQuantile, logNormal, mulberry32, pareto } from './prng.test-helpers.js';
import { createLatencyRecorder } from './recorder.js';

const ALPHA = 0.01;

const fill = (recorder: { record(ms: number, o: 'success'): void }, samples: ArrayLike<number>): void => {
  for (let i = 0; i < samples.length; i += 1) recorder.record(samples[i]!, 'success');
};

describe('createLatencyRecorder: rotating windows, tower-style', () => {
  it('reads see only the last full window, never the one being filled', () => {
    const clock = new FakeClock();
    const rec = createLatencyRecorder({ clock, windowMs: 1000, minSamples: 10 });
    fill(
      rec,
      Array.from({ length: 100 }, (_, i) => i + 1),
    );
    expect(rec.quantile(0.99)).toBeUndefined();
    expect(rec.lastWindow()).toBeUndefined();
    expect(rec.currentWindow().count).toBe(100);

    clock.advance(1000);
    const p99 = rec.quantile(0.99)!;
    expect(Math.abs(p99 - 99) / 99).toBeLessThanOrEqual(ALPHA);
    // New samples, far slower, do not move the read until the window closes.
    fill(
      rec,
      Array.from({ length: 100 }, () => 5000),
    );
    expect(rec.quantile(0.99)).toBe(p99);
    clock.advance(999);
    expect(rec.quantile(0.99)).toBe(p99);
    clock.advance(1);
    expect(rec.quantile(0.99)).toBeCloseTo(5000, -2);
    expect(rec.lastWindow()).toMatchObject({ count: 100, startedAt: 1000, endedAt: 2000 });
  });

  it('keeps windows aligned and drops to an empty window after a whole idle window', () => {
    const clock = new FakeClock();
    const rec = createLatencyRecorder({ clock, windowMs: 1000, minSamples: 1 });
    clock.advance(500);
    fill(rec, [10, 20, 30]);
    clock.advance(700); // t = 1200: window [0, 1000) closed
    expect(rec.lastWindow()).toMatchObject({ count: 3, startedAt: 0, endedAt: 1000 });
    expect(rec.currentWindow().startedAt).toBe(1000);
    clock.advance(2000); // t = 3200: [1000, 2000) and [2000, 3000) passed empty
    expect(rec.quantile(0.5)).toBeUndefined();
    expect(rec.lastWindow()).toMatchObject({ count: 0, startedAt: 2000, endedAt: 3000, p99: undefined });
    expect(rec.currentWindow().startedAt).toBe(3000);
  });

  it('answers only when the last full window holds minSamples successes', () => {
    const clock = new FakeClock();
    const rec = createLatencyRecorder({ clock, windowMs: 100, minSamples: 50 });
    fill(
      rec,
      Array.from({ length: 49 }, () => 10),
    );
    for (let i = 0; i < 100; i += 1) rec.record(10, 'error');
    clock.advance(100);
    expect(rec.quantile(0.5)).toBeUndefined();
    expect(rec.lastWindow()?.p50).toBeCloseTo(10, 0); // the snapshot still shows what it saw
    fill(
      rec,
      Array.from({ length: 50 }, () => 10),
    );
    clock.advance(100);
    expect(rec.quantile(0.5)).toBeCloseTo(10, 0);
  });

  it('records the outcome with each sample; quantiles come from successes only', () => {
    const clock = new FakeClock();
    const rec = createLatencyRecorder({ clock, windowMs: 100, minSamples: 1 });
    fill(rec, [10, 10, 10]);
    rec.record(3, 'error');
    rec.record(250, 'timeout');
    rec.record(250, 'timeout');
    rec.record(1, 'weird' as never); // an unknown outcome counts as an error, never crashes
    clock.advance(100);
    expect(rec.lastWindow()).toMatchObject({ count: 7, successes: 3, errors: 2, timeouts: 2 });
    expect(rec.quantile(0.999)).toBeCloseTo(10, 0);
    expect(rec.lastWindow()?.max).toBe(10);
  });

  it('never yields NaN from hostile input', () => {
    const clock = new FakeClock();
    const rec = createLatencyRecorder({ clock, windowMs: 100, minSamples: 1 });
    for (const v of [Number.NaN, -5, 0, Number.POSITIVE_INFINITY, 1e-300, Number.MAX_VALUE, 12]) {
      rec.record(v, 'success');
    }
    clock.advance(100);
    const last = rec.lastWindow()!;
    expect(last.successes).toBe(6); // NaN skipped
    for (const q of [0.01, 0.5, 0.99, 0.999]) {
      const v = rec.quantile(q)!;
      expect(Number.isFinite(v)).toBe(true);
      expect(v).toBeGreaterThanOrEqual(0);
      expect(v).toBeLessThanOrEqual(86_400_000);
    }
    for (const q of [0, 1, -1, Number.NaN, 2]) expect(rec.quantile(q)).toBeUndefined();
  });

  it('caches quantiles per rotation, including arbitrary q, and stays correct beyond the cache', () => {
    const clock = new FakeClock();
    const rec = createLatencyRecorder({ clock, windowMs: 100, minSamples: 1 });
    fill(
      rec,
      Array.from({ length: 1000 }, (_, i) => i + 1),
    );
    clock.advance(100);
    const qs = Array.from({ length: 30 }, (_, i) => (i + 1) / 31);
    const first = qs.map((q) => rec.quantile(q));
    expect(qs.map((q) => rec.quantile(q))).toEqual(first);
    qs.forEach((q, i) => {
      const exact = Math.floor(q * 999) + 1;
      expect(Math.abs(first[i]! - exact) / exact).toBeLessThanOrEqual(ALPHA + 1e-12);
    });
  });

  it('calls onWindow once per closed window with samples; a throwing listener never breaks record', () => {
    const clock = new FakeClock();
    const seen: number[] = [];
    const rec = createLatencyRecorder({ clock, windowMs: 100, onWindow: (w) => seen.push(w.count) });
    fill(rec, [1, 2]);
    clock.advance(100);
    rec.record(5, 'success');
    clock.advance(300);
    rec.record(5, 'success');
    expect(seen).toEqual([2, 1]);

    const warn = vi.spyOn(process, 'emitWarning').mockImplementation(() => undefined);
    const bad = createLatencyRecorder({
      clock,
      windowMs: 100,
      onWindow: () => {
        throw new Error('boom');
      },
    });
    bad.record(1, 'success');
    clock.advance(100);
    expect(() => bad.record(1, 'success')).not.toThrow();
    expect(warn).toHaveBeenCalledOnce();
    warn.mockRestore();
  });

  it('validates options once, listing every problem', () => {
    try {
      createLatencyRecorder({ windowMs: 0, minSamples: 0.5, relativeAccuracy: 2, clock: {} as never });
      expect.unreachable();
    } catch (error) {
      expect(error).toBeInstanceOf(InvalidOptionsError);
      expect((error as InvalidOptionsError).problems).toHaveLength(4);
    }
    expect(createLatencyRecorder()).toMatchObject({
      windowMs: 10_000,
      minSamples: 100,
      relativeAccuracy: 0.01,
    });
  });
});

describe('createLatencyRecorder: quantiles vs exact quantiles (DDSketch α = 1%)', () => {
  const check = (samples: Float64Array): void => {
    const clock = new FakeClock();
    const rec = createLatencyRecorder({ clock, windowMs: 1000, minSamples: 1 });
    fill(rec, samples);
    clock.advance(1000);
    const sorted = Float64Array.from(samples).sort();
    for (const q of [0.5, 0.9, 0.95, 0.99, 0.999]) {
      const exact = exactQuantile(sorted, q);
      const got = rec.quantile(q)!;
      expect(Math.abs(got - exact)).toBeLessThanOrEqual(ALPHA * exact * (1 + 1e-9));
    }
  };

  it('on a log-normal set (200k samples, median 40 ms, σ = 0.8, seeded)', () => {
    check(logNormal(mulberry32(7), 200_000, 40, 0.8));
  });

  it('on a Pareto set (200k samples, scale 5 ms, α = 1.2: a very heavy tail, seeded)', () => {
    check(pareto(mulberry32(11), 200_000, 5, 1.2));
  });

  it('property: any positive samples, every quantile within α of the exact one and within [min, max]', () => {
    fc.assert(
      fc.property(
        fc.array(fc.double({ min: 0.001, max: 1e6, noNaN: true }), { minLength: 1, maxLength: 400 }),
        fc.constantFrom(0.5, 0.9, 0.95, 0.99, 0.999, 0.3),
        (values, q) => {
          const clock = new FakeClock();
          const rec = createLatencyRecorder({ clock, windowMs: 10, minSamples: 1 });
          fill(rec, values);
          clock.advance(10);
          const sorted = Float64Array.from(values).sort();
          const exact = exactQuantile(sorted, q);
          const got = rec.quantile(q)!;
          expect(Math.abs(got - exact)).toBeLessThanOrEqual(ALPHA * exact * (1 + 1e-9));
          expect(got).toBeGreaterThanOrEqual(sorted[0]!);
          expect(got).toBeLessThanOrEqual(sorted[sorted.length - 1]!);
        },
      ),
      { numRuns: 300 },
    );
  });
});
