import type { Clock } from '../clock/clock.js';
import { systemClock } from '../clock/system.js';
import { OptionsValidator } from '../options/validator.js';
import { RECORDER_DEFAULTS, RECORDER_LIMITS } from './constants.js';
import type { LatencySnapshot } from './types.js';

export interface LatencyRecorderOptions {
  /** Length of a window, in ms. Default 10000; [10, 86400000]. */
  readonly windowMs?: number;
  /**
   * Successful samples the last full window needs before `quantile` answers (below it: `undefined`,
   * and the caller falls back to its configured p99). Default 100; integer [1, 1000000].
   */
  readonly minSamples?: number;
  /** Relative accuracy of every quantile (DDSketch α). Default 0.01 (±1%); [0.0001, 0.1]. */
  readonly relativeAccuracy?: number;
  /** Time source. Default `systemClock`. */
  readonly clock?: Clock;
  /**
   * Called once per closed window that held samples, at the lazy rotation (inside a `record` or a
   * read): feed the healthy-window guard, drift checks, metrics. Must not throw (a throw is turned into
   * a process warning, never into a failed `record`).
   */
  readonly onWindow?: (closed: LatencySnapshot) => void;
}

export interface Settings {
  readonly windowMs: number;
  readonly minSamples: number;
  readonly relativeAccuracy: number;
  readonly clock: Clock;
  readonly onWindow: ((closed: LatencySnapshot) => void) | undefined;
}

export function resolveRecorderOptions(options: LatencyRecorderOptions): Settings {
  const v = new OptionsValidator('createLatencyRecorder');
  const L = RECORDER_LIMITS;
  const D = RECORDER_DEFAULTS;
  const o = options ?? {};
  const windowMs = v.number('windowMs', o.windowMs, {
    default: D.windowMs,
    min: L.minWindowMs,
    max: L.maxWindowMs,
  });
  const minSamples = v.number('minSamples', o.minSamples, {
    default: D.minSamples,
    min: 1,
    max: L.maxMinSamples,
    integer: true,
  });
  const relativeAccuracy = v.number('relativeAccuracy', o.relativeAccuracy, {
    default: D.relativeAccuracy,
    min: L.minRelativeAccuracy,
    max: L.maxRelativeAccuracy,
  });
  if (o.clock !== undefined && typeof (o.clock as Partial<Clock>).now !== 'function') {
    v.problem('`clock` must implement Clock (now, epochNow, setTimer, clearTimer)');
  }
  if (o.onWindow !== undefined && typeof o.onWindow !== 'function')
    v.problem('`onWindow` must be a function');
  v.done();
  return { windowMs, minSamples, relativeAccuracy, clock: o.clock ?? systemClock, onWindow: o.onWindow };
}
