import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { logHistogram, mergeCounts, percent, quantile, ratesPerSecond, sumCounts } from './stats.js';

describe('demo stats', () => {
  it('nearest-rank quantiles: an actual sample, monotonic in q, min at 0 and max at 1', () => {
    fc.assert(
      fc.property(
        fc.array(fc.double({ min: 0, max: 1e6, noNaN: true }), { minLength: 1, maxLength: 200 }),
        fc.double({ min: 0, max: 1, noNaN: true }),
        fc.double({ min: 0, max: 1, noNaN: true }),
        (values, a, b) => {
          const [lo, hi] = a <= b ? [a, b] : [b, a];
          const qa = quantile(values, lo)!;
          expect(values).toContain(qa);
          expect(qa).toBeLessThanOrEqual(quantile(values, hi)!);
          expect(quantile(values, 0)).toBe(Math.min(...values));
          expect(quantile(values, 1)).toBe(Math.max(...values));
        },
      ),
    );
    expect(quantile([5, 1, 4, 2, 3], 0.5)).toBe(3);
    expect(
      quantile(
        Array.from({ length: 100 }, (_, i) => i + 1),
        0.99,
      ),
    ).toBe(99);
  });

  it('no data, no number: undefined rather than NaN', () => {
    expect(quantile([], 0.5)).toBeUndefined();
    expect(quantile([1], Number.NaN)).toBeUndefined();
    expect(percent(3, 0)).toBeUndefined();
    expect(percent(1, 4)).toBe(25);
  });

  it('log histograms keep every sample (the ends catch the outliers) on increasing edges', () => {
    fc.assert(
      fc.property(fc.array(fc.double({ min: 0, max: 1e7, noNaN: true }), { maxLength: 300 }), (values) => {
        const { edges, counts } = logHistogram(values, 2, 4_000, 36);
        expect(counts).toHaveLength(36);
        expect(edges).toHaveLength(37);
        expect(counts.reduce((a, b) => a + b, 0)).toBe(values.length);
        for (let i = 1; i < edges.length; i += 1) expect(edges[i]!).toBeGreaterThan(edges[i - 1]!);
      }),
    );
  });

  it('bucket counts: merged key by key, turned into dense per-second rates', () => {
    const into: Record<string, number> = { '10': 1 };
    mergeCounts(into, { '10': 2, '12': 5 });
    expect(into).toEqual({ '10': 3, '12': 5 });
    expect(sumCounts(into)).toBe(8);
    // buckets of 250 ms from epoch 2500 ms (bucket 10): 3, 0, 5 requests → 12, 0, 20 req/s
    expect(ratesPerSecond(into, 2_500, 250, 3)).toEqual([12, 0, 20]);
  });
});
