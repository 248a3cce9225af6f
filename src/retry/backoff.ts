import { defineOptions, option, type Resolved } from '../options/declare.js';

/**
 * Full-jitter exponential backoff (AWS Architecture Blog, "Exponential Backoff and Jitter"): a
 * uniformly random wait in [0, min(cap, base × 2^(retry−1))). Jitter spreads the retries of many
 * clients that failed together, so they do not come back in the same instant; "full" jitter spreads
 * them most and finishes the work soonest in the blog's measurements.
 */

/** A source of uniform numbers in [0, 1), like `Math.random`; injectable for deterministic tests. */
export type RandomSource = () => number;

/** Backoff ceilings (SPEC R6), declared once: the executor's `backoff` option and the config's. */
export const BACKOFF_OPTIONS = defineOptions({
  /** Ceiling of the first retry's wait, in ms (doubles per retry, full jitter below it). Default 25; [0, 60000]. */
  baseMs: option.number({ default: 25, unit: 'ms', min: 0, max: 60_000 }),
  /** Largest backoff ceiling, in ms. Default 1000; [0, 60000]. */
  capMs: option.number({ default: 1_000, unit: 'ms', min: 0, max: 60_000 }),
});

/** Resolved backoff ceilings, in ms. */
export type BackoffOptions = Resolved<(typeof BACKOFF_OPTIONS)['specs']>;

/**
 * The wait before retry number `retry` (1 = the first retry), in ms. A random source returning
 * something outside [0, 1) (NaN, 1, −0.5, −0) is clamped into it: never NaN or −0, never above the
 * ceiling.
 */
export function fullJitterMs(retry: number, options: BackoffOptions, random: RandomSource): number {
  const exponent = retry > 1 ? Math.min(retry - 1, 30) : 0;
  const ceiling = Math.min(options.capMs, options.baseMs * 2 ** exponent);
  const r = random();
  const u = r > 0 && r < 1 ? r : r >= 1 ? 1 - Number.EPSILON : 0;
  return ceiling > 0 ? u * ceiling : 0;
}
