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

/**
 * Calls `onChange` so that it cannot take the monitor's caller down: a throw is reported as a
 * warning, and so is a rejected promise — `async (r) => post(alerts, r)` is the natural handler, and
 * its rejection, unhandled, ended the process (Node's default) from inside a recorder's window close.
 */
function notify(
  onChange: (result: DriftResult, previous: DriftResult | undefined) => unknown,
  result: DriftResult,
  previous: DriftResult | undefined,
): void {
  const warn = (error: unknown): void =>
    process.emitWarning(`prazo drift monitor: onChange failed: ${String(error)}`, 'PrazoWarning');
  try {
    const returned: unknown = onChange(result, previous);
    if (returned instanceof Promise) returned.catch(warn);
  } catch (error) {
    warn(error);
  }
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
      if (before?.status !== result.status && onChange !== undefined) notify(onChange, result, before);
      return result;
    },
    last: () => latest,
  };
}
