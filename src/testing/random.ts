/**
 * A seeded pseudo-random source (mulberry32): uniform numbers in [0, 1), the same sequence for the
 * same seed. prazo components that draw randomness (backoff jitter) take a `random` option; pass this
 * in tests so a run replays exactly. Not for anything security-related.
 */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}
