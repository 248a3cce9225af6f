import { assessWindow, type ResolvedHealthThresholds } from '../calibrate/health.js';
import { readLatencySource } from '../calibrate/sources/detect.js';
import { type LatencyDistribution, SourceError } from '../calibrate/sources/types.js';
import type { Fields } from './fields.js';
import type { Path } from './problem.js';

/**
 * A dependency's p99 from a histogram file instead of a number (SPEC C1, C4):
 * `histogram: { file, metric?, unit?, format?, column?, baselineP99Ms? }`, the file relative to the
 * config. The window is judged by the healthy-window guard first; a degraded one is refused, with the
 * guard's reasons, at the `histogram` key.
 */
export type ReadText = (file: string) => string;

export interface HistogramRef {
  readonly file: string;
  readonly distribution: LatencyDistribution;
}

export function readHistogram(
  f: Fields,
  o: Record<string, unknown>,
  at: Path,
  readText: ReadText,
  thresholds: ResolvedHealthThresholds,
): HistogramRef | undefined {
  const h = f.record(o, 'histogram', at);
  if (h === undefined) return undefined;
  const p = [...at, 'histogram'];
  f.unknownKeys(h, p, ['file', 'metric', 'unit', 'format', 'column', 'baselineP99Ms']);
  const file = f.string(h, 'file', p, true, 4096);
  const options = {
    metric: f.string(h, 'metric', p),
    unit: f.oneOf(h, 'unit', p, ['s', 'ms', 'us'] as const),
    format: f.oneOf(h, 'format', p, ['prometheus', 'samples', 'csv'] as const),
    column: f.string(h, 'column', p),
  };
  const baseline = f.number(h, 'baselineP99Ms', p, { min: 0, exclusiveMin: true, unit: 'ms' });
  if (file === undefined) return undefined;
  let distribution: LatencyDistribution;
  try {
    distribution = readLatencySource(readText(file), options);
  } catch (error) {
    const why =
      error instanceof SourceError ? error.message : `cannot read ${file}: ${(error as Error).message}`;
    f.error([...p, 'file'], `${file}: ${why}`);
    return undefined;
  }
  const verdict = assessWindow(distribution, baseline, thresholds);
  if (!distribution.p99Bounded) {
    f.error(
      p,
      `${file}: the p99 lies beyond the largest finite bucket; refusing to calibrate on it (SPEC C4)`,
    );
    return undefined;
  }
  if (verdict.health !== 'healthy') {
    f.error(
      p,
      `${file}: ${verdict.health} window (${verdict.reasons.join('; ')}); refusing to calibrate on it (SPEC C4)`,
    );
    return undefined;
  }
  return { file, distribution };
}
