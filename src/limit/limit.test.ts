import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { FakeClock } from '../clock/fake.js';
import { readOptions } from '../options/validator.js';
import { GradientLimit, gradientSettings } from './gradient.js';
import { ConcurrencyLimiter, isConcurrencyLimiter, type LimitWaiter } from './limiter.js';
import { CONCURRENCY_LIMIT_OPTIONS } from './options.js';

/** SPEC X7's pure parts on a fake clock: the bounded in-flight count and queue, the gradient limit. */

const waiter = (log: string[], name: string): LimitWaiter => ({ granted: () => log.push(name) });

describe('ConcurrencyLimiter: at most N in flight, a bounded FIFO queue (SPEC X7)', () => {
  it('grants up to the limit, queues up to maxQueue, then refuses; releases serve the queue in order', () => {
    const limiter = new ConcurrencyLimiter({ maxInFlight: 2, maxQueue: 2 }, new FakeClock());
    const log: string[] = [];
    expect(limiter.tryAcquire()).toBe(true);
    expect(limiter.tryAcquire()).toBe(true);
    expect(limiter.tryAcquire()).toBe(false);
    expect(limiter.enqueue(waiter(log, 'a'))).toBe(true);
    const b = waiter(log, 'b');
    expect(limiter.enqueue(b)).toBe(true);
    expect(limiter.enqueue(waiter(log, 'c'))).toBe(false);
    expect(limiter.state()).toMatchObject({ limit: 2, inFlight: 2, queued: 2, maxQueue: 2, adaptive: false });
    limiter.release();
    expect(log).toEqual(['a']);
    limiter.cancel(b);
    limiter.release();
    expect(log).toEqual(['a']);
    expect(limiter.state()).toMatchObject({ inFlight: 1, queued: 0 });
    // A waiter jumps no one: with someone queued, tryAcquire says no even under the limit.
    limiter.tryAcquire();
    limiter.enqueue(waiter(log, 'd'));
    expect(limiter.tryAcquire()).toBe(false);
  });

  it('defaults the queue to the limit, and is recognised by its brand', () => {
    const limiter = new ConcurrencyLimiter({ maxInFlight: 7 }, new FakeClock());
    expect(limiter.maxQueue).toBe(7);
    expect(isConcurrencyLimiter(limiter)).toBe(true);
    expect(isConcurrencyLimiter({ limit: 7 })).toBe(false);
  });

  it('never has more than the limit in flight nor more than maxQueue queued; every waiter ends granted or cancelled (property)', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 8 }),
        fc.integer({ min: 0, max: 8 }),
        fc.array(fc.constantFrom('acquire', 'acquire', 'release', 'cancel'), { maxLength: 300 }),
        (limit, maxQueue, ops) => {
          const limiter = new ConcurrencyLimiter({ maxInFlight: limit, maxQueue }, new FakeClock());
          let held = 0;
          const waiting: LimitWaiter[] = [];
          const granted = new Set<LimitWaiter>();
          for (const op of ops) {
            if (op === 'acquire') {
              if (limiter.tryAcquire()) held += 1;
              else {
                const w: LimitWaiter = {
                  granted: () => {
                    granted.add(w);
                    held += 1;
                  },
                };
                if (limiter.enqueue(w)) waiting.push(w);
              }
            } else if (op === 'release' && held > 0) {
              held -= 1;
              limiter.release();
            } else if (op === 'cancel' && waiting.length > 0) {
              const w = waiting.shift()!;
              if (!granted.has(w)) limiter.cancel(w);
            }
            expect(limiter.inFlight).toBe(held);
            expect(limiter.inFlight).toBeLessThanOrEqual(limit);
            expect(limiter.queued).toBeLessThanOrEqual(maxQueue);
            // A free slot and a waiter never coexist.
            expect(limiter.queued > 0 && limiter.inFlight < limit).toBe(false);
          }
        },
      ),
      { numRuns: 400 },
    );
  });
});

