import type { LatencySnapshot } from '../latency/types.js';
import { readOptions } from '../options/validator.js';
import { type DriftResult, judge } from './drift.js';
import { checkWindow, DRIFT_MONITOR_OPTIONS, type DriftMonitorOptions } from './options.js';

export type { DriftMonitorOptions } from './options.js';

/**
 * The continuous side of the drift check (SPEC V1): fed every closed window (a recorder's `onWindow`),
 * it judges the configured timeout against it and raises an alarm when the verdict *changes* to a
 * non-ok status — an alarm that repeats every 10 s is an alarm someone mutes.
 */
export interface DriftMonitor {
  observe(window: LatencySnapshot): DriftResult;
  /** The latest verdict. */
  last(): DriftResult | undefined;
}

export function createDriftMonitor(options: DriftMonitorOptions): DriftMonitor {
  const { timeoutMs, onChange, ...thresholds } = readOptions(
    'createDriftMonitor',
    DRIFT_MONITOR_OPTIONS,
    options,
  );
  let previousP99: number | undefined;
  let latest: DriftResult | undefined;
  let judged: DriftResult | undefined; // the last verdict with enough data: what a change is measured from
  return {
    observe(window) {
      checkWindow('DriftMonitor.observe', window);
      const result = judge(timeoutMs, window, previousP99, thresholds);
      latest = result;
      if (result.status === 'insufficient-data') return result;
      previousP99 = result.p99Ms;
      const before = judged;
      judged = result;
      if (before?.status !== result.status) onChange?.(result, before);
      return result;
    },
    last: () => latest,
  };
}
