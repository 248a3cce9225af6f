import { createHealthyWindowTracker, type HealthyWindowTrackerOptions } from '../calibrate/health-tracker.js';
import type { LatencySnapshot } from '../latency/types.js';
import type { OptionsValidator } from '../options/validator.js';
import { HTTP_DEFAULTS } from './constants.js';

/**
 * Live calibration (SPEC X2, C4): the p99 a client plans with follows the dependency's *healthy*
 * measured p99, within operator bounds. Every closed recorder window is judged by the healthy-window
 * guard (error rate, timeout rate, p99 jump against the baseline); only healthy windows enter the
 * baseline (the median p99 of the last few), so an incident never teaches the client that slowness is
 * normal. A new p99 is adopted when the baseline, clamped to `[minP99Ms, maxP99Ms]`, moves more than
 * `changeRatio` away from the one in use; small wobbles change nothing.
 */

export interface LiveCalibrationOptions extends HealthyWindowTrackerOptions {
  /** Lowest p99 the client will plan with, in ms. Default `p99Ms / 2`; (0, 86400000]. */
  readonly minP99Ms?: number;
  /** Highest p99 the client will plan with, in ms. Default `p99Ms × 2`; (0, 86400000]. */
  readonly maxP99Ms?: number;
  /** Relative move of the healthy p99 that triggers a new plan. Default 0.1; [0, 10]. */
  readonly changeRatio?: number;
}

export interface LiveP99 {
  readonly minP99Ms: number;
  readonly maxP99Ms: number;
  /** Judges a closed window; returns the p99 to adopt now, or undefined to keep the current one. */
  observe(window: LatencySnapshot, currentP99Ms: number): number | undefined;
}

const MAX_P99_MS = 86_400_000;
/** How far from an assumed starting p99 live calibration may move by default: × or ÷ 20. */
const ASSUMED_SPREAD = 20;

/** Validates the options (problems prefixed `live.`, folded into the client's list by the caller). */
export function createLiveP99(
  initialP99Ms: number,
  options: LiveCalibrationOptions,
  v: OptionsValidator,
  assumed = false,
): LiveP99 {
  const o = options ?? {};
  const bound = { min: 0, exclusiveMin: true, max: MAX_P99_MS } as const;
  // An assumed p99 (SPEC C8: a kind's typical value) is a guess within an order of magnitude, not a
  // measurement to stay near: the default bounds let the first healthy window replace it.
  const spread = assumed ? ASSUMED_SPREAD : 2;
  const minP99Ms = v.number('live.minP99Ms', o.minP99Ms, { default: initialP99Ms / spread, ...bound });
  const maxP99Ms = v.number('live.maxP99Ms', o.maxP99Ms, {
    default: Math.min(MAX_P99_MS, initialP99Ms * spread),
    ...bound,
  });
  if (minP99Ms > maxP99Ms)
    v.problem(`\`live.minP99Ms\` (${minP99Ms}) must not exceed \`live.maxP99Ms\` (${maxP99Ms})`);
  const changeRatio = v.number('live.changeRatio', o.changeRatio, {
    default: HTTP_DEFAULTS.liveChangeRatio,
    min: 0,
    max: 10,
  });
  const { minP99Ms: _a, maxP99Ms: _b, changeRatio: _c, ...thresholds } = o;
  const tracker = v.absorb(() => createHealthyWindowTracker<LatencySnapshot>(thresholds), 'live: ');
  return {
    minP99Ms,
    maxP99Ms,
    observe(window, currentP99Ms) {
      if (tracker?.observe(window).health !== 'healthy') return undefined;
      const baseline = tracker.baselineP99();
      if (baseline === undefined || !(baseline > 0)) return undefined;
      const target = Math.min(maxP99Ms, Math.max(minP99Ms, baseline));
      return Math.abs(target - currentP99Ms) > changeRatio * currentP99Ms ? target : undefined;
    },
  };
}
