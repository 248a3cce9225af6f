import { describe, expect, it } from 'vitest';
import { FakeClock } from '../../clock/fake.js';
import { createLatencyRecorder } from '../../latency/recorder.js';
import { withCalibratedFallback } from './fallback-source.js';

describe('live latency with the calibrated quantiles as fallback (SPEC H1)', () => {
  it('answers the calibrated p95/p99 until a live window has enough samples, then the live ones', () => {
    const clock = new FakeClock();
    const live = createLatencyRecorder({ windowMs: 1_000, minSamples: 10, clock });
    const source = withCalibratedFallback(live, { p95Ms: 180, p99Ms: 250 });
    expect(source.quantile(0.95)).toBe(180);
    expect(source.quantile(0.99)).toBe(250);
    expect(source.quantile(0.5)).toBe(180); // no calibrated median (a drill): the p95
    expect(withCalibratedFallback(live, { p50Ms: 80, p95Ms: 180, p99Ms: 250 }).quantile(0.5)).toBe(80);
    for (let i = 0; i < 20; i += 1) source.record(40, 'success');
    clock.advance(1_000);
    source.record(40, 'success'); // rotates: the full window now answers
    expect(source.quantile(0.95)).toBeCloseTo(40, 0);
    expect(source.lastWindow()?.successes).toBe(20);
    expect(source.currentWindow().successes).toBe(1);
  });

  it('has no quantile once most of the window failed: nothing is hedged into a dependency failing as a whole', () => {
    const clock = new FakeClock();
    const live = createLatencyRecorder({ windowMs: 10_000, minSamples: 100, clock });
    const source = withCalibratedFallback(live, { p50Ms: 80, p95Ms: 180, p99Ms: 250 });
    for (let i = 0; i < 4; i += 1) source.record(300, 'timeout');
    expect(source.quantile(0.95)).toBe(180); // four attempts say little yet
    source.record(300, 'timeout');
    expect(source.quantile(0.95)).toBeUndefined();
    expect(source.quantile(0.5)).toBeUndefined();
    for (let i = 0; i < 6; i += 1) source.record(80, 'success'); // answering again
    expect(source.quantile(0.95)).toBe(180);
  });
});
