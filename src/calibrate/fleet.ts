import type { Clock } from '../clock/clock.js';
import { systemClock } from '../clock/system.js';
import { readOptions } from '../options/validator.js';
import { checkDrift, type DriftResult } from './drift.js';
import { calibrateFromDistribution } from './from-distribution.js';
import {
  assessWindow,
  NO_SUCCESS_REASON,
  type ResolvedHealthThresholds,
  type WindowStats,
  type WindowVerdict,
} from './health.js';
import { baselineP99Of } from './health-tracker.js';
import {
  CALIBRATE_FROM_DISTRIBUTION_OPTIONS,
  FLEET_WINDOW_OPTIONS,
  type FleetWindowOptions,
} from './options.js';
import { formatDuration, increase, type Matcher, selector, successMatcher, sumBy } from './promql.js';
import {
  type Bucket,
  bucketDistribution,
  bucketQuantile,
  normalizeBuckets,
} from './sources/bucket-quantile.js';
import {
  type Matrix,
  type PrometheusClient,
  type PrometheusFailure,
  PrometheusQueryError,
} from './sources/prometheus-api.js';
import { parsePromFloat } from './sources/prometheus-line.js';
import {
  classifyOutcome,
  type LatencyDistribution,
  type LatencyUnit,
  QUANTILES,
  UNIT_TO_MS,
} from './sources/types.js';
import { type CalibrateTimeoutInput, calibrateTimeout, type TimeoutCalibration } from './timeout.js';

/**
 * Fleet calibration (SPEC X8, C1, C3–C5): a dependency's p99 read from the fleet's Prometheus — every
 * pod's histogram summed by `le`, not one process's recorder — over a long window cut into
 * sub-windows, each judged by the healthy-window guard, so that an incident inside the week never
 * becomes the timeout.
 *
 * Per dependency, two range queries over the window, one point per sub-window:
 * - the successful calls' buckets, `sum by (le) (increase(<metric>_bucket{<selector>, <success>}[step]))`:
 *   each sub-window's p99 is then `histogram_quantile(0.99, …)` of its buckets — computed here with
 *   `bucketQuantile`, the same linear interpolation (the end-to-end test checks it against
 *   Prometheus' own), because the buckets are needed anyway: to tell a p99 beyond the largest finite
 *   bucket (which `histogram_quantile` reports as that bucket's bound) and to merge the healthy
 *   sub-windows into one histogram;
 * - the calls by outcome, `sum by (<outcome label>) (increase(<metric>_count{<selector>}[step]))`:
 *   the error and timeout ratios of each sub-window.
 *
 * Each sub-window is judged by the one guard, `assessWindow` (error rate, timeout rate, p99 jump,
 * sample count), against a baseline: the configured `baselineP99Ms`, else the median p99 of the
 * sub-windows whose rates pass (`baselineP99Of`, the live tracker's). The healthy sub-windows' buckets
 * are summed, their p99 goes to `calibrateFromDistribution` (the guard again, then `calibrateTimeout`
 * with the dependency's own slack, attempts and deadline), and the timeout in force is judged by the
 * drift check against that p99.
 */

/** The series of one dependency, resolved: no defaults left. */
export interface FleetSeries {
  /** The histogram's base name (`<metric>_bucket`, `<metric>_count`). */
  readonly metric: string;
  readonly matchers: readonly Matcher[];
  /** The label saying how a call ended, or undefined: every call counts as a success. */
  readonly outcomeLabel: string | undefined;
  /** Unit of `le`. */
  readonly unit: LatencyUnit;
}

/** One dependency to calibrate: its series and what is in force now. */
export interface FleetDependency {
  readonly name: string;
  readonly series: FleetSeries;
  /** The p99 the config holds now, in ms: the timeout in force is calibrated from it. */
  readonly p99Ms: number;
  /** The dependency's own calibration inputs (its slack, attempts, deadline...). */
  readonly timeout: Omit<CalibrateTimeoutInput, 'p99Ms'>;
  /** A known-healthy p99 for the jump check, in ms. Default: the median of the sub-windows. */
  readonly baselineP99Ms?: number;
}

