import type { ResolvedHealthThresholds } from '../calibrate/health.js';
import { checkPool } from '../calibrate/pool.js';
import type { TimeoutCalibration } from '../calibrate/timeout.js';
import { createDependency } from '../dependency/dependency.js';
import type { DependencyOptions } from '../dependency/options.js';
import { compact, readHedge, readPool, readRetryBudget } from './dependency-parts.js';
import type { Fields } from './fields.js';
import { fold } from './fold.js';
import { type HistogramRef, type ReadText, readHistogram } from './histogram.js';
import type { Path, RawProblem } from './problem.js';

/**
 * One `dependencies` entry → the options of `createDependency` (SPEC C7: the timeouts live in the
 * file, not in code), plus what the file says about it: the calibration it yields, where its p99 came
 * from, and the pool it must not drain.
 */
export interface DependencyConfig {
  /** Ready for `createDependency({ ...options, clock })`. */
  readonly options: DependencyOptions;
  /** `calibrateTimeout` against the dependency's `defaultDeadlineMs`. */
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

export function readDependency(
  f: Fields,
  o: Record<string, unknown>,
  at: Path,
  readText: ReadText,
  thresholds: ResolvedHealthThresholds,
): DependencyConfig | undefined {
  const before = f.problems.length;
  f.unknownKeys(o, at, KEYS);
  const name = f.string(o, 'name', at, true, 100);
  let p99Ms = f.number(o, 'p99Ms', at, { min: 0, exclusiveMin: true, max: 86_400_000, unit: 'ms' });
  const histogram = readHistogram(f, o, at, readText, thresholds);
  if (o.p99Ms !== undefined && o.histogram !== undefined) {
    f.error([...at, 'histogram'], 'give either `p99Ms` or `histogram`, not both');
  } else if (o.p99Ms === undefined && o.histogram === undefined) {
    f.error(at, 'needs `p99Ms` (the healthy p99 in ms) or `histogram` (a file to measure it from)');
  }
  if (histogram !== undefined) p99Ms = histogram.distribution.p99;
  const recorder = f.record(o, 'recorder', at);
  if (recorder !== undefined)
    f.unknownKeys(recorder, [...at, 'recorder'], ['windowMs', 'minSamples', 'relativeAccuracy']);
  const backoff = f.record(o, 'backoff', at);
  if (backoff !== undefined) f.unknownKeys(backoff, [...at, 'backoff'], ['baseMs', 'capMs']);
  const options: DependencyOptions = compact({
    // Placeholders keep the library's own checks running (every problem in one pass) without
    // repeating the problems already reported for these two keys.
    name: name ?? 'unnamed',
    p99Ms: p99Ms ?? 1,
    attempts: f.number(o, 'attempts', at),
    slack: f.number(o, 'slack', at),
    forceSlack: f.boolean(o, 'forceSlack', at),
    connectCapMs: f.number(o, 'connectCapMs', at, { unit: 'ms' }),
    overheadMs: f.number(o, 'overheadMs', at, { unit: 'ms' }),
    defaultDeadlineMs: f.number(o, 'defaultDeadlineMs', at, { unit: 'ms' }),
    retryBudget: readRetryBudget(f, o, at),
    hedge: readHedge(f, o, at),
    recorder: recorder as DependencyOptions['recorder'],
    backoff: backoff as DependencyOptions['backoff'],
    retryResponseTimeout: f.boolean(o, 'retryResponseTimeout', at),
  });
  const pool = readPool(f, o, at);
  // The library validates the rest (ranges, slack band, hedge and budget bounds) exactly as at runtime;
  // its problems at a key already reported are dropped.
  const library: RawProblem[] = [];
  const built = fold(library, at, () => createDependency(options));
  const seen = new Set(f.problems.slice(before).map((p) => p.path.join('\0')));
  f.problems.push(...library.filter((p) => !seen.has(p.path.join('\0'))));
  if (built === undefined || f.problems.slice(before).some((p) => p.severity === 'error')) return undefined;
  const calibration = built.timeouts;
  if (calibration.warning !== null) {
    const where = o.defaultDeadlineMs !== undefined ? 'defaultDeadlineMs' : 'attempts';
    if (calibration.feasible) f.warning([...at, where], calibration.warning);
    else f.error([...at, where], calibration.warning);
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
