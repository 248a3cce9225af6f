import { assessWindow, type ResolvedHealthThresholds } from '../calibrate/health.js';
import { type DependencyKind, implausibleP99, KIND_PROFILES } from '../calibrate/kinds.js';
import type { PrometheusSeries } from '../calibrate/options.js';
import {
  type ConcurrencySuggestion,
  checkPool,
  LITTLE_HEADROOM,
  suggestConcurrencyLimit,
} from '../calibrate/pool.js';
import { readLatencySource } from '../calibrate/sources/detect.js';
import { type LatencyDistribution, SourceError } from '../calibrate/sources/types.js';
import { calibrateTimeout, type TimeoutCalibration } from '../calibrate/timeout.js';
import type { DependencyOptions } from '../dependency/options.js';
import { hedgePlanOf } from '../hedge/options.js';
import type { OptionsOf } from '../options/declare.js';
import type { OptionsValidator } from '../options/validator.js';
import type { Path, RawProblem } from './problem.js';
import {
  DEPENDENCY_IN_FILE,
  type HISTOGRAM_IN_FILE,
  type MESH_IN_FILE,
  type STORE_IN_FILE,
} from './schema.js';

/**
 * One `dependencies` entry → the options of `createDependency` (SPEC C7: the timeouts live in the
 * file, not in code), plus what the file says about it: the calibration it yields, where its p99 came
 * from, and the pool it must not drain. The entry is read with the executor's own declaration (see
 * `schema.ts`), so what the file accepts, `createDependency` accepts, with the same calibration.
 */
export interface DependencyConfig {
  /** Ready for `createDependency({ ...options, clock })`. */
  readonly options: DependencyOptions;
  /** `calibrateTimeout` against the dependency's `defaultDeadlineMs` (what `createDependency` computes). */
  readonly calibration: TimeoutCalibration;
  /**
   * Where p99Ms came from: the file (a number written there, or, with {@link assumed}, the starting
   * value of its `kind`), or a histogram file.
   */
  readonly p99Source: 'config' | HistogramRef;
  /** The kind of call it is (`kind:`), when the file says. */
  readonly kind?: DependencyKind;
  /**
   * Set when nothing measured its p99 yet (SPEC C8): the entry gives a `kind` and no `p99Ms` or
   * histogram file, so `options.p99Ms` is the kind's starting value, and everything that shows it
   * says so (`prazo check` warns, prazo/otel marks the configured timeout, `prazo rules` alerts while
   * traffic flows). `prazo calibrate --write` replaces it with a measured one.
   */
  readonly assumed?: AssumedP99;
  /** `unusualP99: true`: a measured p99 outside its kind's plausible range is real. */
  readonly unusualP99?: true;
  readonly pool?: { readonly size: number; readonly rps: number };
  /**
   * Little's law on the concurrency limit (SPEC C6, X7), when the file gives the rate (`pool.rps`):
   * what a fixed limit should be at that rate and the p99, and the limit configured (a number,
   * `'adaptive'`, or absent). A fixed limit below the suggestion is warned about at `concurrencyLimit`.
   */
  readonly concurrency?: ConcurrencyCheck;
  /** Where it lives in the cluster, as the file gives it (`prazo export`, SPEC X10); false: not exported. */
  readonly mesh?: MeshPlacement | boolean;
  /**
   * `histogram.prometheus` as given: the dependency's series in the fleet's Prometheus (SPEC X8), for
   * `prazo calibrate --prometheus`, `prazo rules` and the dashboard. Absent: prazo/otel's own histogram.
   */
  readonly prometheus?: PrometheusSeries & { readonly baselineP99Ms?: number };
  /** The store it is (`store:`), for the store integrations' `…OptionsFrom(entry)`. */
  readonly store?: StoreConfig;
}

