import type { LatencySnapshot } from '../latency/types.js';
import { OptionsValidator } from '../options/validator.js';
import {
  type DriftResult,
  type DriftThresholds,
  judge,
  requiredTimeout,
  resolveDriftThresholds,
} from './drift.js';

/**
 * The continuous side of the drift check (SPEC V1): fed every closed window (a recorder's `onWindow`),
 * it judges the configured timeout against it and raises an alarm when the verdict *changes* to a
 * non-ok status — an alarm that repeats every 10 s is an alarm someone mutes.
 */
export interface DriftMonitorOptions extends DriftThresholds {
  /** The configured response timeout, in ms. */
  readonly timeoutMs: number;
  /** Called when the status changes (including back to `ok`). Must not throw. */
  readonly onChange?: (result: DriftResult, previous: DriftResult | undefined) => void;
}

export interface DriftMonitor {
  observe(window: LatencySnapshot): DriftResult;
  /** The latest verdict. */
  last(): DriftResult | undefined;
}

export function createDriftMonitor(options: DriftMonitorOptions): DriftMonitor {
  const v = new OptionsValidator('createDriftMonitor');
  const timeoutMs = requiredTimeout(v, options.timeoutMs);
  if (options.onChange !== undefined && typeof options.onChange !== 'function')
    v.problem('`onChange` must be a function');
  v.done();
  const thresholds = resolveDriftThresholds(options, 'createDriftMonitor');
  let previousP99: number | undefined;
  let latest: DriftResult | undefined;
  let judged: DriftResult | undefined; // the last verdict with enough data: what a change is measured from
  return {
    observe(window) {
      const result = judge(timeoutMs, window, previousP99, thresholds);
      latest = result;
      if (result.status === 'insufficient-data') return result;
      previousP99 = result.p99Ms;
      const before = judged;
      judged = result;
      if (before?.status !== result.status) options.onChange?.(result, before);
      return result;
    },
    last: () => latest,
  };
}
