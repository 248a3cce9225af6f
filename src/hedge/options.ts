import { MAX_TIMER_DELAY_MS } from '../clock/clock.js';
import { defineOptions, type OptionsOf, option } from '../options/declare.js';

/** The options of hedged requests (SPEC H1–H3), declared once: the policy, the executor, the config. */
export const HEDGE_OPTIONS = defineOptions(
  {
    /**
     * The live latency quantile after which one copy is sent: only the slowest 5% get one by default.
     * Below p50 half the requests would be doubled (that is load balancing, not hedging). Default 0.95;
     * [0.5, 0.9999]. Exclusive with `maxExtraLoad`.
     */
    percentile: option.number({ default: 0.95, min: 0.5, max: 0.9999 }),
    /**
     * Extra load allowed: hedge after the `1 − maxExtraLoad` quantile (Finagle). No default;
     * [0.0001, 0.5], the `percentile` range read the other way (below 0.0001 the quantile would pass
     * p99.99, and at 1e-17 it reads as 1, which no latency source answers: never a hedge, silently).
     */
    maxExtraLoad: option.number({ min: 0.0001, max: 0.5 }),
    /**
     * Least delay before a hedge, in ms, whatever the quantile says (a 1 ms p95 would hedge everything
     * fast). Default 5; [0, 2^31-1].
     */
    minDelayMs: option.number({ default: 5, unit: 'ms', min: 0, max: MAX_TIMER_DELAY_MS }),
    /**
     * No hedge when the delay would exceed this, in ms; [0, 2^31-1], not below `minDelayMs`. Default: no
     * ceiling here but the longest delay a timer honours, 2^31-1 ms (the executor uses its attempt
     * timeout, a later hedge could not beat it).
     */
    maxDelayMs: option.number({ unit: 'ms', min: 0, max: MAX_TIMER_DELAY_MS }),
    /**
     * A hedge is sent only while the time left holds this live latency quantile of the dependency:
     * with the median left, the copy answers in time at least as often as not. Lower than the p99
     * that a first attempt or a retry needs (SPEC D4): the hedge does not replace the call, it races
     * an attempt already past the hedge delay, and under a deadline from upstream as tight as
     * `1.4 × p99` the p99 is never left by then (module doc of `policy.ts`). Default 0.5;
     * [0.5, 0.9999], not above `percentile`.
     */
    timeLeftPercentile: option.number({ default: 0.5, min: 0.5, max: 0.9999 }),
  },
  (o, report, { given, valid }) => {
    if (given.percentile !== undefined && given.maxExtraLoad !== undefined) {
      report('maxExtraLoad', 'and `percentile` are two ways to say the same thing: give one');
    }
    if (valid('timeLeftPercentile', 'percentile', 'maxExtraLoad')) {
      const hedgeAt = hedgePercentile(o);
      if (o.timeLeftPercentile > hedgeAt) {
        report(
          'timeLeftPercentile',
          `(${o.timeLeftPercentile}) must not be above the hedge's own percentile (${hedgeAt})`,
        );
      }
    }
    if (valid('maxDelayMs', 'minDelayMs') && o.maxDelayMs !== undefined && o.maxDelayMs < o.minDelayMs) {
      report('maxDelayMs', `(${o.maxDelayMs}) must not be below \`minDelayMs\` (${o.minDelayMs})`);
    }
  },
);

export type HedgeOptions = OptionsOf<typeof HEDGE_OPTIONS>;

/**
 * The quantile a hedge is sent after: `1 − maxExtraLoad` when given (Finagle), else `percentile`
 * (default 0.95). The difference is rounded to 15 significant digits, the decimal a double holds:
 * in binary `1 − 0.064` is 0.9359999999999999, which would refuse `timeLeftPercentile: 0.936` as
 * "above" the very same quantile, and show that number wherever the percentile is read.
 */
export function hedgePercentile(o: { readonly percentile?: number; readonly maxExtraLoad?: number }): number {
  if (o.maxExtraLoad !== undefined) return Number((1 - o.maxExtraLoad).toPrecision(15));
  return o.percentile ?? HEDGE_OPTIONS.defaults.percentile;
}

/** What a `hedge` option holds: on with the defaults (`true`), off (`false`), or its settings. */
export type HedgeToggle = boolean | HedgeOptions;

/** A `hedge` option read once: the settings as given, and what the executor, the config and the mesh derive from them. */
export interface HedgePlan {
  /** The settings as given (`true` reads as `{}`). */
  readonly given: HedgeOptions;
  /** The quantile a hedge is sent after ({@link hedgePercentile}). */
  readonly percentile: number;
  /** The least delay before a hedge, in ms (`minDelayMs`, default 5). */
  readonly minDelayMs: number;
  /**
   * No hedge later than this, in ms: `maxDelayMs` when given, else the attempt timeout (a later hedge
   * could not beat it), never below `minDelayMs` (so a dependency with a tiny timeout gets a policy, not
   * a contradiction: the config check tells its author that no hedge could be sent).
   */
  readonly maxDelayMs: number;
  /** The options the hedge policy is built with: the given ones, the ceiling resolved. */
  readonly options: HedgeOptions;
}

/**
 * Reads a `hedge` option (SPEC H1–H3) once for every reader — the executor building its policy, the
 * config check, the mesh export — so that what "on", the defaults and the delay's ceiling mean is
 * written here beside their declaration, not once per reader: `undefined` when the dependency does
 * not hedge (absent, `false`), else its plan against the dependency's attempt timeout (ms).
 */
export function hedgePlanOf(hedge: HedgeToggle | undefined, attemptTimeoutMs: number): HedgePlan | undefined {
  if (hedge === undefined || hedge === false) return undefined;
  const given: HedgeOptions = hedge === true ? {} : hedge;
  const minDelayMs = given.minDelayMs ?? HEDGE_OPTIONS.defaults.minDelayMs;
  const maxDelayMs = given.maxDelayMs ?? Math.max(attemptTimeoutMs, minDelayMs);
  return {
    given,
    percentile: hedgePercentile(given),
    minDelayMs,
    maxDelayMs,
    options: { ...given, maxDelayMs },
  };
}