export interface FleetCalibrationInput {
  readonly client: PrometheusClient;
  readonly dependencies: readonly FleetDependency[];
  readonly window?: FleetWindowOptions;
  /** The guard's thresholds, resolved (`resolveHealthThresholds`). */
  readonly thresholds: ResolvedHealthThresholds;
  readonly clock?: Clock;
}

/** One sub-window, `(startEpochMs, endEpochMs]`, and the guard's verdict on it. */
export interface SubWindow extends WindowStats {
  readonly startEpochMs: number;
  readonly endEpochMs: number;
  /** False when its p99 lies beyond the largest finite bucket. */
  readonly p99Bounded: boolean;
  readonly verdict: WindowVerdict;
}

/** The healthy sub-windows merged: what the recommendation is calibrated on. */
export interface FleetMeasurement extends LatencyDistribution {
  /** The bucket the p99 was interpolated in, `(lowerMs, upperMs]`: the measurement's resolution. */
  readonly p99Bucket: { readonly lowerMs: number; readonly upperMs: number } | undefined;
}

export interface FleetDependencyResult {
  readonly name: string;
  /** The two queries sent (PromQL), for a human to run on their own. */
  readonly queries: { readonly buckets: string; readonly calls: string };
  /** What the config's p99 gives now. */
  readonly current: { readonly p99Ms: number } & TimeoutCalibration;
  readonly windows: readonly SubWindow[];
  readonly healthyWindows: number;
  /** The baseline the jump check used, in ms. */
  readonly baselineP99Ms: number | undefined;
  /** The healthy sub-windows merged; undefined when there is none. */
  readonly measured: FleetMeasurement | undefined;
  /** Why no recommendation (no healthy sub-window, no data, the guard refused the merge), or null. */
  readonly refused: readonly string[] | null;
  readonly recommendation: TimeoutCalibration | undefined;
  /** The timeout in force judged against the measured p99 (SPEC C5); undefined when nothing was measured. */
  readonly drift: DriftResult | undefined;
  readonly warnings: readonly string[];
  /** A query that failed (Prometheus unreachable, an error answer, a body that is not the API's). */
  readonly failure: { readonly reason: PrometheusFailure; readonly message: string } | undefined;
}

/** The window's range in seconds and the sub-windows' ends, from validated options. */
function rangeOf(window: FleetWindowOptions, clock: Clock) {
  const o = readOptions('calibrateFleet', FLEET_WINDOW_OPTIONS, window);
  const end = Math.floor((o.endEpochMs ?? clock.epochNow()) / o.stepMs) * o.stepMs;
  const n = Math.floor(o.windowMs / o.stepMs);
  const start = end - (n - 1) * o.stepMs;
  return {
    stepMs: o.stepMs,
    n,
    start,
    end,
    range: { startS: start / 1000, endS: end / 1000, stepS: o.stepMs / 1000 },
  };
}

type Range = ReturnType<typeof rangeOf>;

/** The index of the sub-window a point's time is the end of, or -1 when it is none of them. */
function slotOf(timeS: number, r: Range): number {
  const k = Math.round((timeS * 1000 - r.start) / r.stepMs);
  return k >= 0 && k < r.n && Math.abs(timeS * 1000 - (r.start + k * r.stepMs)) < 1 ? k : -1;
}

const nonFinite = (what: string, value: number, timeS: number): never => {
  throw new PrometheusQueryError(
    'body',
    `Prometheus answered ${Number.isNaN(value) ? 'NaN' : value} for ${what} at ${timeS}: not a count`,
  );
};

/** Buckets per sub-window, in ms, from `sum by (le) (increase(_bucket[step]))`. */
function bucketsBySlot(m: Matrix, r: Range, toMs: number): Bucket[][] {
  const slots: Bucket[][] = Array.from({ length: r.n }, () => []);
  for (const s of m.series) {
    const raw = s.labels.get('le');
    const le = raw === undefined ? undefined : parsePromFloat(raw);
    if (le === undefined || Number.isNaN(le) || le < 0) {
      throw new PrometheusQueryError(
        'body',
        `a bucket series has no valid \`le\` label (${JSON.stringify(raw ?? null)})`,
      );
    }
    const leMs = le === Number.POSITIVE_INFINITY ? le : le * toMs;
    // A finite bound that overflows in ms would merge into +Inf and count its calls twice.
    if (leMs === Number.POSITIVE_INFINITY && le !== leMs) {
      throw new PrometheusQueryError(
        'body',
        `a bucket bound le=${raw!.slice(0, 40)} is too large to be a latency`,
      );
    }
    for (const [t, v] of s.points) {
      if (!Number.isFinite(v) || v < 0) nonFinite(`the bucket le=${raw}`, v, t);
      const k = slotOf(t, r);
      if (k >= 0) slots[k]!.push({ le: leMs, count: v });
    }
  }
  return slots;
}

