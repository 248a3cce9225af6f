import { OptionsValidator } from '../options/validator.js';
import { CALIBRATION_DEFAULTS, CALIBRATION_LIMITS, DRIFT_DEFAULTS } from './constants.js';
import type { WindowStats } from './health.js';
import { slackedTimeoutMs } from './timeout.js';

/**
 * Drift check (SPEC C5, V1): a calibration is a hypothesis, and latency moves under it (deploys,
 * growth, a degrading index). Compare each configured timeout with the current p99 and abandonment:
 * - `too-tight`: the timeout is below the measured p99 (it cuts healthy traffic by construction), or
 *   more than 1% of calls are abandoned at the timeout;
 * - `idle-margin`: about 0% abandoned, the p99 stable, and the timeout far above it (beyond the slack
 *   band): margin that can go back to the endpoint's latency budget;
 * - `ok`; or `insufficient-data` when the window is too small to say anything.
 * Each non-ok verdict suggests `ceil(p99 × 1.4)` — from a healthy window only (SPEC C4: check the
 * window with the guard first).
 */

export type DriftStatus = 'ok' | 'too-tight' | 'idle-margin' | 'insufficient-data';

export interface DriftThresholds {
  /** Abandonment above which the timeout is too tight. Default 0.01; [0, 1]. */
  readonly maxAbandonRate?: number;
  /** Abandonment at or below which it is "about zero". Default 0.001; [0, 1]. */
  readonly idleAbandonRate?: number;
  /** Timeout / p99 above which an unused margin is idle. Default 2; [1, 100]. */
  readonly idleMarginFactor?: number;
  /** |p99 / previous − 1| at or below which the p99 is stable. Default 0.2; [0, 10]. */
  readonly stableTolerance?: number;
  /** Calls a window needs for a verdict. Default 100; integer [1, 10^9]. */
  readonly minSamples?: number;
}

export interface DriftInput extends DriftThresholds {
  /** The configured per-attempt response timeout, in ms. (0, 2^31-1]. */
  readonly timeoutMs: number;
  /** The current window (a recorder's `lastWindow()`). */
  readonly window: WindowStats;
  /** p99 of the window before, to judge stability (omit: stability is not required). */
  readonly previousP99Ms?: number;
}

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

export type ResolvedDriftThresholds = Required<DriftThresholds>;

export function resolveDriftThresholds(
  t: DriftThresholds = {},
  context = 'checkDrift',
): ResolvedDriftThresholds {
  const v = new OptionsValidator(context);
  const D = DRIFT_DEFAULTS;
  const out = {
    maxAbandonRate: v.number('maxAbandonRate', t.maxAbandonRate, {
      default: D.maxAbandonRate,
      min: 0,
      max: 1,
    }),
    idleAbandonRate: v.number('idleAbandonRate', t.idleAbandonRate, {
      default: D.idleAbandonRate,
      min: 0,
      max: 1,
    }),
    idleMarginFactor: v.number('idleMarginFactor', t.idleMarginFactor, {
      default: D.idleMarginFactor,
      min: 1,
      max: 100,
    }),
    stableTolerance: v.number('stableTolerance', t.stableTolerance, {
      default: D.stableTolerance,
      min: 0,
      max: 10,
    }),
    minSamples: v.number('minSamples', t.minSamples, {
      default: D.minSamples,
      min: 1,
      max: 1e9,
      integer: true,
    }),
  };
  if (out.idleAbandonRate > out.maxAbandonRate) {
    v.problem(
      `\`idleAbandonRate\` (${out.idleAbandonRate}) must not exceed \`maxAbandonRate\` (${out.maxAbandonRate})`,
    );
  }
  v.done();
  return Object.freeze(out);
}

const pct = (x: number): string => `${(x * 100).toFixed(2)}%`;

/** One drift verdict. Throws `InvalidOptionsError` only for a bad timeout or thresholds. */
export function checkDrift(input: DriftInput): DriftResult {
  const t = resolveDriftThresholds(input);
  const v = new OptionsValidator('checkDrift');
  const timeoutMs = requiredTimeout(v, input.timeoutMs);
  v.done();
  return judge(timeoutMs, input.window, input.previousP99Ms, t);
}

/** Reads the configured timeout: required, (0, 2^31-1] ms. */
export function requiredTimeout(v: OptionsValidator, value: unknown): number {
  if (value === undefined) v.problem('`timeoutMs` is required (the configured response timeout, in ms)');
  return v.number('timeoutMs', value, { default: 1, min: 0, exclusiveMin: true, max: 2 ** 31 - 1 });
}

/** The verdict with thresholds already resolved (the monitor's hot-ish path). */
export function judge(
  timeoutMs: number,
  window: WindowStats,
  previousP99Ms: number | undefined,
  t: ResolvedDriftThresholds,
): DriftResult {
  const count = Number.isFinite(window.count) && window.count > 0 ? window.count : 0;
  const timeouts = Number.isFinite(window.timeouts) && window.timeouts > 0 ? window.timeouts : 0;
  const abandonRate = count > 0 ? Math.min(1, timeouts / count) : 0;
  const p99Ms = window.p99 !== undefined && Number.isFinite(window.p99) ? window.p99 : undefined;
  const result = (status: DriftStatus, reason: string): DriftResult => {
    const suggest =
      (status === 'too-tight' || status === 'idle-margin') &&
      p99Ms !== undefined &&
      p99Ms <= CALIBRATION_LIMITS.maxP99Ms;
    const suggestedTimeoutMs = suggest ? slackedTimeoutMs(p99Ms, CALIBRATION_DEFAULTS.slack) : undefined;
    return Object.freeze({ status, reason, timeoutMs, p99Ms, abandonRate, suggestedTimeoutMs });
  };

  if (count < t.minSamples || p99Ms === undefined) {
    return result('insufficient-data', `${count} call(s) in the window, ${t.minSamples} needed`);
  }
  if (timeoutMs < p99Ms) {
    return result('too-tight', `timeout ${timeoutMs} ms is below the measured p99 ${round(p99Ms)} ms`);
  }
  if (abandonRate > t.maxAbandonRate) {
    return result(
      'too-tight',
      `${pct(abandonRate)} of calls abandoned at the timeout (limit ${pct(t.maxAbandonRate)})`,
    );
  }
  const prev =
    previousP99Ms !== undefined && previousP99Ms > 0 && Number.isFinite(previousP99Ms)
      ? previousP99Ms
      : undefined;
  const stable = prev === undefined || Math.abs(p99Ms / prev - 1) <= t.stableTolerance;
  if (abandonRate <= t.idleAbandonRate && stable && timeoutMs > p99Ms * t.idleMarginFactor) {
    return result(
      'idle-margin',
      `timeout ${timeoutMs} ms is ${(timeoutMs / p99Ms).toFixed(1)}x a stable p99 of ${round(p99Ms)} ms ` +
        `with ${pct(abandonRate)} abandoned: the margin can go back to the budget`,
    );
  }
  return result('ok', '');
}

const round = (ms: number): number => Math.round(ms * 10) / 10;
