import { systemClock } from '../clock/system.js';
import { defineOptions, type OptionsOf, option } from '../options/declare.js';
import { readOptions } from '../options/validator.js';
import { budgetShapeProblem } from './parse.js';
import type { LatencyBudget } from './types.js';

/**
 * How often each component overruns its slice (SPEC B3), as a rate over a sliding window: a component
 * that keeps eating more than its slice means the design needs a cache, a queue, or a new SLO. The
 * window is a ring of 10 buckets advanced lazily on the clock (no timer), so an observation is O(1).
 */

/**
 * A parsed latency budget (`parseBudget(...).budget`), the one option both runners require: checked
 * whole, since a hand-built one with a NaN slice would run with a NaN deadline and never overrun.
 */
export const BUDGET_OPTION = option.required(
  option.value<LatencyBudget>(
    'a parsed LatencyBudget (from parseBudget: endpoint, totalSloMs, components of distinct name, kind, sliceMs)',
    (value) => budgetShapeProblem(value) === undefined,
  ),
);

/** Options of {@link createOverrunTracker}, declared once. */
export const OVERRUN_TRACKER_OPTIONS = defineOptions({
  /** The endpoint's latency budget. Required. */
  budget: BUDGET_OPTION,
  /** Sliding window over which overruns are counted, in ms. Default 60000; [100, 86400000]. */
  windowMs: option.number({ default: 60_000, unit: 'ms', min: 100, max: 86_400_000 }),
  /** Overruns / calls above which a component alarms (SPEC B3: "frequently"). Default 0.05; [0, 1]. */
  maxOverrunRate: option.number({ default: 0.05, min: 0, max: 1 }),
  /** Calls in the window before a component can alarm. Default 20; integer [1, 10^9]. */
  minCalls: option.integer({ default: 20, min: 1, max: 1e9 }),
  /** Where time comes from. Default: the system clock. */
  clock: option.clock(),
  /** Called when a component enters the alarm state. Must not throw. */
  onAlarm: option.fn<(overrun: ComponentOverrun) => void>(),
});

export type OverrunTrackerOptions = OptionsOf<typeof OVERRUN_TRACKER_OPTIONS>;

export interface ComponentOverrun {
  readonly name: string;
  readonly sliceMs: number;
  readonly calls: number;
  readonly overruns: number;
  /** overruns / calls in the window (0 without calls). */
  readonly rate: number;
  readonly alarm: boolean;
}

export interface OverrunTracker {
  /** Records one execution of `component`; returns true when it overran its slice. Unknown names, and an elapsed time that is not a number (NaN included), are ignored: false. */
  observe(component: string, elapsedMs: number): boolean;
  report(): ComponentOverrun[];
  alarms(): ComponentOverrun[];
}

const BUCKETS = 10;

export function createOverrunTracker(options: OverrunTrackerOptions): OverrunTracker {
  const o = readOptions('createOverrunTracker', OVERRUN_TRACKER_OPTIONS, options);
  const { windowMs, minCalls, onAlarm } = o;
  const maxRate = o.maxOverrunRate;
  const clock = o.clock ?? systemClock;
  const components = o.budget.components;
  const index = new Map(components.map((c, i) => [c.name, i]));
  const calls = components.map(() => new Float64Array(BUCKETS));
  const overruns = components.map(() => new Float64Array(BUCKETS));
  const totalCalls = new Float64Array(components.length);
  const totalOverruns = new Float64Array(components.length);
  const alarmed = components.map(() => false);
  const bucketMs = windowMs / BUCKETS;
  let head = Math.floor(clock.now() / bucketMs); // absolute bucket number of the newest bucket

  const advance = (): void => {
    const now = Math.floor(clock.now() / bucketMs);
    const steps = Math.min(BUCKETS, now - head);
    for (let s = 1; s <= steps; s += 1) {
      const slot = (((head + s) % BUCKETS) + BUCKETS) % BUCKETS;
      for (let i = 0; i < components.length; i += 1) {
        totalCalls[i]! -= calls[i]![slot]!;
        totalOverruns[i]! -= overruns[i]![slot]!;
        calls[i]![slot] = 0;
        overruns[i]![slot] = 0;
      }
    }
    if (now > head) head = now;
  };

  const isAlarm = (i: number): boolean =>
    totalCalls[i]! >= minCalls && totalOverruns[i]! > maxRate * totalCalls[i]!;
  const entry = (i: number): ComponentOverrun => {
    const c = components[i]!;
    const n = totalCalls[i]!;
    const o = totalOverruns[i]!;
    const rate = n > 0 ? o / n : 0;
    return Object.freeze({
      name: c.name,
      sliceMs: c.sliceMs,
      calls: n,
      overruns: o,
      rate,
      alarm: isAlarm(i),
    });
  };

  const report = (): ComponentOverrun[] => {
    advance();
    return components.map((_, i) => entry(i));
  };

  return {
    observe(component, elapsedMs) {
      const i = index.get(component);
      // NaN, or not a number at all ('5000' would compare as one): not a run, never an overrun
      if (i === undefined || typeof elapsedMs !== 'number' || Number.isNaN(elapsedMs)) return false;
      advance();
      const slot = ((head % BUCKETS) + BUCKETS) % BUCKETS;
      const over = elapsedMs > components[i]!.sliceMs;
      calls[i]![slot]! += 1;
      totalCalls[i]! += 1;
      if (over) {
        overruns[i]![slot]! += 1;
        totalOverruns[i]! += 1;
      }
      const alarm = isAlarm(i);
      const entering = alarm && !alarmed[i];
      alarmed[i] = alarm;
      // Once per entry, and never into the caller: the slice runner observes in a `finally`, where a
      // throw would replace the component's own result.
      if (entering && onAlarm !== undefined) {
        try {
          onAlarm(entry(i));
        } catch (error) {
          process.emitWarning(`prazo overrun tracker: onAlarm threw: ${String(error)}`, 'PrazoWarning');
        }
      }
      return over;
    },
    report,
    // Not `this.report()`: a method taken off the tracker (`const { alarms } = tracker`) still works.
    alarms: () => report().filter((e) => e.alarm),
  };
}
