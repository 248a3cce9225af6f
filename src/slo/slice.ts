import type { Clock } from '../clock/clock.js';
import { systemClock } from '../clock/system.js';
import { currentDeadline, runWithDeadline } from '../deadline/ambient.js';
import { Deadline } from '../deadline/deadline.js';
import { OptionsValidator } from '../options/validator.js';
import type { OverrunTracker } from './overrun.js';
import type { LatencyBudget } from './types.js';

/**
 * The budget at run time (SPEC B2, B3). `deriveTimeouts` says what each component's slice is;
 * `createSliceRunner` makes the slice *the* deadline of the work done for that component: inside
 * `run('servico_estoque', fn)` the ambient deadline is `min(request deadline, now + slice)`, so every
 * prazo client called from `fn` fits its attempts into the slice (and fails fast when it cannot), and
 * the time the component really took is reported to the overrun tracker.
 */

export interface SliceRunnerOptions {
  readonly budget: LatencyBudget;
  /** Receives each run's elapsed time, to rate overruns per component (SPEC B3). Optional. */
  readonly tracker?: OverrunTracker;
  readonly clock?: Clock;
}

export interface SliceRunner {
  /** The slice of `component`, in ms, or undefined for a name the budget does not have. */
  sliceMs(component: string): number | undefined;
  /**
   * Runs `fn` with the component's slice as the ambient deadline (never later than the request's own
   * deadline; with no ambient deadline, the endpoint's SLO from now bounds it). Unknown components
   * throw a TypeError at once: a typo must not silently run without a budget.
   */
  run<T>(component: string, fn: () => Promise<T> | T): Promise<T>;
}

export function createSliceRunner(options: SliceRunnerOptions): SliceRunner {
  const v = new OptionsValidator('createSliceRunner');
  if (!Array.isArray(options?.budget?.components)) v.problem('`budget` is required (a parsed LatencyBudget)');
  v.done();
  const { budget, tracker } = options;
  const clock = options.clock ?? systemClock;
  const slices = new Map(budget.components.map((c) => [c.name, c.sliceMs]));

  return {
    sliceMs: (component) => slices.get(component),
    async run<T>(component: string, fn: () => Promise<T> | T): Promise<T> {
      const slice = slices.get(component);
      if (slice === undefined) {
        throw new TypeError(`latency budget of ${budget.endpoint} has no component \`${component}\``);
      }
      const outer = currentDeadline() ?? Deadline.after(budget.totalSloMs, { clock });
      const started = clock.now();
      try {
        return await runWithDeadline(outer.slice(slice), fn);
      } finally {
        tracker?.observe(component, clock.now() - started);
      }
    },
  };
}