describe('GradientLimit: the limit follows min RTT ÷ current RTT (Netflix Gradient2, Envoy adaptive concurrency)', () => {
  const run = (
    limit: GradientLimit,
    from: number,
    seconds: number,
    rtt: (t: number) => number,
    inFlight: number,
  ) => {
    let t = from;
    for (; t < from + seconds * 1_000; t += 10) {
      limit.sample(rtt(t), t, inFlight);
    }
    return t;
  };

  it('grows while latency stays at its minimum and the limit is used, shrinks when latency rises, recovers', () => {
    const limit = new GradientLimit(gradientSettings(true), 0);
    let t = run(limit, 0, 20, () => 10, 1_000);
    const grown = limit.limit;
    expect(grown).toBeGreaterThanOrEqual(35); // about 0.2 × √limit a window: probing, not jumping
    t = run(limit, t, 20, () => 40, 1_000); // 4× the minimum: gradient 1.5 / 4 = 0.375 → floored at 0.5
    const shrunk = limit.limit;
    expect(shrunk).toBeLessThan(grown / 2);
    expect(shrunk).toBeGreaterThanOrEqual(2);
    run(limit, t, 20, () => 10, 1_000);
    expect(limit.limit).toBeGreaterThan(shrunk);
  });

  it('does not grow while less than half of it is in use (app-limited), nor on windows with too few samples', () => {
    const limit = new GradientLimit(gradientSettings(true), 0);
    run(limit, 0, 30, () => 10, 3);
    expect(limit.limit).toBe(20);
    const sparse = new GradientLimit(gradientSettings(true), 0);
    for (let t = 0; t < 60_000; t += 200) sparse.sample(100 + (t % 1_000), t, 1_000); // 5 a window
    expect(sparse.limit).toBe(20);
  });

  it('forgets its minimum RTT over the horizon: a dependency that got slower for good is not throttled forever', () => {
    const limit = new GradientLimit(gradientSettings({ minRttHorizonMs: 10_000 }), 0);
    let t = run(limit, 0, 10, () => 10, 1_000);
    t = run(limit, t, 30, () => 50, 1_000);
    expect(limit.minRttMs).toBe(50);
    const settled = limit.limit;
    run(limit, t, 10, () => 50, 1_000);
    expect(limit.limit).toBeGreaterThanOrEqual(settled);
  });

  it('stays an integer in [min, max] on any RTT sequence (property)', () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.record({
            gap: fc.nat({ max: 400 }),
            rtt: fc.double({ min: -1, max: 1e5 }),
            inFlight: fc.nat({ max: 2_000 }),
          }),
          {
            maxLength: 400,
          },
        ),
        (samples) => {
          const limit = new GradientLimit(
            gradientSettings({ min: 3, max: 50, initial: 10, windowMs: 100, minSamples: 2 }),
            0,
          );
          let t = 0;
          for (const { gap, rtt, inFlight } of samples) {
            t += gap;
            limit.sample(rtt, t, inFlight);
            expect(Number.isInteger(limit.limit)).toBe(true);
            expect(limit.limit).toBeGreaterThanOrEqual(3);
            expect(limit.limit).toBeLessThanOrEqual(50);
          }
        },
      ),
      { numRuns: 300 },
    );
  });

  it('an adaptive limiter grants queued waiters when its limit grows', () => {
    const clock = new FakeClock();
    const limiter = new ConcurrencyLimiter(
      { adaptive: { initial: 2, windowMs: 100, minSamples: 1 }, maxQueue: 5 },
      clock,
    );
    const log: string[] = [];
    limiter.tryAcquire();
    limiter.tryAcquire();
    limiter.enqueue(waiter(log, 'a'));
    for (let t = 0; t <= 2_000 && log.length === 0; t += 10) limiter.sample(5, t);
    expect(log).toEqual(['a']);
    expect(limiter.state().adaptive).toBe(true);
  });
});

describe('CONCURRENCY_LIMIT_OPTIONS', () => {
  const problems = (raw: unknown): string[] => {
    try {
      readOptions('t', CONCURRENCY_LIMIT_OPTIONS, raw);
      return [];
    } catch (error) {
      return [...(error as { problems: string[] }).problems];
    }
  };

  it('needs exactly one of a fixed or an adaptive limit, with bounds', () => {
    expect(problems({ maxInFlight: 20, maxQueue: 0 })).toEqual([]);
    expect(problems({ adaptive: true })).toEqual([]);
    expect(problems({})).toEqual([
      'needs `maxInFlight` (a fixed limit) or `adaptive` (true, or its options)',
    ]);
    expect(problems({ maxInFlight: 3, adaptive: true })).toEqual([
      '`adaptive` and `maxInFlight` exclude each other: a fixed limit, or an adaptive one',
    ]);
    expect(problems({ maxInFlight: 0 })[0]).toMatch(/^`maxInFlight` must be an integer in \[1, 100000\]/);
    expect(problems({ adaptive: { min: 10, max: 5 } })).toEqual([
      '`adaptive.min` (10) must not exceed `max` (5)',
    ]);
    expect(problems({ adaptive: { initial: 1, min: 2 } })).toEqual([
      '`adaptive.initial` (1) must lie in [`min`, `max`] = [2, 1000]',
    ]);
    expect(problems({ maxInFligt: 3 })[0]).toBe('unknown option `maxInFligt`; did you mean `maxInFlight`?');
  });
});
