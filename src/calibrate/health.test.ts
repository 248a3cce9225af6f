import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { FakeClock } from '../clock/fake.js';
import { InvalidOptionsError } from '../errors/index.js';
import { createLatencyRecorder } from '../latency/recorder.js';
import type { LatencySnapshot } from '../latency/types.js';
import { assessWindow, resolveHealthThresholds } from './health.js';
import { createHealthyWindowTracker } from './health-tracker.js';

const T = resolveHealthThresholds();
const win = (count: number, errors: number, timeouts: number, p99: number | undefined) => ({
  count,
  errors,
  timeouts,
  p99,
});

describe('assessWindow (SPEC C4)', () => {
  it('accepts a clean window, with or without a baseline', () => {
    expect(assessWindow(win(1000, 5, 2, 180), undefined, T)).toMatchObject({
      health: 'healthy',
      reasons: [],
    });
    expect(assessWindow(win(1000, 5, 2, 200), 180, T).health).toBe('healthy');
  });

  it('flags an error-rate, timeout-rate or p99 jump, naming the value and the threshold', () => {
    const errors = assessWindow(win(1000, 80, 0, 180), undefined, T);
    expect(errors.health).toBe('degraded');
    expect(errors.reasons[0]).toBe('error rate 8.0% above 2.0%');
    const timeouts = assessWindow(win(1000, 0, 30, 180), undefined, T);
    expect(timeouts.reasons[0]).toBe('timeout rate 3.0% above 1.0%');
    const jump = assessWindow(win(1000, 0, 0, 900), 180, T);
    expect(jump.reasons[0]).toContain('5.00x the healthy baseline 180 ms');
    expect(jump.p99Jump).toBe(5);
    expect(assessWindow(win(1000, 80, 30, 900), 180, T).reasons).toHaveLength(3);
  });

  it('uses the thresholds it is given', () => {
    const lax = resolveHealthThresholds({ maxErrorRate: 0.1, maxP99Jump: 10 });
    expect(assessWindow(win(1000, 80, 0, 900), 180, lax).health).toBe('healthy');
    expect(() => resolveHealthThresholds({ maxErrorRate: 2, maxP99Jump: 0.5, minSamples: 0 })).toThrow(
      InvalidOptionsError,
    );
  });

  it('does not judge a window with too few samples, nor one without successes', () => {
    expect(assessWindow(win(10, 0, 0, 180), undefined, T).health).toBe('insufficient');
    expect(assessWindow(win(500, 0, 0, undefined), undefined, T).reasons).toContain(
      'no successful call: no p99 to calibrate on',
    );
  });

  it('property: never throws nor yields NaN rates, whatever the numbers', () => {
    const n = fc.oneof(fc.double(), fc.integer(), fc.constant(Number.NaN));
    fc.assert(
      fc.property(
        n,
        n,
        n,
        fc.option(n, { nil: undefined }),
        fc.option(n, { nil: undefined }),
        (c, e, t, p, b) => {
          const v = assessWindow({ count: c, errors: e, timeouts: t, p99: p }, b, T);
          expect(Number.isNaN(v.errorRate) || Number.isNaN(v.timeoutRate)).toBe(false);
          expect(v.errorRate).toBeGreaterThanOrEqual(0);
          expect(v.errorRate).toBeLessThanOrEqual(1);
          if (v.p99Jump !== undefined) expect(Number.isNaN(v.p99Jump)).toBe(false);
        },
      ),
    );
  });
});

describe('createHealthyWindowTracker', () => {
  it('learns a baseline from healthy windows only, and keeps the last healthy one for calibration', () => {
    const tracker = createHealthyWindowTracker({ baselineWindows: 3 });
    for (const p99 of [170, 180, 190]) expect(tracker.observe(win(1000, 0, 0, p99)).health).toBe('healthy');
    expect(tracker.baselineP99()).toBe(180);
    const incident = win(1000, 0, 0, 600);
    expect(tracker.observe(incident).health).toBe('degraded');
    expect(tracker.baselineP99()).toBe(180); // the incident did not teach it that 600 is normal
    expect(tracker.lastHealthy()?.p99).toBe(190);
    tracker.observe(win(1000, 0, 0, 200));
    tracker.observe(win(1000, 0, 0, 210));
    expect(tracker.baselineP99()).toBe(200); // median of the last 3: 190, 200, 210
  });

  it('plugs into a recorder: a degraded window of real samples is flagged', () => {
    const clock = new FakeClock();
    const tracker = createHealthyWindowTracker<LatencySnapshot>();
    const verdicts: string[] = [];
    const rec = createLatencyRecorder({
      clock,
      windowMs: 1000,
      onWindow: (w) => verdicts.push(tracker.observe(w).health),
    });
    for (let w = 0; w < 3; w += 1) {
      for (let i = 0; i < 500; i += 1) rec.record(20 + (i % 100), 'success');
      clock.advance(1000);
    }
    for (let i = 0; i < 500; i += 1)
      rec.record(i % 10 === 0 ? 250 : 20 + (i % 100), i % 20 === 0 ? 'timeout' : 'success');
    clock.advance(1000);
    rec.record(1, 'success'); // lazy rotation
    expect(verdicts).toEqual(['healthy', 'healthy', 'healthy', 'degraded']);
    expect(tracker.lastHealthy()?.startedAt).toBe(2000);
    expect(() => createHealthyWindowTracker({ baselineWindows: 0 })).toThrow(InvalidOptionsError);
  });
});
