import { isOptionsObject } from '../options/declare.js';
import { checkCallOptions, readOptions } from '../options/validator.js';
import {
  checkWindow,
  HEALTH_THRESHOLD_OPTIONS,
  type HealthThresholds,
  measuredP99,
  type WindowStats,
} from './options.js';

export type { HealthThresholds, WindowStats } from './options.js';

/**
 * The healthy-window guard (SPEC C4). Calibrating on a window with degradation built in inflates the
 * p99 and yields a timeout that protects nothing, so every window is judged before it may feed a
 * calibration: its error rate, its timeout rate, and its p99 against a baseline of earlier healthy
 * windows. The guard only judges; refusing is the caller's move (`prazo calibrate` exits non-zero,
 * live calibration keeps its last healthy value).
 */

export type WindowHealth = 'healthy' | 'degraded' | 'insufficient';

export interface WindowVerdict {
  readonly health: WindowHealth;
  /** One line per failed check, naming the measured value and the threshold. Empty when healthy. */
  readonly reasons: readonly string[];
  readonly errorRate: number;
  readonly timeoutRate: number;
  /** p99 / baseline p99, when both are known. */
  readonly p99Jump: number | undefined;
}

export type ResolvedHealthThresholds = Required<HealthThresholds>;

/** Validates thresholds once (every problem listed); `context` names where they came from. */
export function resolveHealthThresholds(
  t: HealthThresholds = {},
  context = 'resolveHealthThresholds',
): ResolvedHealthThresholds {
  return Object.freeze(readOptions(context, HEALTH_THRESHOLD_OPTIONS, t));
}

/**
 * The thresholds `assessWindow` was given, checked: resolved ones (every key there, each valid) pass
 * without allocating; a partial or hand-made object is validated and completed with the defaults.
 * Read as they came, `{}` compared every rate with `undefined` and judged any window healthy.
 */
function thresholdsOf(t: unknown): ResolvedHealthThresholds {
  if (isOptionsObject(t) && HEALTH_THRESHOLD_OPTIONS.keys.every((k) => t[k] !== undefined)) {
    checkCallOptions('assessWindow', HEALTH_THRESHOLD_OPTIONS, t);
    return t as ResolvedHealthThresholds;
  }
  return readOptions('assessWindow', HEALTH_THRESHOLD_OPTIONS, t);
}

/** The reason of a window without a p99 (fleet calibration words it better when buckets are to blame). */
export const NO_SUCCESS_REASON = 'no successful call: no p99 to calibrate on';

const pct = (x: number): string => `${(x * 100).toFixed(x < 0.01 ? 2 : 1)}%`;
const rate = (part: number, whole: number): number => (whole > 0 && part > 0 ? Math.min(1, part / whole) : 0);
const finite = (x: number): number => (Number.isFinite(x) && x > 0 ? x : 0);

/**
 * Judges one window. `baselineP99Ms` is the p99 of known-healthy windows (omit it when there is none
 * yet: only the rates are checked). Never throws on odd numbers: NaN and negative counts count as 0, a
 * p99 that is not a finite number ≥ 0 as none. Throws `InvalidOptionsError` when `window` is not an
 * object or a threshold is invalid (missing ones take their defaults).
 */
export function assessWindow(
  window: WindowStats,
  baselineP99Ms: number | undefined,
  given: ResolvedHealthThresholds,
): WindowVerdict {
  checkWindow('assessWindow', window);
  const thresholds = thresholdsOf(given);
  const count = finite(window.count);
  const errorRate = rate(finite(window.errors), count);
  const timeoutRate = rate(finite(window.timeouts), count);
  const p99 = measuredP99(window.p99);
  const base =
    baselineP99Ms !== undefined && baselineP99Ms > 0 && Number.isFinite(baselineP99Ms)
      ? baselineP99Ms
      : undefined;
  const p99Jump = p99 !== undefined && base !== undefined ? p99 / base : undefined;

  if (count < thresholds.minSamples) {
    const reasons = [
      `only ${count} call(s) in the window, fewer than the ${thresholds.minSamples} needed to judge it`,
    ];
    return Object.freeze({ health: 'insufficient', reasons, errorRate, timeoutRate, p99Jump });
  }
  const reasons: string[] = [];
  if (errorRate > thresholds.maxErrorRate) {
    reasons.push(`error rate ${pct(errorRate)} above ${pct(thresholds.maxErrorRate)}`);
  }
  if (timeoutRate > thresholds.maxTimeoutRate) {
    reasons.push(`timeout rate ${pct(timeoutRate)} above ${pct(thresholds.maxTimeoutRate)}`);
  }
  if (p99 === undefined) reasons.push(NO_SUCCESS_REASON);
  if (p99Jump !== undefined && p99Jump > thresholds.maxP99Jump) {
    reasons.push(
      `p99 ${round(p99!)} ms is ${p99Jump.toFixed(2)}x the healthy baseline ${round(base!)} ms ` +
        `(limit ${thresholds.maxP99Jump}x)`,
    );
  }
  const health: WindowHealth = reasons.length === 0 ? 'healthy' : 'degraded';
  return Object.freeze({ health, reasons: Object.freeze(reasons), errorRate, timeoutRate, p99Jump });
}

/** One decimal; a number too large to scale by 10 is shown as it is (never "Infinity ms"). */
const round = (ms: number): number => (Math.abs(ms) < 1e300 ? Math.round(ms * 10) / 10 : ms);
