import { type Clock, MAX_TIMER_DELAY_MS } from '../clock/clock.js';
import { thrownText } from '../errors/base.js';
import type { LatencySource } from '../latency/types.js';
import { OptionsValidator } from '../options/validator.js';
import { HEDGE_OPTIONS, type HedgeOptions, hedgePercentile } from './options.js';

export type { HedgeOptions } from './options.js';

/**
 * When to send a hedge (SPEC H1): after the dependency's *live* p95, so that only about 5% of the
 * calls get a second copy and the tail above p95 is cut by it. Firing at once would double traffic
 * for almost nothing (most calls finish fast); firing at a fixed delay goes stale as the dependency
 * changes. Three guards keep hedging from turning into load:
 * - no quantile, no hedge: until the recorder's window has enough samples, nothing is sent;
 * - `minDelayMs`: a floor, so a dependency answering in 1 ms is not hedged at 1 ms;
 * - `maxDelayMs`: a ceiling *above which there is no hedge*. A p95 that high means the dependency is
 *   slow as a whole (an incident, not one unlucky instance), and a copy would only add load to it.
 * Following Finagle's `BackupRequestFilter`, the percentile may be derived from the extra load one is
 * willing to pay: `percentile = 1 − maxExtraLoad`. What the hedges actually cost is bounded anyway by
 * the retry budget they draw from (SPEC H3), which the executor checks before sending one.
 *
 * **How much time a hedge needs left.** A first attempt or a retry is not made with less than the
 * dependency's p99 left (SPEC D4): it *is* the call, and one that cannot finish wastes the
 * dependency's work. A hedge is not the call: it races an attempt that has already run past the
 * hedge delay, and wins whenever it answers before the deadline. Requiring the p99 of it would forbid
 * nearly every hedge under the deadlines real chains send: a hop calling with a per-try timeout of
 * `1.4 × p99` leaves its callee `0.4 × p99` beyond the p99, so at the hedge delay (the p95) less than
 * the p99 is left, and the stalls of a slow instance, the very ones a hedge is for, would never be
 * hedged. The rule is the live `timeLeftPercentile` instead (the median by default): a copy with
 * the median left answers in time at least half the time a fresh call would, and one with less is
 * load with poor odds, not sent (the executor emits `hedge-skipped`).
 */

export interface HedgePolicy {
  /** The quantile in use. */
  readonly percentile: number;
  readonly minDelayMs: number;
  readonly maxDelayMs: number | undefined;
  /** The quantile of the latency a hedge needs left of the deadline to be sent. */
  readonly timeLeftPercentile: number;
  /** The delay after which to hedge now, in ms, or `undefined`: do not hedge. Cheap (cached quantile). */
  delayMs(now?: number, clock?: Clock): number | undefined;
  /** The time a hedge needs left of the deadline now, in ms (the live `timeLeftPercentile`), or `undefined`: do not hedge. */
  timeLeftMs(now?: number, clock?: Clock): number | undefined;
}

/** Validates hedge options (every problem reported together) and binds them to a latency source. */
export function createHedgePolicy(source: LatencySource, options: HedgeOptions = {}): HedgePolicy {
  const v = new OptionsValidator('createHedgePolicy');
  const o = v.read(HEDGE_OPTIONS, options);
  const { minDelayMs, maxDelayMs, timeLeftPercentile } = o;
  const percentile = hedgePercentile(o);
  try {
    if (typeof source?.quantile !== 'function') v.problem('a latency source with `quantile(q)` is required');
  } catch (error) {
    v.problem(`the latency source cannot be read: ${thrownText(error)}`);
  }
  v.done();
  // Without a ceiling, still none past what a timer honours: a caller's latency source may answer
  // days, and `setTimeout` fires a longer delay at once (Node reads it as 1 ms): every call hedged.
  const ceiling = maxDelayMs ?? MAX_TIMER_DELAY_MS;
  /**
   * The source's quantile `q` now, or `undefined` when it has none (or a broken one: a negative, NaN
   * or infinite latency, which as a delay would arm a hedge that never fires, and as the time a hedge
   * needs would refuse every hedge while saying there is a quantile).
   */
  let warned = false;
  const live = (q: number, now?: number, clock?: Clock): number | undefined => {
    let ms: unknown;
    try {
      ms = source.quantile(q, now, clock);
    } catch (error) {
      // A source of the caller's making that throws is no quantile: asked when a call starts or from
      // the hedge's timer, its throw would fail a call that needs no hedge, or escape from the timer.
      if (!warned) {
        warned = true;
        process.emitWarning(
          `prazo: the hedge's latency source threw: ${thrownText(error)}; no hedge`,
          'PrazoWarning',
        );
      }
      return undefined;
    }
    return typeof ms === 'number' && ms >= 0 && ms < Number.POSITIVE_INFINITY ? ms : undefined;
  };
  return Object.freeze({
    percentile,
    minDelayMs,
    maxDelayMs,
    timeLeftPercentile,
    delayMs(now?: number, clock?: Clock): number | undefined {
      const q = live(percentile, now, clock);
      if (q === undefined) return undefined;
      const delay = q > minDelayMs ? q : minDelayMs;
      return delay > ceiling ? undefined : delay;
    },
    timeLeftMs(now?: number, clock?: Clock): number | undefined {
      return live(timeLeftPercentile, now, clock);
    },
  });
}