/** Little's law's suggestion for a dependency's concurrency limit, beside the limit it has. */
export interface ConcurrencyCheck extends ConcurrencySuggestion {
  /** `concurrencyLimit.maxInFlight`, `'adaptive'`, or undefined when the dependency has no limit. */
  readonly limit: number | 'adaptive' | undefined;
}

/** `store:` of a dependency, as given (defaults are the integration's). */
export type StoreConfig = OptionsOf<typeof STORE_IN_FILE>;

/** `mesh:` of a dependency, as given (defaults are applied by the export). */
export type MeshPlacement = OptionsOf<typeof MESH_IN_FILE>;

/** Reads a histogram file named in the config (paths relative to the config's directory). */
export type ReadText = (file: string) => string;

/** An assumed p99: the starting value of a kind of call, not a measurement. */
export interface AssumedP99 {
  readonly kind: DependencyKind;
  /** The kind's starting p99, in ms (docs/calibration.md: its published sources). */
  readonly p99Ms: number;
  /** How that value is made, in words. */
  readonly basis: string;
}

export interface HistogramRef {
  readonly file: string;
  readonly distribution: LatencyDistribution;
}

type Entry = OptionsOf<typeof DEPENDENCY_IN_FILE>;

/** What the file-only keys leave for the executor: `hedge.enabled: false` becomes `hedge: false`. */
function executorOptions(entry: Entry, p99Ms: number, assumed: boolean): DependencyOptions {
  const { histogram: _h, pool: _p, mesh: _m, store: _s, kind: _k, unusualP99: _u, hedge, ...rest } = entry;
  const options: Record<string, unknown> = { ...rest, p99Ms, ...(assumed ? { p99Assumed: true } : {}) };
  if (hedge !== undefined) {
    if (typeof hedge === 'boolean') options.hedge = hedge;
    else {
      const { enabled, ...settings } = hedge;
      options.hedge = enabled === false ? false : settings;
    }
  }
  for (const key of Object.keys(options)) if (options[key] === undefined) delete options[key];
  return Object.freeze(options) as DependencyOptions;
}

/**
 * A dependency's p99 from a histogram file (SPEC C1, C4). The window is judged by the healthy-window
 * guard first; a degraded one, or one whose p99 the histogram cannot bound, is refused at `histogram`.
 */
function readHistogram(
  v: OptionsValidator,
  h: OptionsOf<typeof HISTOGRAM_IN_FILE>,
  at: Path,
  readText: ReadText,
  thresholds: ResolvedHealthThresholds,
): HistogramRef | undefined {
  const { file: named, baselineP99Ms, prometheus: _fleet, ...source } = h;
  const file = (named ?? '').trim();
  let distribution: LatencyDistribution;
  try {
    distribution = readLatencySource(readText(file), source);
  } catch (error) {
    const why =
      error instanceof SourceError ? error.message : `cannot read ${file}: ${(error as Error).message}`;
    v.problem(`${file}: ${why}`, [...at, 'file']);
    return undefined;
  }
  if (!distribution.p99Bounded) {
    v.problem(
      `${file}: the p99 lies beyond the largest finite bucket; refusing to calibrate on it (SPEC C4)`,
      at,
    );
    return undefined;
  }
  const verdict = assessWindow(distribution, baselineP99Ms, thresholds);
  if (verdict.health !== 'healthy') {
    const why = `${verdict.health} window (${verdict.reasons.join('; ')})`;
    v.problem(`${file}: ${why}; refusing to calibrate on it (SPEC C4)`, at);
    return undefined;
  }
  return { file, distribution };
}

/** The keys whose values the timeouts are calibrated from: a bad one leaves nothing to calibrate. */
const CALIBRATION_KEYS: ReadonlySet<string> = new Set([
  'p99Ms',
  'kind',
  'unusualP99',
  'histogram',
  'attempts',
  'slack',
  'forceSlack',
  'connectCapMs',
  'overheadMs',
  'defaultDeadlineMs',
]);