interface Calls {
  count: number;
  successes: number;
  errors: number;
  timeouts: number;
}

/** Calls per sub-window by outcome, from `sum by (<label>) (increase(_count[step]))`. */
function callsBySlot(m: Matrix, r: Range, label: string | undefined, notes: string[]): Calls[] {
  const slots: Calls[] = Array.from({ length: r.n }, () => ({
    count: 0,
    successes: 0,
    errors: 0,
    timeouts: 0,
  }));
  let unlabelled = 0;
  let cancelled = 0;
  for (const s of m.series) {
    const value = label === undefined ? '' : (s.labels.get(label) ?? '');
    const outcome = value === '' ? 'success' : classifyOutcome(label!, value);
    for (const [t, v] of s.points) {
      if (!Number.isFinite(v) || v < 0) nonFinite(`the calls${value ? ` ${label}=${value}` : ''}`, v, t);
      const k = slotOf(t, r);
      if (k < 0) continue;
      const c = slots[k]!;
      if (outcome === 'cancelled') {
        cancelled += v;
        continue;
      }
      if (label !== undefined && value === '') unlabelled += v;
      c.count += v;
      if (outcome === 'success') c.successes += v;
      else if (outcome === 'error') c.errors += v;
      else c.timeouts += v;
      // Finite counts can add up past every float (1.7e308 twice): not a count of calls either.
      if (!Number.isFinite(c.count))
        throw new PrometheusQueryError(
          'body',
          `the calls Prometheus answered for the sub-window at ${t} add up past the largest number: not a count`,
        );
    }
  }
  if (unlabelled > 0)
    notes.push(`${round(unlabelled)} call(s) without a ${label} label counted as successes`);
  if (cancelled > 0)
    notes.push(`${round(cancelled)} cancelled call(s) left out (neither a success nor a failure)`);
  return slots;
}

/** One decimal; a number too large to scale by 10 is shown as it is (never "Infinity ms"). */
const round = (x: number): number => (Math.abs(x) < 1e300 ? Math.round(x * 10) / 10 : x);

const MAX_BASELINE_MS = CALIBRATE_FROM_DISTRIBUTION_OPTIONS.specs.baselineP99Ms.max!;

/** The guard's verdict, with a p99 the buckets cannot bound made a reason of its own. */
function judge(
  w: WindowStats & { p99Bounded: boolean; top: number | undefined; noP99: string | undefined },
  baseline: number | undefined,
  t: ResolvedHealthThresholds,
): WindowVerdict {
  const judged = assessWindow(w, baseline, t);
  // Calls succeeded but the buckets place no p99: say why, not the guard's "no successful call".
  const verdict =
    w.noP99 === undefined || judged.health === 'insufficient'
      ? judged
      : Object.freeze({
          ...judged,
          reasons: Object.freeze(judged.reasons.map((r) => (r === NO_SUCCESS_REASON ? w.noP99! : r))),
        });
  if (w.p99Bounded || verdict.health === 'insufficient') return verdict;
  const reason = `the p99 lies beyond the largest finite bucket (le=${round(w.top ?? 0)} ms): the histogram cannot measure it`;
  return Object.freeze({
    ...verdict,
    health: 'degraded',
    reasons: Object.freeze([...verdict.reasons, reason]),
  });
}

/** Why buckets give no p99 for calls that succeeded (what `histogram_quantile` answers NaN for). */
function whyNoP99(buckets: readonly Bucket[]): string {
  const last = buckets[buckets.length - 1];
  if (last === undefined) return 'no bucket series for the successful calls: no p99 to calibrate on';
  if (last.le !== Number.POSITIVE_INFINITY)
    return 'the buckets have no le="+Inf" series: no p99 to calibrate on';
  if (last.count > 0) return 'every call is in the +Inf bucket: no finite bucket places the p99';
  return 'the buckets count no call although the calls do: no p99 to calibrate on';
}

