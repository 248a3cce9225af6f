import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { SUPPLIER_PROFILE } from './constants.js';
import { createRandom, logNormal, logNormalQuantile, normalQuantile } from './random.js';
import { quantile } from './stats.js';

describe('seeded randomness of the supplier double', () => {
  it('is reproducible from its seed and uniform in [0, 1)', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 2 ** 31 - 1 }), (seed) => {
        const a = createRandom(seed);
        const b = createRandom(seed);
        for (let i = 0; i < 50; i += 1) {
          const x = a();
          expect(x).toBe(b());
          expect(x).toBeGreaterThanOrEqual(0);
          expect(x).toBeLessThan(1);
        }
      }),
    );
  });

  it('the normal quantile matches known values and is monotonic', () => {
    expect(normalQuantile(0.5)).toBeCloseTo(0, 9);
    expect(normalQuantile(0.99)).toBeCloseTo(2.3263, 4);
    expect(normalQuantile(0.01)).toBeCloseTo(-2.3263, 4);
    expect(normalQuantile(0)).toBe(Number.NEGATIVE_INFINITY);
    fc.assert(
      fc.property(
        fc.double({ min: 1e-6, max: 1 - 1e-6, noNaN: true }),
        fc.double({ min: 1e-6, max: 1 - 1e-6, noNaN: true }),
        (p, q) => {
          if (p < q) expect(normalQuantile(p)).toBeLessThanOrEqual(normalQuantile(q));
        },
      ),
    );
  });

  it("the healthy profile's samples have the p99 the seed gives the supplier (≈ 250 ms)", () => {
    const P = SUPPLIER_PROFILE;
    const random = createRandom(7);
    const samples = Array.from({ length: 40_000 }, () => logNormal(random, P.medianMs, P.sigma, P.minMs));
    const expected = logNormalQuantile(P.medianMs, P.sigma, 0.99);
    expect(expected).toBeGreaterThan(240);
    expect(expected).toBeLessThan(260);
    expect(quantile(samples, 0.99)! / expected).toBeGreaterThan(0.95);
    expect(quantile(samples, 0.99)! / expected).toBeLessThan(1.05);
    expect(quantile(samples, 0.5)! / P.medianMs).toBeCloseTo(1, 1);
    expect(Math.min(...samples)).toBeGreaterThanOrEqual(P.minMs);
  });
});
