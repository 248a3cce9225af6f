import { InvalidOptionsError } from '../errors/options.js';

/**
 * A seeded pseudo-random source (mulberry32): uniform numbers in [0, 1), the same sequence for the
 * same seed. prazo components that draw randomness (backoff jitter) take a `random` option; pass this
 * in tests so a run replays exactly. Not for anything security-related.
 *
 * The seed is any finite number. An integer seeds by its low 32 bits (`seed >>> 0`); a fraction by
 * all 64 bits of the number, so `seededRandom(Math.random())` and fast-check's doubles give distinct
 * sequences instead of all truncating to one. NaN, ±Infinity or a non-number throw INVALID_OPTIONS:
 * each would have been seed 0, silently.
 */
export function seededRandom(seed: number): () => number {
  if (typeof seed !== 'number' || !Number.isFinite(seed)) {
    throw new InvalidOptionsError('seededRandom', [
      `\`seed\` must be a finite number, got ${typeof seed === 'number' ? String(seed) : typeof seed}`,
    ]);
  }
  let state = Number.isInteger(seed) ? seed >>> 0 : fractionState(seed);
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

/** 32 bits from the 64 of a non-integer number: its two words, the low one multiplied in (golden ratio). */
function fractionState(seed: number): number {
  const view = new DataView(new ArrayBuffer(8));
  view.setFloat64(0, seed);
  return (view.getUint32(0) ^ Math.imul(view.getUint32(4), 0x9e3779b1)) >>> 0;
}
