import { MAX_TIMER_DELAY_MS } from '../clock/clock.js';
import { InvalidOptionsError } from '../errors/options.js';
import {
  type Check,
  defineOptions,
  isOptionsObject,
  type OptionsOf,
  option,
  pickOptions,
} from '../options/declare.js';
import { LABEL_NAME, METRIC_NAME, parseSelector } from './promql.js';
import { unitFromName } from './sources/prometheus.js';
import type { LatencyUnit } from './sources/types.js';

/**
 * The options of calibration (SPEC C1–C6), declared once each: timeouts from a p99, the
 * healthy-window guard, drift checks and the pool check. The executor (`createDependency`) and the
 * config file reuse the timeout ones as they are. The shapes these options carry are declared here
 * too — the window a check reads, the verdict a drift monitor's `onChange` is given — so the
 * declarations stay below the code that reads them (`health.ts`, `drift.ts` re-export them).
 */

/** `calibrateTimeout`'s input. */
export const CALIBRATE_TIMEOUT_OPTIONS = defineOptions({
  /** Healthy p99 of the dependency, end to end, in ms, from a histogram (never a mean). Required; [0, 86400000]. */
  p99Ms: option.number({ required: true, unit: 'ms', min: 0, max: 86_400_000 }),
  /**
   * How long the answer is still worth something to the caller, in ms: (0, 2^31-1]. Optional: a
   * dependency whose callers' deadline is not known yet (a new service, a library default) is
   * calibrated without a fit check — `attempts` is kept as asked, `warning` is null, `feasible` true.
   * Check again with the deadline once it is known; per call, the executor bounds each attempt by the
   * remaining deadline anyway (SPEC R6).
   */
  userDeadlineMs: option.number({ unit: 'ms', min: 0, exclusiveMin: true, max: MAX_TIMER_DELAY_MS }),
  /**
   * Attempts per call, the original included (SPEC C3: reduced, never the timeout, when they do not fit
   * the deadline). Default 2; integer [1, 10]. Hedges are extra.
   */
  attempts: option.integer({ default: 2, min: 1, max: 10 }),
  /**
   * Response timeout = `ceil(p99Ms × slack)` (SPEC C1): the slack absorbs the load difference between
   * the day of measurement and the day of the incident. Default 1.4; [1.3, 1.5], or [1, 3] with
   * `forceSlack` (below 1 the timeout would cut the p99 itself).
   */
  slack: option.number({ default: 1.4, min: 1.3, max: 1.5, widen: { when: 'forceSlack', min: 1, max: 3 } }),
  /** Accept a slack outside [1.3, 1.5] (still within [1, 3]). Default false. */
  forceSlack: option.boolean({ default: false }),
  /**
   * Cap of the connect timeout, in ms (SPEC C2): a connect failure means the instance is down.
   * Default 400; (0, 60000].
   */
  connectCapMs: option.number({ default: 400, unit: 'ms', min: 0, exclusiveMin: true, max: 60_000 }),
  /**
   * Network and serialization overhead reserved per attempt inside the deadline (SPEC C3), in ms.
   * Default 30; [0, 60000].
   */
  overheadMs: option.number({ default: 30, unit: 'ms', min: 0, max: 60_000 }),
});

export type CalibrateTimeoutInput = OptionsOf<typeof CALIBRATE_TIMEOUT_OPTIONS>;

/** The healthy-window guard's thresholds (SPEC C4): a window past any of them never calibrates. */
export const HEALTH_THRESHOLD_OPTIONS = defineOptions({
  /** Errors / calls above which a window is degraded (it has degradation built in). Default 0.02; [0, 1]. */
  maxErrorRate: option.number({ default: 0.02, min: 0, max: 1 }),
  /**
   * Timeouts / calls above which a window is degraded. Above 1% the success-only p99 is censored (the
   * slowest calls were cut and are missing from it). Default 0.01; [0, 1].
   */
  maxTimeoutRate: option.number({ default: 0.01, min: 0, max: 1 }),
  /** p99 / baseline p99 above which the p99 "jumped": a degraded window, not a new normal. Default 1.5; [1, 100]. */
  maxP99Jump: option.number({ default: 1.5, min: 1, max: 100 }),
  /** Calls a window needs to be judged at all (fewer: `insufficient`, never used). Default 100; integer [1, 10^9]. */
  minSamples: option.integer({ default: 100, min: 1, max: 1e9 }),
});

