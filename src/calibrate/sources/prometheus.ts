import { type OptionsOf, pickOptions } from '../../options/declare.js';
import { readOptions } from '../../options/validator.js';
import { type Bucket, bucketDistribution, normalizeBuckets } from './bucket-quantile.js';
import { parsePromFloat, parsePromLine } from './prometheus-line.js';
import {
  classifyOutcome,
  type LatencyDistribution,
  type LatencyUnit,
  OUTCOME_KEYS,
  type Outcome,
  SOURCE_LIMITS,
  SOURCE_OPTIONS,
  SourceError,
  toLines,
  UNIT_TO_MS,
} from './types.js';

/**
 * A latency histogram in the Prometheus text exposition (`*_bucket{le="…"}` lines as scraped from an
 * exporter). Series of the chosen histogram are split by outcome when a label says it (`outcome`,
 * `status`, `code`…: 5xx are errors, 408/504 timeouts): quantiles come from the successful series
 * summed by `le`, the others only count toward the error and timeout rates the guard checks (SPEC C4).
 */
export const PROMETHEUS_OPTIONS = pickOptions(SOURCE_OPTIONS, ['metric', 'unit']);

export type PrometheusOptions = OptionsOf<typeof PROMETHEUS_OPTIONS>;

/** Counts past 2^53 lose integer precision; sums of them could overflow to Infinity. */
const MAX_COUNT = Number.MAX_SAFE_INTEGER;

interface Series {
  outcome: Outcome;
  buckets: Bucket[];
}

/** The unit a histogram's name says (`_seconds`, `_milliseconds`/`_ms`, `_microseconds`/`_us`), or undefined. */
export function unitFromName(name: string): LatencyUnit | undefined {
  if (/_seconds?$/.test(name)) return 's';
  if (/_(milliseconds|ms|millis)$/.test(name)) return 'ms';
  if (/_(microseconds|us|micros)$/.test(name)) return 'us';
  return undefined;
}

function collect(text: string): Map<string, Map<string, Series>> {
  const histograms = new Map<string, Map<string, Series>>();
  let series = 0;
  toLines(text).forEach((raw, index) => {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) return;
    const sample = parsePromLine(line, index + 1);
    if (!sample.name.endsWith('_bucket') || !sample.labels.has('le')) return;
    const le = parsePromFloat(sample.labels.get('le')!);
    if (le === undefined || Number.isNaN(le) || le < 0) throw new SourceError(index + 1, 'bad le bound');
    if (!(sample.value >= 0 && sample.value <= MAX_COUNT)) {
      throw new SourceError(index + 1, `a bucket count must be a number in [0, ${MAX_COUNT}]`);
    }
    const base = sample.name.slice(0, -'_bucket'.length);
    const rest = [...sample.labels].filter(([k]) => k !== 'le').sort(([a], [b]) => (a < b ? -1 : 1));
    const key = JSON.stringify(rest);
    const group = histograms.get(base) ?? new Map<string, Series>();
    histograms.set(base, group);
    let s = group.get(key);
    if (s === undefined) {
      series += 1;
      if (series > SOURCE_LIMITS.maxSeries) throw new SourceError(index + 1, 'too many series');
      const outcomeKey = OUTCOME_KEYS.find((k) => sample.labels.has(k));
      s = {
        outcome: outcomeKey ? classifyOutcome(outcomeKey, sample.labels.get(outcomeKey)!) : 'success',
        buckets: [],
      };
      group.set(key, s);
    }
    s.buckets.push({ le, count: sample.value });
  });
  return histograms;
}

function pick(histograms: Map<string, Map<string, Series>>, wanted: string | undefined): [string, Series[]] {
  if (wanted !== undefined) {
    const name = wanted.replace(/_bucket$/, '');
    const group = histograms.get(name);
    if (group === undefined)
      throw new SourceError(
        0,
        `no histogram named ${name} (found: ${[...histograms.keys()].slice(0, 10).join(', ') || 'none'})`,
      );
    return [name, [...group.values()]];
  }
  if (histograms.size === 0) throw new SourceError(0, 'no histogram buckets (*_bucket{le="…"} lines) found');
  if (histograms.size > 1) {
    throw new SourceError(
      0,
      `several histograms (${[...histograms.keys()].slice(0, 10).join(', ')}); choose one with --metric`,
    );
  }
  const [name, group] = [...histograms][0]!;
  return [name, [...group.values()]];
}

export function parsePrometheus(text: string, options: PrometheusOptions = {}): LatencyDistribution {
  readOptions('parsePrometheus', PROMETHEUS_OPTIONS, options);
  const [name, series] = pick(collect(text), options.metric);
  const unit = options.unit ?? unitFromName(name);
  if (unit === undefined)
    throw new SourceError(0, `cannot tell the unit of ${name} from its name; pass --unit s|ms|us`);
  const toMs = UNIT_TO_MS[unit];
  for (const s of series) {
    if (s.buckets.some((b) => Number.isFinite(b.le) && !(b.le * toMs <= SOURCE_LIMITS.maxLatencyMs))) {
      throw new SourceError(0, `a bucket bound of ${name} is beyond ${SOURCE_LIMITS.maxLatencyMs} ms`);
    }
  }
  const notes = [
    `histogram ${name}, ${series.length} series, le in ${unit}${options.unit ? '' : ' (from the name)'}`,
  ];
  const counts: Record<Outcome, number> = { success: 0, error: 0, timeout: 0, cancelled: 0 };
  const success: Bucket[] = [];
  for (const s of series) {
    const { buckets, repaired } = normalizeBuckets(s.buckets);
    const total = buckets[buckets.length - 1];
    if (total?.le !== Number.POSITIVE_INFINITY)
      throw new SourceError(0, `a series of ${name} has no le="+Inf" bucket`);
    if (repaired > 0) notes.push(`${repaired} non-monotonic bucket(s) repaired (running maximum)`);
    counts[s.outcome] += total.count;
    if (s.outcome === 'success') for (const b of buckets) success.push({ le: b.le * toMs, count: b.count });
  }
  if (counts.cancelled > 0) {
    notes.push(`${counts.cancelled} cancelled call(s) left out (neither a success nor a failure)`);
  }
  const calls = {
    count: counts.success + counts.error + counts.timeout,
    successes: counts.success,
    errors: counts.error,
    timeouts: counts.timeout,
  };
  const { p99Bucket: _, ...distribution } = bucketDistribution(success, calls, notes);
  return Object.freeze(distribution);
}
