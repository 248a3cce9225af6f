/**
 * Exact statistics over the demo's raw samples. A demo run holds a few thousand samples per stack, so
 * sorting them is cheaper and clearer than a sketch, and its quantiles are exact (nearest rank).
 */

/** Nearest-rank quantile of `values` (need not be sorted), `q` in [0, 1]; `undefined` when empty. */
export function quantile(values: readonly number[], q: number): number | undefined {
  if (values.length === 0 || !(q >= 0 && q <= 1)) return undefined;
  const sorted = [...values].sort((a, b) => a - b);
  return quantileSorted(sorted, q);
}

/** Nearest-rank quantile of already sorted values. */
export function quantileSorted(sorted: readonly number[], q: number): number | undefined {
  if (sorted.length === 0) return undefined;
  const rank = Math.ceil(q * sorted.length);
  return sorted[Math.min(sorted.length - 1, Math.max(0, rank - 1))];
}

/** `part / whole` as a percentage; `undefined` when `whole` is 0 (no traffic is not 0% nor 100%). */
export function percent(part: number, whole: number): number | undefined {
  return whole > 0 ? (100 * part) / whole : undefined;
}

/** Sum of the values of a bucket map. */
export function sumCounts(counts: Readonly<Record<string, number>>): number {
  let total = 0;
  for (const value of Object.values(counts)) total += value;
  return total;
}

/** Adds `from` into `into`, key by key. */
export function mergeCounts(into: Record<string, number>, from: Readonly<Record<string, number>>): void {
  for (const [key, value] of Object.entries(from)) into[key] = (into[key] ?? 0) + value;
}

/**
 * A bucket map (keys `floor(epochMs / bucketMs)`) as a dense series of rates per second, from the
 * bucket holding `fromEpochMs` for `buckets` buckets.
 */
export function ratesPerSecond(
  counts: Readonly<Record<string, number>>,
  fromEpochMs: number,
  bucketMs: number,
  buckets: number,
): number[] {
  const first = Math.floor(fromEpochMs / bucketMs);
  const series: number[] = [];
  for (let i = 0; i < buckets; i += 1) series.push(((counts[String(first + i)] ?? 0) * 1000) / bucketMs);
  return series;
}

/** Log-spaced histogram bins from `minMs` to `maxMs`: edges and counts (values beyond go to the ends). */
export function logHistogram(
  values: readonly number[],
  minMs: number,
  maxMs: number,
  bins: number,
): { readonly edges: number[]; readonly counts: number[] } {
  const lo = Math.log(minMs);
  const step = (Math.log(maxMs) - lo) / bins;
  const edges = Array.from({ length: bins + 1 }, (_, i) => Math.exp(lo + i * step));
  const counts = new Array<number>(bins).fill(0);
  for (const value of values) {
    const index = value <= minMs ? 0 : Math.floor((Math.log(value) - lo) / step);
    counts[Math.min(bins - 1, Math.max(0, index))]! += 1;
  }
  return { edges, counts };
}
