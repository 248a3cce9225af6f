import v8 from 'node:v8';
import vm from 'node:vm';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { FakeClock } from '../clock/fake.js';
import { createRetryBudget } from './budget.js';

/** Reference model: every event's exact time, counted over exact intervals. */
const countIn = (times: readonly number[], from: number, to: number, openStart: boolean): number =>
  times.filter((t) => (openStart ? t > from : t >= from) && t <= to).length;

const configArb = fc.record({
  windowMs: fc.integer({ min: 100, max: 20_000 }),
  buckets: fc.integer({ min: 2, max: 40 }),
  ratioPct: fc.integer({ min: 0, max: 100 }),
  minPerSecond: fc.integer({ min: 0, max: 5 }),
});

const eventsArb = fc.array(
  fc.record({ gap: fc.nat({ max: 700 }), kind: fc.constantFrom('original', 'original', 'consume') }),
  { maxLength: 400 },
);

describe('retry budget invariants on random event sequences (SPEC R1)', () => {
  it('extras in any window ≤ max(floor, ratio × originals), and a refusal is never premature', () => {
    fc.assert(
      fc.property(configArb, eventsArb, (config, events) => {
        const clock = new FakeClock();
        const maxRatio = config.ratioPct / 100;
        const { ratioPct: _, ...options } = config;
        const budget = createRetryBudget({ ...options, maxRatio, clock });
        const W = config.windowMs;
        const b = W / config.buckets;
        const floor = Math.floor((config.minPerSecond * W) / 1000 + 1e-9);
        const originals: number[] = [];
        const extras: number[] = [];
        for (const event of events) {
          clock.advance(event.gap);
          const t = clock.now();
          if (event.kind === 'original') {
            budget.recordOriginal();
            originals.push(t);
            continue;
          }
          if (budget.tryConsume()) {
            extras.push(t);
            // Safety over the exact window (t − W, t]: integers, ratio = ratioPct / 100.
            const e = countIn(extras, t - W, t, true);
            const o = countIn(originals, t - W, t, true);
            expect(e <= floor || e * 100 <= o * config.ratioPct).toBe(true);
          } else {
            // Liveness: refused only when even a slightly wider extras window and a slightly
            // narrower originals window (one bucket each way) leave no room.
            const e = countIn(extras, t - W - b, t, true) + 1;
            const o = countIn(originals, t - W + b, t, false);
            expect(e > floor && e * 100 > o * config.ratioPct).toBe(true);
          }
        }
      }),
      { numRuns: 300 },
    );
  });

  it('state() never yields NaN and its ratio matches its counts', () => {
    fc.assert(
      fc.property(configArb, eventsArb, (config, events) => {
        const clock = new FakeClock();
        const { ratioPct, ...options } = config;
        const budget = createRetryBudget({ ...options, maxRatio: ratioPct / 100, clock });
        for (const event of events) {
          clock.advance(event.gap);
          if (event.kind === 'original') budget.recordOriginal();
          else budget.tryConsume();
          const s = budget.state();
          expect(Number.isInteger(s.originals) && Number.isInteger(s.extras)).toBe(true);
          expect(s.ratio).toBe(s.originals > 0 ? s.extras / s.originals : 0);
        }
      }),
      { numRuns: 100 },
    );
  });
});

describe('retry budget memory', () => {
  it('does not grow with the rate: 1M events in a window cost what 1k do', () => {
    v8.setFlagsFromString('--expose-gc');
    const gc = vm.runInNewContext('gc') as () => void;
    const clock = new FakeClock();
    const run = (events: number): { budget: unknown; heap: number } => {
      gc();
      const before = process.memoryUsage().heapUsed;
      const budget = createRetryBudget({ windowMs: 10_000, clock });
      // All events land inside one window: a timestamp list would hold every one of them.
      for (let i = 0; i < events; i += 1) {
        if (i % 100 === 0) clock.advance(0.005);
        budget.recordOriginal();
        budget.tryConsume();
      }
      gc();
      return { budget, heap: process.memoryUsage().heapUsed - before };
    };
    const small = run(1_000);
    const large = run(1_000_000);
    expect(large.budget).toBeDefined();
    expect(small.budget).toBeDefined();
    // 1M timestamps would be ≥ 8 MB; the ring is a few hundred bytes whatever the count.
    expect(large.heap - small.heap).toBeLessThan(512 * 1024);
  });
});
