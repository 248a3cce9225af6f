import { defineOptions, type OptionsOf, option } from '../options/declare.js';

/**
 * The options of a dependency's concurrency limit (SPEC X7), declared once: the executor's
 * `concurrencyLimit`, and `prazo.config.yaml`'s.
 */

/**
 * The adaptive limit: a gradient controller in the manner of Netflix's concurrency-limits
 * (Gradient2) and Envoy's adaptive concurrency filter. Once per window, the window's mean RTT is
 * compared with the least RTT seen over the horizon: `gradient = clamp(tolerance × minRtt / rtt,
 * 0.5, 1)`, and the limit moves towards `limit × gradient + √limit` by `smoothing`. While latency stays
 * within `tolerance` of its minimum the limit grows by about `smoothing × √limit` a window (probing for
 * capacity); when latency rises the limit shrinks with it, so queueing moves out of the dependency
 * and into a fast local refusal. Why these defaults:
 *
 * - `initial` 20 (Netflix's): enough for most services at start, corrected within seconds.
 * - `min` 2: a limit of 1 serialises every call on one latency outlier; 2 keeps a call moving while
 *   another is slow. `max` 1000 (Envoy's): past it a limit protects nothing.
 * - `windowMs` 1000 with `minSamples` 10: a mean over fewer samples follows single outliers; a window
 *   with fewer samples than that is not judged (at low traffic, nothing needs limiting).
 * - `tolerance` 1.5 (Netflix's `rttTolerance`): a 50% rise in latency is noise, not queueing.
 * - `smoothing` 0.2 (Netflix's): a halved gradient cuts the limit by 10% a window, so one bad window
 *   does not halve it.
 * - `minRttHorizonMs` 60000 (Envoy measures its minRTT every 60 s): the minimum is forgotten over this
 *   horizon, so a dependency whose healthy latency really moved up is not throttled forever.
 * - The gradient is floored at 0.5 (both peers): one window can at most halve the target.
 * - The limit does not grow while fewer than half of it are in flight (the caller, not the
 *   dependency, is what limits the traffic then: growth would be unearned).
 */
export const ADAPTIVE_LIMIT_OPTIONS = defineOptions(
  {
    /**
     * The limit before the first judged window. Default 20, brought into [`min`, `max`] when those
     * are given (`{ max: 10 }` starts at 10); integer [1, 100000].
     */
    initial: option.integer({ default: 20, min: 1, max: 100_000 }),
    /** The least the limit falls to. Default 2; integer [1, 100000]. */
    min: option.integer({ default: 2, min: 1, max: 100_000 }),
    /** The most it grows to. Default 1000; integer [1, 100000]. */
    max: option.integer({ default: 1_000, min: 1, max: 100_000 }),
    /** Length of a window, in ms. Default 1000; [10, 600000]. */
    windowMs: option.number({ default: 1_000, unit: 'ms', min: 10, max: 600_000 }),
    /** Samples a window needs to be judged. Default 10; integer [1, 1000000]. */
    minSamples: option.integer({ default: 10, min: 1, max: 1_000_000 }),
    /** Rise of the RTT over its minimum taken as noise. Default 1.5; [1, 10]. */
    tolerance: option.number({ default: 1.5, min: 1, max: 10 }),
    /** How far one window moves the limit towards its target. Default 0.2; (0, 1]. */
    smoothing: option.number({ default: 0.2, min: 0, exclusiveMin: true, max: 1 }),
    /** The minimum RTT is the least over this horizon, in ms. Default 60000; [100, 86400000]. */
    minRttHorizonMs: option.number({ default: 60_000, unit: 'ms', min: 100, max: 86_400_000 }),
  },
  (o, report, { valid, given }) => {
    if (valid('min', 'max') && o.min > o.max) report('min', `(${o.min}) must not exceed \`max\` (${o.max})`);
    // Only an `initial` the caller gave: the default is brought into the range (gradientSettings).
    const initial = given.initial !== undefined;
    if (
      initial &&
      valid('initial', 'min', 'max') &&
      o.min <= o.max &&
      (o.initial < o.min || o.initial > o.max)
    ) {
      report('initial', `(${o.initial}) must lie in [\`min\`, \`max\`] = [${o.min}, ${o.max}]`);
    }
  },
);

export type AdaptiveLimitOptions = OptionsOf<typeof ADAPTIVE_LIMIT_OPTIONS>;

/**
 * `concurrencyLimit`: at most `maxInFlight` attempts in flight to the dependency (or an adaptive
 * limit), at most `maxQueue` calls waiting for a slot; past that a call fails at once with
 * CONCURRENCY_LIMITED, never sent. Give `maxInFlight` or `adaptive`.
 */
export const CONCURRENCY_LIMIT_OPTIONS = defineOptions(
  {
    /**
     * A fixed limit: attempts (retries and hedges included) in flight at once. By Little's law, the
     * rate you expect × the p99 in seconds, with room for bursts: `prazo check` suggests
     * ceil(`pool.rps` × p99 × 1.25) and warns about a limit below it. Integer [1, 100000].
     */
    maxInFlight: option.integer({ min: 1, max: 100_000 }),
    /** An adaptive limit that follows min RTT ÷ current RTT: `true` for the defaults, or options. */
    adaptive: option.toggle(ADAPTIVE_LIMIT_OPTIONS),
    /**
     * Calls that may wait for a slot; a waiting call gives up when its attempt would no longer fit
     * its deadline. Default: the limit (`maxInFlight`, or the adaptive `initial`), so a burst of twice
     * the limit is absorbed. Integer [0, 100000].
     */
    maxQueue: option.integer({ min: 0, max: 100_000 }),
    /**
     * Capacity-aware waiting (docs/throttling.md): an attempt that holds a slot is not cut at the
     * calibrated attempt timeout but waits up to the call's deadline, when a response timeout would
     * not be retried anyway (`retryResponseTimeout` false, the default: R4). The limit bounds how many
     * wait; past it calls fail at once. Against a uniformly slow dependency an attempt cut at
     * p99 × slack is pure loss (a retry meets the same slowness); the timeout's other job, keeping the
     * caller's connections free (Little's law), is done by the limit. Set `maxInFlight` to what the
     * caller's pool can give this dependency. Default false.
     */
    patience: option.boolean({ default: false }),
  },
  (o, report, { given }) => {
    const adaptive = given.adaptive !== undefined && given.adaptive !== false;
    if (o.maxInFlight !== undefined && adaptive) {
      report('adaptive', 'and `maxInFlight` exclude each other: a fixed limit, or an adaptive one');
    } else if (given.maxInFlight === undefined && !adaptive) {
      report([], 'needs `maxInFlight` (a fixed limit) or `adaptive` (true, or its options)');
    }
  },
);

export type ConcurrencyLimitOptions = OptionsOf<typeof CONCURRENCY_LIMIT_OPTIONS>;