function measure(buckets: Bucket[], calls: Calls, heading: string, notes: string[]): FleetMeasurement {
  notes.unshift(heading);
  return bucketDistribution(buckets, calls, notes);
}

/** Why no sub-window was healthy, in one line. */
function noHealthy(windows: readonly SubWindow[], minSamples: number): string {
  const degraded = windows.filter((w) => w.verdict.health === 'degraded').length;
  const few = windows.length - degraded;
  if (degraded === 0) {
    const most = Math.max(0, ...windows.map((w) => w.count));
    return (
      `too few samples: at most ${round(most)} call(s) in a sub-window, ${minSamples} needed to judge one ` +
      '(a longer --step, or a smaller minSamples)'
    );
  }
  return `no healthy sub-window to calibrate on: ${degraded} degraded, ${few} with too few calls`;
}

export function queriesOf(series: FleetSeries, stepMs: number): { buckets: string; calls: string } {
  const window = formatDuration(stepMs);
  const ok = series.outcomeLabel === undefined ? [] : [successMatcher(series.outcomeLabel)];
  const buckets = sumBy(['le'], increase(`${series.metric}_bucket`, [...series.matchers, ...ok], window));
  const counts = increase(`${series.metric}_count`, series.matchers, window);
  const calls = series.outcomeLabel === undefined ? `sum(${counts})` : sumBy([series.outcomeLabel], counts);
  return { buckets, calls };
}