export type HealthThresholds = OptionsOf<typeof HEALTH_THRESHOLD_OPTIONS>;

/** `createHealthyWindowTracker`'s options: the guard's thresholds and the baseline's length. */
export const HEALTHY_WINDOW_TRACKER_OPTIONS = defineOptions({
  ...HEALTH_THRESHOLD_OPTIONS.specs,
  /** Healthy windows whose median p99 is the baseline. Default 6; integer [1, 100]. */
  baselineWindows: option.integer({ default: 6, min: 1, max: 100 }),
});

export type HealthyWindowTrackerOptions = OptionsOf<typeof HEALTHY_WINDOW_TRACKER_OPTIONS>;

/** `calibrateFromDistribution`'s options: the timeout inputs but the p99 (measured), and the guard's. */
export const CALIBRATE_FROM_DISTRIBUTION_OPTIONS = defineOptions({
  ...pickOptions(CALIBRATE_TIMEOUT_OPTIONS, [
    'userDeadlineMs',
    'attempts',
    'slack',
    'forceSlack',
    'connectCapMs',
    'overheadMs',
  ]).specs,
  ...HEALTH_THRESHOLD_OPTIONS.specs,
  /** p99 of known-healthy windows, for the jump check, in ms. (0, 86400000]. Default: none (rates only). */
  baselineP99Ms: option.number({ unit: 'ms', min: 0, exclusiveMin: true, max: 86_400_000 }),
});

export type CalibrateFromDistributionOptions = OptionsOf<typeof CALIBRATE_FROM_DISTRIBUTION_OPTIONS>;

const DRIFT_THRESHOLD_SPECS = {
  /** Abandonment (timeouts / calls) above which the timeout is too tight. Default 0.01; [0, 1]. */
  maxAbandonRate: option.number({ default: 0.01, min: 0, max: 1 }),
  /** Abandonment at or below which it is "about zero". Default 0.001; [0, 1], at most `maxAbandonRate`. */
  idleAbandonRate: option.number({ default: 0.001, min: 0, max: 1 }),
  /** Timeout / p99 above which an unused margin is idle (beyond the slack band). Default 2; [1, 100]. */
  idleMarginFactor: option.number({ default: 2, min: 1, max: 100 }),
  /** |p99 / previous p99 − 1| at or below which the p99 is stable. Default 0.2; [0, 10]. */
  stableTolerance: option.number({ default: 0.2, min: 0, max: 10 }),
  /** Calls a window needs for a verdict. Default 100; integer [1, 10^9]. */
  minSamples: option.integer({ default: 100, min: 1, max: 1e9 }),
};

const idleBelowMax: Check<Pick<typeof DRIFT_THRESHOLD_SPECS, 'idleAbandonRate' | 'maxAbandonRate'>> = (
  o,
  report,
  { valid },
) => {
  if (valid('idleAbandonRate', 'maxAbandonRate') && o.idleAbandonRate > o.maxAbandonRate) {
    report(
      'idleAbandonRate',
      `(${o.idleAbandonRate}) must not exceed \`maxAbandonRate\` (${o.maxAbandonRate})`,
    );
  }
};

/** The drift check's thresholds (SPEC C5, V1). */
export const DRIFT_THRESHOLD_OPTIONS = defineOptions(DRIFT_THRESHOLD_SPECS, idleBelowMax);

export type DriftThresholds = OptionsOf<typeof DRIFT_THRESHOLD_OPTIONS>;

/**
 * What the healthy-window guard and the drift check read of a window (SPEC C4, C5); a
 * `LatencySnapshot` fits, so does a parsed histogram file.
 */
export interface WindowStats {
  readonly count: number;
  readonly errors: number;
  readonly timeouts: number;
  /** p99 of successful calls, ms; undefined when there were none. */
  readonly p99: number | undefined;
}

const WINDOW_SHAPE = 'window stats ({ count, errors, timeouts, p99 })';

/**
 * Throws `InvalidOptionsError` unless `window` is an object: the guard, the drift check and their
 * trackers read its fields, and `null` or a number there is a caller's mistake, not a window.
 */
export function checkWindow(context: string, window: unknown): asserts window is WindowStats {
  if (!isOptionsObject(window)) {
    const got = window === null ? 'null' : Array.isArray(window) ? 'an array' : `a ${typeof window}`;
    throw new InvalidOptionsError(context, [`\`window\` must be ${WINDOW_SHAPE}, got ${got}`]);
  }
}

