import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { seededRandom } from './random.js';

describe('seededRandom', () => {
  it('replays the same sequence for the same seed, and another for another seed', () => {
    const a = seededRandom(42);
    const b = seededRandom(42);
    const c = seededRandom(43);
    const sa = Array.from({ length: 5 }, a);
    expect(Array.from({ length: 5 }, b)).toEqual(sa);
    expect(Array.from({ length: 5 }, c)).not.toEqual(sa);
  });

  it('property: stays in [0, 1) and is roughly uniform', () => {
    fc.assert(
      fc.property(fc.integer(), (seed) => {
        const r = seededRandom(seed);
        let sum = 0;
        for (let i = 0; i < 2_000; i += 1) {
          const v = r();
          expect(v >= 0 && v < 1).toBe(true);
          sum += v;
        }
        expect(Math.abs(sum / 2_000 - 0.5)).toBeLessThan(0.05);
      }),
      { numRuns: 200 },
    );
  });
});
