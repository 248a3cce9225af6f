import { type LatencyDistribution, QUANTILES } from './types.js';
/**
 * Quantiles from cumulative histogram buckets, the way PromQL's `histogram_quantile` computes them:
 * find the bucket holding rank q × total and interpolate linearly inside it (the lower edge of the
 * first bucket is 0). When the rank falls in the `+Inf` bucket, Prometheus answers the largest finite
 * bound; we do too, but mark the answer unbounded: it is only a lower bound of the true quantile.
 */
export interface Bucket {
  /** Upper bound (`le`), in ms; the last one is `Infinity`. */
  readonly le: number;
  /** Cumulative count of observations ≤ le. */
  readonly count: number;
}

export interface BucketQuantile {
  readonly value: number;
  /** False when the quantile lies beyond the largest finite bucket. */
  readonly bounded: boolean;
  /** The bucket it was interpolated in: (lower, upper]. */
  readonly lower: number;
  readonly upper: number;
}

/**
 * Sorts by `le`, merges equal bounds, and repairs non-monotonic counts with a running maximum (what
 * Prometheus does for buckets scraped at slightly different instants). Returns how many were repaired.
 */
export function normalizeBuckets(raw: readonly Bucket[]): { buckets: Bucket[]; repaired: number } {
  const byLe = new Map<number, number>();
  for (const b of raw) byLe.set(b.le, (byLe.get(b.le) ?? 0) + b.count);
  const sorted = [...byLe.entries()].sort((a, b) => a[0] - b[0]);
  let running = 0;
  let repaired = 0;
  const buckets = sorted.map(([le, count]) => {
    if (count < running) repaired += 1;
    running = Math.max(running, count);
    return { le, count: running };
  });
  return { buckets, repaired };
}

/** `q` in (0, 1); buckets normalized, the last with `le = Infinity`. Undefined when empty. */
export function bucketQuantile(q: number, buckets: readonly Bucket[]): BucketQuantile | undefined {
  const last = buckets[buckets.length - 1];
  if (last === undefined || last.le !== Number.POSITIVE_INFINITY || !(last.count > 0)) return undefined;
  const rank = q * last.count;
  let i = 0;
  while (i < buckets.length - 1 && buckets[i]!.count < rank) i += 1;
  const b = buckets[i]!;
  if (b.le === Number.POSITIVE_INFINITY) {
    const finite = buckets[buckets.length - 2];
    if (finite === undefined) return undefined;
    return { value: finite.le, bounded: false, lower: finite.le, upper: Number.POSITIVE_INFINITY };
  }
  const lower = i === 0 ? 0 : buckets[i - 1]!.le;
  if (i === 0 && b.le <= 0) return { value: b.le, bounded: true, lower: b.le, upper: b.le };
  const below = i === 0 ? 0 : buckets[i - 1]!.count;
  const inBucket = b.count - below;
  const fraction = inBucket > 0 ? (rank - below) / inBucket : 1;
  const value = lower + (b.le - lower) * Math.min(1, Math.max(0, fraction));
  return { value, bounded: true, lower, upper: b.le };
}

/** Calls by how they ended: what a histogram's series say beside the successful ones' buckets. */
export interface BucketCalls {
  readonly count: number;
  readonly successes: number;
  readonly errors: number;
  readonly timeouts: number;
}

/**
 * The distribution of histogram buckets (ms, cumulative; several series' buckets may be given
 * together: they are summed by bound, as PromQL's `sum by (le)` does), with the calls counted
 * beside it. The one place a scraped file (`parsePrometheus`) and the fleet's range queries
 * (`calibrateFromPrometheus`) turn buckets into quantiles, so both read the same p99 from the same
 * buckets. `notes` gets the p99's bucket, or that it lies beyond the largest finite one (a lower bound
 * only), and is frozen with the result.
 */
export function bucketDistribution(
  buckets: readonly Bucket[],
  calls: BucketCalls,
  notes: string[],
): LatencyDistribution & {
  readonly p99Bucket: { readonly lowerMs: number; readonly upperMs: number } | undefined;
} {
  const merged = normalizeBuckets(buckets).buckets;
  const at = (q: number) => bucketQuantile(q, merged);
  const p99 = at(QUANTILES.p99);
  const round = (x: number): number => (Math.abs(x) < 1e300 ? Math.round(x * 10) / 10 : x);
  if (p99?.bounded) {
    notes.push(
      `p99 interpolated in bucket (${round(p99.lower)}, ${round(p99.upper)}] ms, like histogram_quantile`,
    );
  } else if (p99 !== undefined) {
    notes.push(`p99 lies beyond the largest finite bucket (le=${round(p99.lower)} ms): only a lower bound`);
  }
  // Calls in the +Inf bucket alone: every quantile lies beyond a finite bound the histogram lacks, so
  // the p99 is unbounded, not "bounded and absent" (read as "no successful call").
  const top = merged[merged.length - 1];
  const onlyInf = p99 === undefined && top?.le === Number.POSITIVE_INFINITY && top.count > 0;
  if (onlyInf) notes.push('no finite bucket holds a call: the histogram cannot place any quantile');
  return Object.freeze({
    format: 'prometheus' as const,
    count: calls.count,
    successes: calls.successes,
    errors: calls.errors,
    timeouts: calls.timeouts,
    p50: at(QUANTILES.p50)?.value,
    p95: at(QUANTILES.p95)?.value,
    p99: p99?.value,
    p999: at(QUANTILES.p999)?.value,
    p99Bounded: p99?.bounded ?? !onlyInf,
    p99Bucket: p99 === undefined ? undefined : { lowerMs: p99.lower, upperMs: p99.upper },
    notes: Object.freeze(notes),
  });
}
