import type { ResolvedHealthThresholds } from '../calibrate/health.js';
import { checkPool } from '../calibrate/pool.js';
import { calibrateTimeout, type TimeoutCalibration } from '../calibrate/timeout.js';
import { createLatencyRecorder } from '../latency/recorder.js';
import { compact, readBackoff, readHedge, readPool, readRetryBudget } from './dependency-parts.js';
import type { Fields } from './fields.js';
import { fold } from './fold.js';
import { type HistogramRef, type ReadText, readHistogram } from './histogram.js';
import type { Path } from './problem.js';
import { DEPENDENCY_RANGES, HEDGE_RANGES } from './ranges.js';
import type { DependencySettings } from './settings.js';

/**
 * One `dependencies` entry → the options of `createDependency` (SPEC C7: the timeouts live in the
 * file, not in code), plus what the file says about it: the calibration it yields, where its p99 came
 * from, and the pool it must not drain.
 */
export interface DependencyConfig {
  /** Ready for `createDependency({ ...options, clock })`. */
  readonly options: DependencySettings;
  /** `calibrateTimeout` against the dependency's `defaultDeadlineMs` (what `createDependency` computes). */
  readonly calibration: TimeoutCalibration;
  /** Where p99Ms came from: the file, or a histogram file. */
  readonly p99Source: 'config' | HistogramRef;
  readonly pool?: { readonly size: number; readonly rps: number };
}

const KEYS = [
  'name',
  'p99Ms',
  'histogram',
  'attempts',
  'slack',
  'forceSlack',
  'connectCapMs',
  'overheadMs',
  'defaultDeadlineMs',
  'retryBudget',
  'hedge',
  'recorder',
  'backoff',
  'retryResponseTimeout',
  'pool',
];

function readP99(
  f: Fields,
  o: Record<string, unknown>,
  at: Path,
  readText: ReadText,
  thresholds: ResolvedHealthThresholds,
): { p99Ms: number | undefined; histogram: HistogramRef | undefined } {
  const p99Ms = f.number(o, 'p99Ms', at, {
    min: 0,
    exclusiveMin: true,
    max: DEPENDENCY_RANGES.maxP99Ms,
    unit: 'ms',
  });
  const histogram = readHistogram(f, o, at, readText, thresholds);
  if (o.p99Ms !== undefined && o.histogram !== undefined) {
    f.error([...at, 'histogram'], 'give either `p99Ms` or `histogram`, not both');
  } else if (o.p99Ms === undefined && o.histogram === undefined) {
    f.error(at, 'needs `p99Ms` (the healthy p99 in ms) or `histogram` (a file to measure it from)');
  }
  return { p99Ms: histogram?.distribution.p99 ?? p99Ms, histogram };
}

export function readDependency(
  f: Fields,
  o: Record<string, unknown>,
  at: Path,
  readText: ReadText,
  thresholds: ResolvedHealthThresholds,
): DependencyConfig | undefined {
  const before = f.problems.length;
  f.unknownKeys(o, at, KEYS);
  const name = f.string(o, 'name', at, true, DEPENDENCY_RANGES.maxNameLength);
  const { p99Ms, histogram } = readP99(f, o, at, readText, thresholds);
  const recorder = f.record(o, 'recorder', at);
  if (recorder !== undefined) fold(f.problems, [...at, 'recorder'], () => createLatencyRecorder(recorder));
  const defaultDeadlineMs = f.number(o, 'defaultDeadlineMs', at, {
    min: 0,
    exclusiveMin: true,
    max: DEPENDENCY_RANGES.maxDeadlineMs,
    unit: 'ms',
  });
  const timing = {
    attempts: o.attempts as number | undefined,
    slack: o.slack as number | undefined,
    forceSlack: o.forceSlack as boolean | undefined,
    connectCapMs: o.connectCapMs as number | undefined,
    overheadMs: o.overheadMs as number | undefined,
  };
  // calibrateTimeout validates attempts, slack, connectCapMs and overheadMs, exactly as at runtime.
  const calibration = fold(f.problems, at, () =>
    calibrateTimeout({
      ...timing,
      p99Ms: p99Ms ?? 1,
      userDeadlineMs: defaultDeadlineMs ?? DEPENDENCY_RANGES.defaultDeadlineMs,
    }),
  );
  const options: DependencySettings = compact({
    name: name ?? '',
    p99Ms: p99Ms ?? 0,
    ...timing,
    defaultDeadlineMs,
    retryBudget: readRetryBudget(f, o, at),
    hedge: readHedge(f, o, at),
    recorder: recorder as DependencySettings['recorder'],
    backoff: readBackoff(f, o, at),
    retryResponseTimeout: f.boolean(o, 'retryResponseTimeout', at),
  });
  const pool = readPool(f, o, at);
  if (calibration === undefined || f.problems.slice(before).some((p) => p.severity === 'error'))
    return undefined;
  if (calibration.warning !== null) {
    const where = o.defaultDeadlineMs !== undefined ? 'defaultDeadlineMs' : 'attempts';
    if (calibration.feasible) f.warning([...at, where], calibration.warning);
    else f.error([...at, where], calibration.warning);
  }
  const hedge = options.hedge;
  if (hedge !== undefined && hedge !== false) {
    // The executor caps the hedge delay at the response timeout unless maxDelayMs is given.
    const settings = hedge === true ? {} : hedge;
    const floor = settings.minDelayMs ?? HEDGE_RANGES.defaultMinDelayMs;
    if (settings.maxDelayMs === undefined && calibration.responseMs < floor) {
      f.error(
        [...at, 'hedge'],
        `the response timeout (${calibration.responseMs} ms) is below the hedge minDelayMs (${floor} ms): no hedge could be sent`,
      );
      return undefined;
    }
  }
  if (pool !== undefined) {
    const check = checkPool({ poolSize: pool.size, rps: pool.rps, timeoutMs: calibration.responseMs });
    if (check.warning !== null) f.warning([...at, 'pool'], check.warning);
  }
  const p99Source = histogram ?? 'config';
  return Object.freeze(
    pool === undefined ? { options, calibration, p99Source } : { options, calibration, p99Source, pool },
  );
}