async function calibrateOne(
  dep: FleetDependency,
  input: FleetCalibrationInput,
  r: Range,
): Promise<FleetDependencyResult> {
  const queries = queriesOf(dep.series, r.stepMs);
  const current = Object.freeze({
    p99Ms: dep.p99Ms,
    ...calibrateTimeout({ ...dep.timeout, p99Ms: dep.p99Ms }),
  });
  const base = { name: dep.name, queries, current };
  const empty = {
    windows: [],
    healthyWindows: 0,
    baselineP99Ms: undefined,
    measured: undefined,
    recommendation: undefined,
    drift: undefined,
  };
  const notes: string[] = [];
  const warnings: string[] = [];
  let bucketSlots: Bucket[][];
  let callSlots: Calls[];
  try {
    const [b, c] = await Promise.all([
      input.client.queryRange(queries.buckets, r.range),
      input.client.queryRange(queries.calls, r.range),
    ]);
    if (b.series.length === 0 && c.series.length === 0) {
      const shown = selector(`${dep.series.metric}_count`, dep.series.matchers);
      return Object.freeze({
        ...base,
        ...empty,
        refused: Object.freeze([
          `no series: ${shown} has no data in the window (check the metric, the selector and the window)`,
        ]),
        warnings: [],
        failure: undefined,
      });
    }
    for (const w of [...b.warnings, ...c.warnings]) warnings.push(`Prometheus warns: ${w}`);
    bucketSlots = bucketsBySlot(b, r, UNIT_TO_MS[dep.series.unit]);
    callSlots = callsBySlot(c, r, dep.series.outcomeLabel, notes);
  } catch (error) {
    if (!(error instanceof PrometheusQueryError)) throw error;
    return Object.freeze({
      ...base,
      ...empty,
      refused: null,
      warnings: [],
      failure: Object.freeze({ reason: error.reason, message: error.message }),
    });
  }
  const t = input.thresholds;
  const stats = bucketSlots.map((raw, k) => {
    const buckets = normalizeBuckets(raw).buckets;
    const q = bucketQuantile(QUANTILES.p99, buckets);
    const calls = callSlots[k]!;
    const top = buckets.length >= 2 ? buckets[buckets.length - 2]!.le : undefined;
    return {
      noP99: q === undefined && calls.successes > 0 ? whyNoP99(buckets) : undefined,
      k,
      raw,
      count: calls.count,
      errors: calls.errors,
      timeouts: calls.timeouts,
      p99: q?.value,
      p99Bounded: q?.bounded ?? true,
      top,
    };
  });
  // The baseline: the configured one, else the median p99 of the sub-windows whose rates pass.
  const rateHealthy = stats.filter((s) => s.p99Bounded && judge(s, undefined, t).health === 'healthy');
  const baselineP99Ms = dep.baselineP99Ms ?? baselineP99Of(rateHealthy.map((s) => s.p99!));
  const windows: SubWindow[] = stats.map((s) =>
    Object.freeze({
      startEpochMs: r.start + (s.k - 1) * r.stepMs,
      endEpochMs: r.start + s.k * r.stepMs,
      count: s.count,
      errors: s.errors,
      timeouts: s.timeouts,
      p99: s.p99,
      p99Bounded: s.p99Bounded,
      verdict: judge(s, baselineP99Ms, t),
    }),
  );
  const healthy = stats.filter((_, k) => windows[k]!.verdict.health === 'healthy');
  const result = { ...base, windows: Object.freeze(windows), healthyWindows: healthy.length, baselineP99Ms };
  if (healthy.length === 0) {
    return Object.freeze({
      ...result,
      measured: undefined,
      refused: Object.freeze([noHealthy(windows, t.minSamples)]),
      recommendation: undefined,
      drift: undefined,
      warnings: Object.freeze([...warnings, ...notes]),
      failure: undefined,
    });
  }
  const calls = healthy.reduce<Calls>(
    (a, s) => {
      const c = callSlots[s.k]!;
      return {
        count: a.count + c.count,
        successes: a.successes + c.successes,
        errors: a.errors + c.errors,
        timeouts: a.timeouts + c.timeouts,
      };
    },
    { count: 0, successes: 0, errors: 0, timeouts: 0 },
  );
  const label = selector(dep.series.metric, dep.series.matchers);
  const measured = measure(
    healthy.flatMap((s) => s.raw),
    calls,
    `fleet histogram ${label} (le in ${dep.series.unit}): ${healthy.length} of ${windows.length} sub-window(s) of ${formatDuration(r.stepMs)} healthy`,
    notes,
  );
  // The sub-windows were judged against the baseline already; it goes on to the merge's check only
  // when it is one that option takes. A median of 0 ms (every call in an le="0" bucket) or past a day
  // (buckets in the days) made `calibrateFromDistribution` throw, and that rejected the whole fleet.
  const jumpBaseline =
    baselineP99Ms !== undefined && baselineP99Ms > 0 && baselineP99Ms <= MAX_BASELINE_MS
      ? { baselineP99Ms }
      : {};
  const calibrated = calibrateFromDistribution(measured, { ...dep.timeout, ...t, ...jumpBaseline });
  const drift =
    measured.p99 === undefined
      ? undefined
      : checkDrift({
          timeoutMs: current.responseMs,
          window: { count: calls.count, errors: calls.errors, timeouts: calls.timeouts, p99: measured.p99 },
          ...(baselineP99Ms === undefined ? {} : { previousP99Ms: baselineP99Ms }),
          minSamples: t.minSamples,
        });
  return Object.freeze({
    ...result,
    measured,
    refused: calibrated.refused,
    recommendation: calibrated.calibration,
    drift,
    warnings: Object.freeze([...warnings, ...calibrated.warnings]),
    failure: undefined,
  });
}

/** The window as read: `subWindows` sub-windows of `stepMs`, from `startEpochMs` to `endEpochMs`. */
export interface FleetWindow {
  readonly windowMs: number;
  readonly stepMs: number;
  readonly startEpochMs: number;
  readonly endEpochMs: number;
  readonly subWindows: number;
}

export interface FleetCalibration {
  readonly window: FleetWindow;
  /** One result per dependency, in the order given. */
  readonly dependencies: readonly FleetDependencyResult[];
}

/**
 * Calibrates every dependency from the fleet's Prometheus (queries bounded by the client's
 * concurrency). A failed query is that dependency's `failure`, never a rejection. Throws
 * `InvalidOptionsError` for a bad window.
 */
export async function calibrateFleet(input: FleetCalibrationInput): Promise<FleetCalibration> {
  const r = rangeOf(input.window ?? {}, input.clock ?? systemClock);
  const dependencies = await Promise.all(input.dependencies.map((d) => calibrateOne(d, input, r)));
  const window = Object.freeze({
    windowMs: r.n * r.stepMs,
    stepMs: r.stepMs,
    startEpochMs: r.start - r.stepMs,
    endEpochMs: r.end,
    subWindows: r.n,
  });
  return Object.freeze({ window, dependencies: Object.freeze(dependencies) });
}
