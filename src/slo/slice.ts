import { systemClock } from '../clock/system.js';
import { currentDeadline, runWithDeadline } from '../deadline/ambient.js';
import { Deadline } from '../deadline/deadline.js';
import { InvalidOptionsError } from '../errors/options.js';
import { defineOptions, type OptionsOf, option } from '../options/declare.js';
import { didYouMean } from '../options/suggest.js';
import { readOptions } from '../options/validator.js';
import { BUDGET_OPTION, type OverrunTracker } from './overrun.js';

/**
 * The budget at run time (SPEC B2, B3). `deriveTimeouts` says what each component's slice is;
 * `createSliceRunner` makes the slice *the* deadline of the work done for that component: inside
 * `run('servico_estoque', fn)` the ambient deadline is `min(request deadline, now + slice)`, so every
 * prazo client called from `fn` fits its attempts into the slice (and fails fast when it cannot), and
 * the time the component really took is reported to the overrun tracker.
 */

/** Options of {@link createSliceRunner}, declared once. */
export const SLICE_RUNNER_OPTIONS = defineOptions({
  /** The endpoint's latency budget. Required. */
  budget: BUDGET_OPTION,
  /** Receives each run's elapsed time, to rate overruns per component (SPEC B3). Optional. */
  tracker: option.value<OverrunTracker>('an overrun tracker (with observe)', option.hasMethods('observe')),
  /** Where time comes from. Default: the system clock. */
  clock: option.clock(),
});

export type SliceRunnerOptions = OptionsOf<typeof SLICE_RUNNER_OPTIONS>;

export interface SliceRunner {
  /** The slice of `component`, in ms, or undefined for a name the budget does not have. */
  sliceMs(component: string): number | undefined;
  /**
   * Runs `fn` with the component's slice as the ambient deadline (never later than the request's own
   * deadline; with no ambient deadline, the endpoint's SLO from now bounds it). An unknown component
   * rejects with INVALID_OPTIONS (and the name it was likely meant to be): a typo must not silently run
   * without a budget.
   */
  run<T>(component: string, fn: () => Promise<T> | T): Promise<T>;
}

export function createSliceRunner(options: SliceRunnerOptions): SliceRunner {
  const { budget, tracker, ...o } = readOptions('createSliceRunner', SLICE_RUNNER_OPTIONS, options);
  const clock = o.clock ?? systemClock;
  const slices = new Map(budget.components.map((c) => [c.name, c.sliceMs]));

  return {
    sliceMs: (component) => slices.get(component),
    async run<T>(component: string, fn: () => Promise<T> | T): Promise<T> {
      const slice = slices.get(component);
      if (typeof fn !== 'function') {
        throw new InvalidOptionsError('SliceRunner.run', [
          `the work of \`${String(component)}\` must be a function, got ${typeof fn}`,
        ]);
      }
      if (slice === undefined) {
        const problem = `latency budget of ${budget.endpoint} has no component \`${component}\`${didYouMean(String(component), slices.keys())}`;
        throw new InvalidOptionsError('SliceRunner.run', [problem]);
      }
      const outer = currentDeadline() ?? Deadline.after(budget.totalSloMs, { clock });
      const started = clock.now();
      try {
        return await runWithDeadline(outer.slice(slice), fn);
      } finally {
        // Never into the caller: a throw here would replace the component's own result or error.
        try {
          tracker?.observe(component, clock.now() - started);
        } catch (error) {
          process.emitWarning(
            `prazo slice runner: the tracker's observe threw: ${String(error)}`,
            'PrazoWarning',
          );
        }
      }
    },
  };
}
