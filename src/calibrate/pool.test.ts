import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { InvalidOptionsError } from '../errors/index.js';
import { checkPool, suggestConcurrencyLimit } from './pool.js';

describe("checkPool: Little's law (SPEC C6)", () => {
  it("the seed's numbers: 100 req/s over 50 connections tolerate 500 ms", () => {
    expect(checkPool({ poolSize: 50, rps: 100, timeoutMs: 500 })).toEqual({
      maxLatencyMs: 500,
      ok: true,
      warning: null,
    });
    const r = checkPool({ poolSize: 50, rps: 100, timeoutMs: 30_000 });
    expect(r.ok).toBe(false);
    expect(r.warning).toContain('timeout of 30000 ms exceeds the 500 ms a pool of 50 tolerates at 100 req/s');
  });

  it('rejects bad input, listing every problem', () => {
    try {
      checkPool({ poolSize: 0, rps: -1, timeoutMs: Number.NaN });
      expect.unreachable();
    } catch (error) {
      expect((error as InvalidOptionsError).problems).toHaveLength(3);
    }
    expect(() => checkPool({} as never)).toThrow(/poolSize.*required/);
  });

  it('property: ok exactly when timeout ≤ N / λ', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 10_000 }),
        fc.double({ min: 0.01, max: 1e6, noNaN: true }),
        fc.integer({ min: 1, max: 600_000 }),
        (poolSize, rps, timeoutMs) => {
          const r = checkPool({ poolSize, rps, timeoutMs });
          expect(r.ok).toBe(timeoutMs <= (poolSize / rps) * 1000);
          expect(r.ok).toBe(r.warning === null);
        },
      ),
    );
  });
});

describe("suggestConcurrencyLimit: a fixed limit from Little's law (SPEC C6, X7)", () => {
  it('N = ceil(rate × p99 × 1.25)', () => {
    expect(suggestConcurrencyLimit(200, 120)).toEqual({
      rps: 200,
      p99Ms: 120,
      inFlightAtP99: 24,
      suggested: 30,
    });
    // 100 × 0.25 = 25 → 31.25 → 32; 80 × 0.15 = 12 → 15.
    expect(suggestConcurrencyLimit(100, 250)?.suggested).toBe(32);
    expect(suggestConcurrencyLimit(80, 150)?.suggested).toBe(15);
    expect(suggestConcurrencyLimit(0.1, 0.01)?.suggested).toBe(1); // never 0
    expect(suggestConcurrencyLimit(1e7, 86_400_000)?.suggested).toBe(100_000); // the limit's own max
  });

  it('nothing to suggest without a finite positive rate and p99', () => {
    for (const [rps, p99] of [
      [0, 100],
      [-1, 100],
      [Number.NaN, 100],
      [Number.POSITIVE_INFINITY, 100],
      [100, 0],
      [100, Number.NaN],
      [100, Number.POSITIVE_INFINITY],
    ] as const) {
      expect(suggestConcurrencyLimit(rps, p99), `${rps} ${p99}`).toBeUndefined();
    }
  });

  it('property: an integer in [1, 100000] for any input, monotone in rate and in latency', () => {
    const any = fc.oneof(fc.double(), fc.double({ min: 1e-6, max: 1e9, noNaN: true }));
    fc.assert(
      fc.property(any, any, any, any, (r1, r2, w1, w2) => {
        for (const [r, w] of [
          [r1, w1],
          [r2, w2],
        ] as const) {
          const s = suggestConcurrencyLimit(r, w);
          if (s === undefined) continue;
          expect(Number.isInteger(s.suggested)).toBe(true);
          expect(s.suggested).toBeGreaterThanOrEqual(1);
          expect(s.suggested).toBeLessThanOrEqual(100_000);
          expect(Number.isFinite(s.inFlightAtP99)).toBe(true);
        }
        const [rLo, rHi] = r1 <= r2 ? [r1, r2] : [r2, r1];
        const [wLo, wHi] = w1 <= w2 ? [w1, w2] : [w2, w1];
        const lo = suggestConcurrencyLimit(rLo, wLo);
        const byRate = suggestConcurrencyLimit(rHi, wLo);
        const byLatency = suggestConcurrencyLimit(rLo, wHi);
        if (lo !== undefined && byRate !== undefined)
          expect(byRate.suggested).toBeGreaterThanOrEqual(lo.suggested);
        if (lo !== undefined && byLatency !== undefined) {
          expect(byLatency.suggested).toBeGreaterThanOrEqual(lo.suggested);
        }
      }),
      { numRuns: 500 },
    );
  });
});