/**
 * Reads one entry at `at`; problems go to `v` (errors) and `warnings`. Undefined when it has errors.
 *
 * Every problem of the entry is reported in one pass: an unknown key, or a bad value of a key the
 * timeouts do not depend on, does not hide the calibration's own problems (an infeasible deadline,
 * an implausible p99), as it did when the first problem ended the entry's checks (issue 27).
 */
export function readDependency(
  v: OptionsValidator,
  warnings: RawProblem[],
  raw: unknown,
  at: Path,
  readText: ReadText,
  thresholds: ResolvedHealthThresholds,
): DependencyConfig | undefined {
  const before = v.issues.length;
  const { name, kind, unusualP99 } = v.read(DEPENDENCY_IN_FILE, raw, at);
  // The entry's keys whose values failed (an unknown key fails nothing); the entry itself: ''.
  const failed = new Set(
    v.issues
      .slice(before)
      .filter((i) => !i.unknown)
      .map((i) => (i.path.length > at.length ? String(i.path[at.length]) : '')),
  );
  const clean = (...keys: string[]): boolean => !failed.has('') && keys.every((k) => !failed.has(k));
  const entry = { ...(raw as Entry), name }; // the name as read: trimmed
  if (!clean(...CALIBRATION_KEYS)) return undefined;
  const histogram =
    entry.histogram?.file === undefined
      ? undefined
      : readHistogram(v, entry.histogram, [...at, 'histogram'], readText, thresholds);
  const measured = histogram?.distribution.p99 ?? entry.p99Ms;
  const assumed: AssumedP99 | undefined =
    measured === undefined && entry.histogram?.file === undefined && kind !== undefined
      ? Object.freeze({ kind, p99Ms: KIND_PROFILES[kind].startingP99Ms, basis: KIND_PROFILES[kind].basis })
      : undefined;
  const p99Ms = measured ?? assumed?.p99Ms;
  if (p99Ms === undefined) return undefined;
  const warn = (key: string, message: string) =>
    warnings.push({ path: [...at, key], message, severity: 'warning' });
  if (measured !== undefined && !unusualP99) {
    // A p99 no network call has (0.13 "ms": a column in seconds read as ms) is refused, not used.
    const why = implausibleP99(measured, kind);
    if (why !== undefined) v.problem(why, [...at, histogram === undefined ? 'p99Ms' : 'histogram']);
  }
  if (assumed !== undefined) {
    warn(
      'kind',
      `p99 assumed: ${assumed.p99Ms} ms, the starting value of a ${assumed.kind} call (${assumed.basis}), not a measurement; ` +
        `measure it and write it here: \`prazo calibrate --histogram FILE --unit ms --config CONFIG --dependency ${name} --write\`, or \`--prometheus URL --write\` (docs/calibration.md)`,
    );
  }
  const options = executorOptions(entry, p99Ms, assumed !== undefined);
  // What createDependency computes, from the same inputs.
  const calibration = calibrateTimeout({
    p99Ms,
    userDeadlineMs: options.defaultDeadlineMs ?? DEPENDENCY_IN_FILE.defaults.defaultDeadlineMs,
    attempts: options.attempts,
    slack: options.slack,
    forceSlack: options.forceSlack,
    connectCapMs: options.connectCapMs,
    overheadMs: options.overheadMs,
  });
  if (calibration.warning !== null) {
    const where = entry.defaultDeadlineMs !== undefined ? 'defaultDeadlineMs' : 'attempts';
    if (calibration.feasible) warn(where, calibration.warning);
    else v.problem(calibration.warning, [...at, where]);
  }
  // The executor caps the hedge delay at the response timeout unless maxDelayMs is given: read as it
  // reads it (hedgePlanOf), a first attempt that times out before the earliest hedge gets none.
  const hedge = clean('hedge') ? hedgePlanOf(options.hedge, calibration.responseMs) : undefined;
  if (
    hedge !== undefined &&
    hedge.given.maxDelayMs === undefined &&
    calibration.responseMs < hedge.minDelayMs
  ) {
    v.problem(
      `the response timeout (${calibration.responseMs} ms) is below the hedge minDelayMs (${hedge.minDelayMs} ms): no hedge could be sent`,
      [...at, 'hedge'],
    );
  }
  const pool = clean('pool') ? (entry.pool as { size: number; rps: number } | undefined) : undefined;
  if (pool !== undefined) {
    const check = checkPool({ poolSize: pool.size, rps: pool.rps, timeoutMs: calibration.responseMs });
    if (check.warning !== null) warn('pool', check.warning);
  }
  const concurrency =
    pool === undefined || !clean('concurrencyLimit') ? undefined : concurrencyCheck(options, pool.rps, p99Ms);
  if (concurrency !== undefined && typeof concurrency.limit === 'number') {
    if (concurrency.limit < concurrency.suggested) warn('concurrencyLimit', littleWarning(concurrency));
    else if (pool !== undefined && concurrency.limit > pool.size) {
      // Past the pool's connections the limit admits calls that then queue for a connection: the
      // pool, not the limit, decides, and they wait instead of failing fast.
      warn(
        'concurrencyLimit',
        `limit ${concurrency.limit} is above the pool of ${pool.size}: ${concurrency.limit - pool.size} call(s) it admits would wait for a connection instead of failing fast; keep maxInFlight ≤ pool.size`,
      );
    }
  }
  if (v.issues.length > before) return undefined;
  const p99Source = histogram ?? 'config';
  const given = entry.mesh;
  const mesh = {
    ...(given === undefined
      ? {}
      : { mesh: typeof given === 'boolean' ? given : Object.freeze({ ...given }) }),
    ...(entry.store === undefined ? {} : { store: Object.freeze({ ...entry.store }) }),
  };
  const series = entry.histogram?.prometheus;
  const baseline = entry.histogram?.baselineP99Ms;
  const prometheus =
    series === undefined
      ? {}
      : {
          prometheus: Object.freeze({
            ...series,
            ...(baseline === undefined ? {} : { baselineP99Ms: baseline }),
          }),
        };
  const declared = {
    ...(kind === undefined ? {} : { kind }),
    ...(assumed === undefined ? {} : { assumed }),
    ...(unusualP99 ? { unusualP99: true as const } : {}),
  };
  return Object.freeze(
    pool === undefined
      ? { options, calibration, p99Source, ...declared, ...mesh, ...prometheus }
      : {
          options,
          calibration,
          p99Source,
          ...declared,
          pool,
          ...(concurrency === undefined ? {} : { concurrency }),
          ...mesh,
          ...prometheus,
        },
  );
}