/**
 * A window's p99 when it is one: a finite number ≥ 0. NaN, ±Infinity and a negative number (a
 * subtraction gone wrong upstream) measure nothing: the window has no p99, rather than one that
 * turns into a "-20x margin", a 1 ms suggestion or a baseline of -5 ms.
 */
export const measuredP99 = (p99: unknown): number | undefined =>
  typeof p99 === 'number' && Number.isFinite(p99) && p99 >= 0 ? p99 : undefined;

/** The configured per-attempt response timeout a drift check judges. Required; (0, 2^31-1]. */
const TIMEOUT_MS = option.number({
  required: true,
  unit: 'ms',
  min: 0,
  exclusiveMin: true,
  max: MAX_TIMER_DELAY_MS,
});

/** `checkDrift`'s input: the thresholds, the timeout and the window to judge. */
export const CHECK_DRIFT_OPTIONS = defineOptions(
  {
    ...DRIFT_THRESHOLD_SPECS,
    /** The configured per-attempt response timeout, in ms. Required; (0, 2^31-1]. */
    timeoutMs: TIMEOUT_MS,
    /** The current window (a recorder's `lastWindow()`). Required. */
    window: option.required(option.matching<WindowStats>(WINDOW_SHAPE, (w) => isOptionsObject(w))),
    /** p99 of the window before, in ms, to judge stability. Default: stability is not required. */
    previousP99Ms: option.number({ unit: 'ms', min: 0 }),
  },
  idleBelowMax,
);

export type DriftInput = OptionsOf<typeof CHECK_DRIFT_OPTIONS>;

export type DriftStatus = 'ok' | 'too-tight' | 'idle-margin' | 'insufficient-data';

/** One drift verdict (SPEC C5): what `checkDrift` returns and a drift monitor's `onChange` is given. */
export interface DriftResult {
  readonly status: DriftStatus;
  /** Why, in one line (empty for `ok`). */
  readonly reason: string;
  readonly timeoutMs: number;
  readonly p99Ms: number | undefined;
  /** Timeouts / calls in the window. */
  readonly abandonRate: number;
  /** `ceil(p99 × 1.4)` when the status is too-tight or idle-margin. */
  readonly suggestedTimeoutMs: number | undefined;
}

/** `createDriftMonitor`'s options. */
export const DRIFT_MONITOR_OPTIONS = defineOptions(
  {
    ...DRIFT_THRESHOLD_SPECS,
    /** The configured per-attempt response timeout, in ms. Required; (0, 2^31-1]. */
    timeoutMs: TIMEOUT_MS,
    /**
     * Called when the status changes (including back to `ok`). A throw, or a rejected promise from an
     * async handler, is reported as a `PrazoWarning` and changes nothing else.
     */
    onChange: option.fn<(result: DriftResult, previous: DriftResult | undefined) => void>(),
  },
  idleBelowMax,
);

export type DriftMonitorOptions = OptionsOf<typeof DRIFT_MONITOR_OPTIONS>;

/** `checkPool`'s input (SPEC C6). */
export const POOL_CHECK_OPTIONS = defineOptions({
  /** Connections (or workers, or concurrency slots) in the pool. Required; integer [1, 10^6]. */
  poolSize: option.integer({ required: true, min: 1, max: 1e6 }),
  /** Arrival rate of calls into the pool, requests per second. Required; (0, 10^7]. */
  rps: option.number({ required: true, unit: 'req/s', min: 0, exclusiveMin: true, max: 1e7 }),
  /** The timeout that bounds how long one call holds a connection, in ms. Required; (0, 2^31-1]. */
  timeoutMs: TIMEOUT_MS,
});

export type PoolCheckInput = OptionsOf<typeof POOL_CHECK_OPTIONS>;

/**
 * Where one dependency's latency histogram lives in the fleet's Prometheus (SPEC X8): the
 * `histogram.prometheus` key of a dependency in `prazo.config.yaml`, read by `prazo calibrate
 * --prometheus`, `prazo rules` and the dashboard. Every key is optional: the default is the histogram
 * prazo/otel itself exports for the dependency.
 */
