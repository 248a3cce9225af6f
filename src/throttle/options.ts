import { defineOptions, type OptionsOf, option } from '../options/declare.js';

/**
 * The options of a dependency's adaptive throttle (client-side admission control), declared once:
 * `createDependency`'s `throttle`, and `prazo.config.yaml`'s. Why these defaults (docs/throttling.md
 * has the arithmetic):
 *
 * - `k` 2 (Google SRE book, "Handling Overload"; Envoy's `admission_control` with a 50% success
 *   threshold is the same rule): nothing is refused while at least half of the attempts in the window
 *   are accepted, so a dependency failing 20% of its calls keeps all of its traffic and its retries
 *   (the retry budget governs those); refusals start where most of what is sent is wasted.
 * - `windowMs` 1000 in 10 buckets: the window sets both how fast a failure is seen and how fast it is
 *   forgotten. Once the dependency answers again the share of calls sent grows e-fold every
 *   `windowMs / k` (0.5 s): from the probe share back to every call in (windowMs / k) ×
 *   (1 + ln(1 / (1 − maxProbability))) ≈ 1.65 s. The SRE book's two minutes would keep a recovered
 *   dependency starved for minutes; Envoy's 30 s default for half a minute.
 * - `maxProbability` 0.9: whatever the failures, one call in ten is still sent. That probe share is
 *   what sees the dependency come back (a throttle that refuses everything never learns), and it
 *   bounds the added load on a dependency that is down to 10% of its normal traffic. (Envoy caps at
 *   0.8; the SRE formula alone approaches 1.)
 * - `minRequests` 10: with fewer requests than this in the window nothing is refused. One failure of a
 *   route that sends one call a second is not an overload, and a hung dependency behind a trickle of
 *   calls holds a trickle of connections (Little's law).
 */
export const THROTTLE_OPTIONS = defineOptions(
  {
    /**
     * How many attempts may be sent per accepted one before calls are refused: the probability of a
     * refusal is max(0, (requests − k × accepts) / (requests + 1)). Default 2; [1, 100].
     */
    k: option.number({ default: 2, min: 1, max: 100 }),
    /** The window requests and accepts are counted over, in ms. Default 1000; [100, 600000]. */
    windowMs: option.number({ default: 1_000, unit: 'ms', min: 100, max: 600_000 }),
    /** Buckets the window is cut into (old counts leave it a bucket at a time). Default 10; integer [2, 1000]. */
    buckets: option.integer({ default: 10, min: 2, max: 1_000 }),
    /**
     * The most a call is refused with, whatever the failures: 1 − this is the probe share, the calls
     * still sent to a dependency that fails them all. Default 0.9; [0, 0.999].
     */
    maxProbability: option.number({ default: 0.9, min: 0, max: 0.999 }),
    /** Requests the window needs before anything is refused. Default 10; integer [0, 1000000]. */
    minRequests: option.integer({ default: 10, min: 0, max: 1_000_000 }),
  },
  (o, report, { valid }) => {
    if (valid('windowMs', 'buckets') && o.windowMs / o.buckets < 1)
      report('buckets', `(${o.buckets}) must leave buckets of at least 1 ms in a window of ${o.windowMs} ms`);
  },
);

export type ThrottleOptions = OptionsOf<typeof THROTTLE_OPTIONS>;
