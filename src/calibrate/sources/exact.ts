import { type LatencyDistribution, QUANTILES, type SourceFormat } from './types.js';

/**
 * A distribution from raw samples (a newline list, a CSV column): exact quantiles by nearest rank,
 * the sample of rank ceil(q × n). Nearest rank never interpolates *below* a real sample, which is the
 * safe side for a timeout.
 */
export function fromSamples(
  format: SourceFormat,
  successMs: Float64Array,
  errors: number,
  timeouts: number,
  notes: readonly string[],
): LatencyDistribution {
  const sorted = successMs.sort();
  const n = sorted.length;
  const at = (q: number): number | undefined =>
    n === 0 ? undefined : sorted[Math.max(0, Math.ceil(q * n) - 1)];
  return Object.freeze({
    format,
    count: n + errors + timeouts,
    successes: n,
    errors,
    timeouts,
    p50: at(QUANTILES.p50),
    p95: at(QUANTILES.p95),
    p99: at(QUANTILES.p99),
    p999: at(QUANTILES.p999),
    p99Bounded: true,
    notes: Object.freeze([...notes]),
  });
}

/** Parses one latency number: finite, ≥ 0, plain decimal or exponent notation. */
export function parseLatency(raw: string): number | undefined {
  const s = raw.trim();
  if (!/^[+]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/.test(s)) return undefined;
  const value = Number(s);
  return Number.isFinite(value) && value >= 0 ? value : undefined;
}
