import type { Clock } from '../clock/clock.js';
import { systemClock } from '../clock/system.js';
import { defineOptions, type OptionsOf, option } from '../options/declare.js';
import { readOptions } from '../options/validator.js';
import type { LatencySnapshot } from './types.js';

/** The options of the latency recorder (SPEC C1, C4, H1), declared once. */
export const RECORDER_OPTIONS = defineOptions({
  /**
   * Length of a window, in ms: reads see the last full one, so a value is at most 2 windows old.
   * Default 10000; [10, 86400000].
   */
  windowMs: option.number({ default: 10_000, unit: 'ms', min: 10, max: 86_400_000 }),
  /**
   * Successful samples the last full window needs before `quantile` answers (below it: `undefined`,
   * and the caller falls back to its configured p99): a p99 from fewer than 100 samples is the
   * maximum of a handful of calls, not a percentile. Default 100; integer [1, 1000000].
   */
  minSamples: option.integer({ default: 100, min: 1, max: 1_000_000 }),
  /** Relative accuracy of every quantile (DDSketch α). Default 0.01 (±1%); [0.0001, 0.1]. */
  relativeAccuracy: option.number({ default: 0.01, min: 0.0001, max: 0.1 }),
  /** Time source. Default `systemClock`. */
  clock: option.clock(),
  /**
   * Called once per closed window that held samples, at the lazy rotation (inside a `record` or a
   * read): feed the healthy-window guard, drift checks, metrics. Must not throw (a throw is turned into
   * a process warning, never into a failed `record`).
   */
  onWindow: option.fn<(closed: LatencySnapshot) => void>(),
});

export type LatencyRecorderOptions = OptionsOf<typeof RECORDER_OPTIONS>;

export interface Settings {
  readonly windowMs: number;
  readonly minSamples: number;
  readonly relativeAccuracy: number;
  readonly clock: Clock;
  readonly onWindow: ((closed: LatencySnapshot) => void) | undefined;
}

export function resolveRecorderOptions(options: LatencyRecorderOptions | undefined): Settings {
  const o = readOptions('createLatencyRecorder', RECORDER_OPTIONS, options);
  return { ...o, clock: o.clock ?? systemClock };
}
