import {
  createRetryBudget,
  isRetryBudget,
  type RetryBudget,
  type RetryBudgetOptions,
} from '../budget/budget.js';
import { calibrateTimeout, type TimeoutCalibration } from '../calibrate/timeout.js';
import type { Clock } from '../clock/clock.js';
import { systemClock } from '../clock/system.js';
import type { HeaderFormat } from '../deadline/deadline.js';
import { InvalidOptionsError } from '../errors/options.js';
import { HEDGE_DEFAULTS } from '../hedge/constants.js';
import { createHedgePolicy, type HedgeOptions, type HedgePolicy } from '../hedge/policy.js';
import { createLatencyRecorder, type LatencyRecorderOptions } from '../latency/recorder.js';
import type { LatencySource } from '../latency/types.js';
import { OptionsValidator } from '../options/validator.js';
import type { RandomSource } from '../retry/backoff.js';
import { classifyFailure } from '../retry/classify.js';
import { BACKOFF_DEFAULTS, BACKOFF_LIMITS } from '../retry/constants.js';
import { DEPENDENCY_DEFAULTS, DEPENDENCY_LIMITS } from './constants.js';
import type { DependencyCore, ErrorClassifier } from './core.js';
import { Listeners } from './events.js';

export interface DependencyOptions {
  /** The dependency's name, in errors, events and metrics. 1–100 characters. Required. */
  readonly name: string;
  /** Its healthy p99 in ms, from a histogram (SPEC C1). Required; (0, 86400000]. */
  readonly p99Ms: number;
  /** Attempts per call, the original included. Default 2; integer [1, 10]. Hedges are extra. */
  readonly attempts?: number;
  /** Response timeout = `ceil(p99Ms × slack)` (SPEC C1). Default 1.4; [1.3, 1.5] (see `calibrateTimeout`). */
  readonly slack?: number;
  /** Accept a slack in [1, 3]. Default false. */
  readonly forceSlack?: boolean;
  /** Cap of the connect timeout, in ms (SPEC C2). Default 400; (0, 60000]. */
  readonly connectCapMs?: number;
  /** Overhead reserved per attempt when fitting attempts in the default deadline, in ms. Default 30. */
  readonly overheadMs?: number;
  /** Deadline of a call with no `deadline` and no ambient one, in ms. Default 2000; (0, 2^31-1]. */
  readonly defaultDeadlineMs?: number;
  /** A budget shared with other dependencies, or options for this one's own (SPEC R1). Default: 10 s, 10%, 3/s. */
  readonly retryBudget?: RetryBudget | RetryBudgetOptions;
  /** Hedged requests (SPEC H1–H3): `true` for the defaults, options, or false/undefined for none. */
  readonly hedge?: boolean | HedgeOptions;
  /** Latency source to record into and to hedge from, or options for this dependency's own recorder. */
  readonly recorder?: LatencySource | LatencyRecorderOptions;
  /** Full-jitter backoff: first ceiling and largest ceiling, in ms. Defaults 25 and 1000; [0, 60000]. */
  readonly backoff?: { readonly baseMs?: number; readonly capMs?: number };
  /** Retry response timeouts of idempotent calls by default (SPEC R4). Default false. */
  readonly retryResponseTimeout?: boolean;
  /** Classifies thrown errors (gRPC, database drivers...). Default `classifyFailure`. */
  readonly classifyError?: ErrorClassifier;
  /** Which deadline headers each attempt carries. Default `x-deadline-epoch-ms` only. */
  readonly headerFormat?: HeaderFormat;
  /** Uniform [0, 1) numbers for jitter. Default `Math.random`; inject one for deterministic tests. */
  readonly random?: RandomSource;
  readonly clock?: Clock;
}

const isSource = (x: unknown): x is LatencySource =>
  typeof x === 'object' && x !== null && typeof (x as LatencySource).record === 'function';

/** Runs a sub-constructor, folding its InvalidOptionsError problems into `v` under a prefix. */
function nested<R>(v: OptionsValidator, prefix: string, build: () => R): R | undefined {
  try {
    return build();
  } catch (error) {
    if (!(error instanceof InvalidOptionsError)) throw error;
    for (const p of error.problems) v.problem(`${prefix}: ${p}`);
    return undefined;
  }
}

