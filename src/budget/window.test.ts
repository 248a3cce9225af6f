import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Clock } from '../clock/clock.js';
import { FakeClock } from '../clock/fake.js';
import { AdaptiveThrottle } from '../throttle/throttle.js';
import { BucketWindow } from './window.js';

/**
 * The bucket rings of the retry budget (SPEC R1) and of the adaptive throttle move their head by a
 * comparison with where the head bucket ends, and take the full path (a division) only past it. These
 * pin what that must not change: the counts leave the window exactly when the full path says, and a
 * first reading that is no time (NaN, ±Infinity) freezes nothing.
 */

/** The full path, written out: the counts of the last `buckets` buckets (and one more, for extras). */
function model(windowMs: number, buckets: number) {
  const bucketMs = windowMs / buckets;
  const events: { index: number; extra: boolean }[] = [];
  let head = Number.NaN;
  return {
    at(now: number) {
      const index = Math.floor(now / bucketMs);
      if (!Number.isFinite(index)) return;
      if (!Number.isFinite(head) || index > head) head = index;
    },
    add(extra: boolean) {
      events.push({ index: head, extra });
    },
    originals: () => events.filter((e) => !e.extra && e.index > head - buckets).length,
    extras: () => events.filter((e) => e.extra && e.index > head - buckets - 1).length,
  };
}

const readings = fc.array(
  fc.record({
    // Mostly forward, in steps smaller and larger than a bucket; now and then back, or no time at all.
    step: fc.oneof(
      { weight: 8, arbitrary: fc.double({ min: 0, max: 400, noNaN: true }) },
      { weight: 1, arbitrary: fc.double({ min: -300, max: 0, noNaN: true }) },
      { weight: 1, arbitrary: fc.constantFrom(Number.NaN, Number.POSITIVE_INFINITY) },
    ),
    extra: fc.boolean(),
  }),
  { maxLength: 200 },
);

describe('BucketWindow', () => {
  it('counts what the full path counts, whatever the readings (property)', () => {
    fc.assert(
      fc.property(readings, fc.integer({ min: 1, max: 12 }), (steps, buckets) => {
        const windowMs = 1_000;
        const w = new BucketWindow(windowMs, buckets, 0);
        const m = model(windowMs, buckets);
        m.at(0);
        let t = 0;
        for (const { step, extra } of steps) {
          const now = Number.isFinite(step) ? t + step : step;
          if (Number.isFinite(step)) t = Math.max(t, now);
          w.advance(now);
          m.at(now);
          if (extra) w.addExtra();
          else w.addOriginal();
          m.add(extra);
          expect(w.originals()).toBe(m.originals());
          expect(w.extras()).toBe(m.extras());
        }
      }),
    );
  });

  it.each([Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY])(
    'made at a reading of %s, it is placed on the first finite one and then moves',
    (first) => {
      const w = new BucketWindow(1_000, 10, first);
      w.advance(5_000);
      w.addOriginal();
      w.addExtra();
      expect([w.originals(), w.extras()]).toEqual([1, 1]);
      w.advance(5_500);
      expect(w.originals()).toBe(1);
      w.advance(7_000); // a whole window later: both counts gone
      expect([w.originals(), w.extras()]).toEqual([0, 0]);
    },
  );
});

describe('AdaptiveThrottle window', () => {
  it.each([Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY])(
    'made on a clock that first read %s, it still forgets a failure after its window',
    (first) => {
      const clock = new FakeClock();
      const odd: Clock = Object.create(clock, { now: { value: () => first } });
      const t = new AdaptiveThrottle({ windowMs: 1_000, minRequests: 0 }, odd, () => 0.5);
      for (let i = 0; i < 20; i += 1) t.count(5_000, false);
      expect(t.state(5_000).probability).toBeGreaterThan(0);
      expect(t.state(5_900).requests).toBe(20);
      expect(t.state(6_100)).toEqual({ requests: 0, accepts: 0, probability: 0 });
    },
  );

  it('forgets each bucket as it leaves the window, not before (the head moved by comparison)', () => {
    const clock = new FakeClock();
    const t = new AdaptiveThrottle({ windowMs: 1_000, buckets: 10, minRequests: 0 }, clock, () => 0.5);
    t.count(0, false); // bucket [0, 100)
    t.count(99.9, true); // the same bucket
    t.count(100, false); // the next one
    expect(t.state(999.9).requests).toBe(3);
    expect(t.state(1_000).requests).toBe(1); // [0, 100) left at 1 000
    expect(t.state(1_099.9).requests).toBe(1);
    expect(t.state(1_100).requests).toBe(0);
    expect(t.state(500).requests).toBe(0); // back in time: nothing comes back, nothing moves
  });
});