function concurrencyCheck(
  options: DependencyOptions,
  rps: number,
  p99Ms: number,
): ConcurrencyCheck | undefined {
  const suggestion = suggestConcurrencyLimit(rps, p99Ms);
  if (suggestion === undefined) return undefined;
  const given = options.concurrencyLimit;
  const adaptive = given?.adaptive !== undefined && given.adaptive !== false;
  const limit = given === undefined ? undefined : adaptive ? 'adaptive' : given.maxInFlight;
  return Object.freeze({ ...suggestion, limit });
}

/** `200 rps × 0.120 s = 24 in flight at p99`: the arithmetic `prazo check` shows. */
export function littleArithmetic(c: ConcurrencySuggestion): string {
  const inFlight = Math.round(c.inFlightAtP99 * 100) / 100;
  return `${c.rps} rps × ${(c.p99Ms / 1000).toFixed(3)} s = ${inFlight} in flight at p99`;
}

function littleWarning(c: ConcurrencyCheck): string {
  return (
    `limit ${c.limit} is below Little's law: ${littleArithmetic(c)}; suggest ${c.suggested} ` +
    `(× ${LITTLE_HEADROOM} for bursts, retries and hedges): calls would be refused with CONCURRENCY_LIMITED while the dependency is healthy`
  );
}