/** Validates every option (all problems reported together) and builds what the executions share. */
export function resolveDependency(options: DependencyOptions): {
  core: DependencyCore;
  timeouts: TimeoutCalibration;
} {
  const o = (options ?? {}) as Partial<DependencyOptions>;
  const v = new OptionsValidator('createDependency');
  const L = DEPENDENCY_LIMITS;
  const name = v.string('name', o.name, '', {
    test: (s) => s.length <= L.maxNameLength,
    describe: `a string of 1 to ${L.maxNameLength} characters`,
  });
  if (o.name === undefined) v.problem('`name` is required');
  if (o.p99Ms === undefined) v.problem('`p99Ms` is required (the healthy p99 in ms, from a histogram)');
  const p99Ms = v.number('p99Ms', o.p99Ms, { default: 1, min: 0, exclusiveMin: true, max: L.maxP99Ms });
  const defaultDeadlineMs = v.number('defaultDeadlineMs', o.defaultDeadlineMs, {
    default: DEPENDENCY_DEFAULTS.defaultDeadlineMs,
    min: 0,
    exclusiveMin: true,
    max: L.maxDeadlineMs,
  });
  const backoff = {
    baseMs: v.number('backoff.baseMs', o.backoff?.baseMs, {
      default: BACKOFF_DEFAULTS.baseMs,
      min: 0,
      max: BACKOFF_LIMITS.maxMs,
    }),
    capMs: v.number('backoff.capMs', o.backoff?.capMs, {
      default: BACKOFF_DEFAULTS.capMs,
      min: 0,
      max: BACKOFF_LIMITS.maxMs,
    }),
  };
  const retryResponseTimeout = v.boolean('retryResponseTimeout', o.retryResponseTimeout, false);
  const clock = o.clock ?? systemClock;
  for (const [key, fn] of [
    ['random', o.random],
    ['classifyError', o.classifyError],
  ] as const) {
    if (fn !== undefined && typeof fn !== 'function') v.problem(`\`${key}\` must be a function`);
  }
  const timeouts = nested(v, 'timeouts', () =>
    calibrateTimeout({
      p99Ms,
      userDeadlineMs: defaultDeadlineMs,
      attempts: o.attempts ?? DEPENDENCY_DEFAULTS.attempts,
      slack: o.slack,
      forceSlack: o.forceSlack,
      connectCapMs: o.connectCapMs,
      overheadMs: o.overheadMs,
    }),
  );
  const budget = isRetryBudget(o.retryBudget)
    ? o.retryBudget
    : nested(v, 'retryBudget', () => createRetryBudget({ clock, ...(o.retryBudget as RetryBudgetOptions) }));
  const recorder = isSource(o.recorder)
    ? o.recorder
    : nested(v, 'recorder', () =>
        createLatencyRecorder({ clock, ...(o.recorder as LatencyRecorderOptions) }),
      );
  let hedge: HedgePolicy | undefined;
  if (o.hedge !== undefined && o.hedge !== false && recorder !== undefined && timeouts !== undefined) {
    const given = o.hedge === true ? {} : o.hedge;
    // Default ceiling: the attempt timeout (a later hedge could not beat it), but never below the
    // floor, so a dependency with a tiny timeout gets a working policy instead of a contradiction.
    const floor = typeof given.minDelayMs === 'number' ? given.minDelayMs : HEDGE_DEFAULTS.minDelayMs;
    hedge = nested(v, 'hedge', () =>
      createHedgePolicy(recorder, { maxDelayMs: Math.max(timeouts.responseMs, floor), ...given }),
    );
  }
  v.done();
  const t = timeouts as TimeoutCalibration;
  const core: DependencyCore = {
    name,
    p99Ms,
    maxAttempts: o.attempts ?? DEPENDENCY_DEFAULTS.attempts,
    responseMs: t.responseMs,
    connectMs: t.connectMs,
    defaultDeadlineMs,
    clock,
    random: o.random ?? Math.random,
    backoff,
    budget: budget as RetryBudget,
    recorder: recorder as LatencySource,
    hedge,
    retryResponseTimeout,
    classifyError: o.classifyError ?? classifyFailure,
    headerFormat: o.headerFormat,
    events: new Listeners(),
  };
  return { core, timeouts: t };
}
