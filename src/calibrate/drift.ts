import { readOptions } from '../options/validator.js';
import {
  CALIBRATE_TIMEOUT_OPTIONS,
  CHECK_DRIFT_OPTIONS,
  DRIFT_THRESHOLD_OPTIONS,
  type DriftInput,
  type DriftResult,
  type DriftStatus,
  type DriftThresholds,
  measuredP99,
  type WindowStats,
} from './options.js';
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

export type { DriftInput, DriftResult, DriftStatus, DriftThresholds } from './options.js';

export type ResolvedDriftThresholds = Required<DriftThresholds>;

const { p99Ms: P99, slack: SLACK } = CALIBRATE_TIMEOUT_OPTIONS.specs;

export function resolveDriftThresholds(
  t: DriftThresholds = {},
  context = 'checkDrift',
): ResolvedDriftThresholds {
  return Object.freeze(readOptions(context, DRIFT_THRESHOLD_OPTIONS, t));
}

const pct = (x: number): string => `${(x * 100).toFixed(2)}%`;

/** One drift verdict. Throws `InvalidOptionsError` only for a bad timeout or thresholds. */
export function checkDrift(input: DriftInput): DriftResult {
  const { timeoutMs, window, previousP99Ms, ...thresholds } = readOptions(
    'checkDrift',
    CHECK_DRIFT_OPTIONS,
    input,
  );
  return judge(timeoutMs, window, previousP99Ms, thresholds);
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
  const p99Ms = measuredP99(window.p99);
  const result = (status: DriftStatus, reason: string): DriftResult => {
    const suggest =
      (status === 'too-tight' || status === 'idle-margin') && p99Ms !== undefined && p99Ms <= P99.max!;
    const suggestedTimeoutMs = suggest ? slackedTimeoutMs(p99Ms, SLACK.default) : undefined;
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
      `timeout ${timeoutMs} ms is ${times(timeoutMs, p99Ms)} a stable p99 of ${round(p99Ms)} ms ` +
        `with ${pct(abandonRate)} abandoned: the margin can go back to the budget`,
    );
  }
  return result('ok', '');
}

/** One decimal; a number too large to scale by 10 is shown as it is (never "Infinity ms"). */
const round = (ms: number): number => (Math.abs(ms) < 1e300 ? Math.round(ms * 10) / 10 : ms);

/** "5.0x", or "far above" when the p99 is 0 (a ratio would read "Infinityx"). */
const times = (timeoutMs: number, p99Ms: number): string =>
  p99Ms > 0 ? `${(timeoutMs / p99Ms).toFixed(1)}x` : 'far above';