export const PROMETHEUS_SERIES_OPTIONS = defineOptions(
  {
    /**
     * The histogram's name, without `_bucket` (written with it, it is cut). Default: prazo/otel's
     * attempt-duration histogram under the naming scheme in use (`--naming`). At most 200 characters.
     */
    metric: option.string({
      maxLength: 200,
      pattern: {
        describe: 'a Prometheus metric name ([a-zA-Z_:][a-zA-Z0-9_:]*)',
        test: (v) => typeof v === 'string' && METRIC_NAME.test(v),
      },
    }),
    /**
     * PromQL label matchers of the dependency's series: `{job="orders", service="inventory"}` (the
     * braces may be left out). With prazo's own histogram the dependency's `prazo_dependency` matcher is
     * added unless the selector names that label. Default: none (prazo's: the dependency's name). At
     * most 4096 characters; `le` and `__name__` cannot be matched.
     */
    selector: option.string({ maxLength: 4096 }),
    /**
     * The label that says how each call ended: outcome words (`prazo_outcome`, `outcome`, `result`:
     * success/error/timeout) or a status (`http_response_status_code`, `grpc_code`: 5xx errors, 408/504
     * timeouts). The p99 is taken over successes, the rest feed the error and timeout rates (SPEC C4).
     * Default: `prazo_outcome` with prazo's histogram; none with another (every call counts as a
     * success: only the p99 jump and the sample count are judged).
     */
    outcomeLabel: option.string({
      maxLength: 200,
      pattern: {
        describe: 'a Prometheus label name ([a-zA-Z_][a-zA-Z0-9_]*)',
        test: (v) => typeof v === 'string' && LABEL_NAME.test(v),
      },
    }),
    /** Unit of the buckets' `le`. Default: from the metric's name (`_seconds`...), `s` for prazo's. */
    unit: option.oneOf<LatencyUnit, object>(['s', 'ms', 'us']),
  },
  (values, report, { valid }) => {
    if (values.selector !== undefined && valid('selector')) {
      const read = parseSelector(values.selector);
      if ('problem' in read) report('selector', `is not PromQL label matchers: ${read.problem}`);
    }
    if (values.metric !== undefined && values.unit === undefined && valid('metric')) {
      if (unitFromName(values.metric.replace(/_bucket$/, '')) === undefined) {
        report('unit', `cannot tell the unit of ${values.metric} from its name: give \`unit\` (s, ms or us)`);
      }
    }
  },
);

export type PrometheusSeries = OptionsOf<typeof PROMETHEUS_SERIES_OPTIONS>;

/** The longest window a fleet calibration reads: Prometheus keeps 15 days by default, long-term stores more. */
const MAX_WINDOW_MS = 400 * 86_400_000;

/**
 * The window a fleet calibration reads and its sub-windows (SPEC X8, C4): `windowMs` ending now (at
 * a multiple of `stepMs`), cut into `windowMs / stepMs` sub-windows, each judged by the healthy-window
 * guard on its own.
 */
export const FLEET_WINDOW_OPTIONS = defineOptions(
  {
    /** How far back to read, in ms. Default 604800000 (7 days); [1000, 400 days]. */
    windowMs: option.integer({ default: 7 * 86_400_000, unit: 'ms', min: 1_000, max: MAX_WINDOW_MS }),
    /**
     * One sub-window, in ms: each is judged on its own, and rates read over it (`[step]`). At least
     * twice the scrape interval. Default 3600000 (1 hour); [1000, 2678400000] (1 s to 31 days), at
     * most `windowMs`, and at most 10,000 sub-windows.
     */
    stepMs: option.integer({ default: 3_600_000, unit: 'ms', min: 1_000, max: 31 * 86_400_000 }),
    /** End of the window, epoch ms (rounded down to a multiple of `stepMs`). Default: now; [0, 8640000000000000]. */
    endEpochMs: option.number({ unit: 'ms', min: 0, max: 8.64e15 }),
  },
  (o, report, { valid }) => {
    if (!valid('windowMs', 'stepMs')) return;
    if (o.stepMs > o.windowMs)
      report('stepMs', `(${o.stepMs} ms) must not exceed \`windowMs\` (${o.windowMs} ms)`);
    else if (o.windowMs / o.stepMs > 10_000) {
      report(
        'stepMs',
        `makes ${Math.floor(o.windowMs / o.stepMs)} sub-windows; at most 10000 (a longer step)`,
      );
    }
  },
);

export type FleetWindowOptions = OptionsOf<typeof FLEET_WINDOW_OPTIONS>;
