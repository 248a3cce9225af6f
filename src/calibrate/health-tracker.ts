import { readOptions } from '../options/validator.js';
import { assessWindow, type WindowStats, type WindowVerdict } from './health.js';
import {
  checkWindow,
  HEALTHY_WINDOW_TRACKER_OPTIONS,
  type HealthyWindowTrackerOptions,
  measuredP99,
} from './options.js';

export type { HealthyWindowTrackerOptions } from './options.js';

/**
 * Keeps the baseline the guard compares against (SPEC C4, X2): the median p99 of the last few healthy
 * windows. A degraded window never enters the baseline, so a slow incident cannot teach the guard
 * that slowness is normal; a median (not a mean) keeps one odd healthy window from moving it.
 * Wire it to a recorder: `createLatencyRecorder({ onWindow: (w) => tracker.observe(w) })`.
 */

export interface HealthyWindowTracker<W extends WindowStats> {
  /** Judges a closed window against the baseline, then lets it into the baseline when healthy. */
  observe(window: W): WindowVerdict;
  /** The most recent healthy window: the only kind calibration may use. */
  lastHealthy(): W | undefined;
  /** Median p99 of the recent healthy windows, in ms. */
  baselineP99(): number | undefined;
}

/**
 * The guard's baseline from healthy windows' p99s: their median (undefined for none). A median, not a
 * mean, so one odd window does not move it; the live tracker and fleet calibration both use it.
 */
export function baselineP99Of(p99s: readonly number[]): number | undefined {
  if (p99s.length === 0) return undefined;
  const sorted = [...p99s].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  // Halved before adding: (a + b) / 2 of two p99s near the largest double is Infinity, no baseline.
  return sorted.length % 2 === 1 ? sorted[mid]! : sorted[mid - 1]! / 2 + sorted[mid]! / 2;
}

export function createHealthyWindowTracker<W extends WindowStats>(
  options: HealthyWindowTrackerOptions = {},
): HealthyWindowTracker<W> {
  const { baselineWindows: size, ...thresholds } = readOptions(
    'createHealthyWindowTracker',
    HEALTHY_WINDOW_TRACKER_OPTIONS,
    options,
  );
  const p99s: number[] = [];
  let healthy: W | undefined;

  const baselineP99 = (): number | undefined => baselineP99Of(p99s);

  return {
    observe(window: W): WindowVerdict {
      checkWindow('HealthyWindowTracker.observe', window);
      const verdict = assessWindow(window, baselineP99(), thresholds);
      // Only a p99 the guard read as one enters the baseline: a -5 there made the median 0 (no baseline).
      const p99 = measuredP99(window.p99);
      if (verdict.health === 'healthy' && p99 !== undefined) {
        healthy = window;
        p99s.push(p99);
        if (p99s.length > size) p99s.shift();
      }
      return verdict;
    },
    lastHealthy: () => healthy,
    baselineP99,
  };
}
