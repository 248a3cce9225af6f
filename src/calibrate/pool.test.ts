import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { InvalidOptionsError } from '../errors/index.js';
import { checkPool } from './pool.js';

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
