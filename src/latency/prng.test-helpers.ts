/** Seeded random numbers for deterministic tests (prazo/testing's mulberry32), and heavy-tailed latency samples. */
export { seededRandom as mulberry32 } from '../testing/random.js';

/** Log-normal samples (Box–Muller): median `medianMs`, shape `sigma`. */
export function logNormal(
  random: () => number,
  count: number,
  medianMs: number,
  sigma: number,
): Float64Array {
  const out = new Float64Array(count);
  for (let i = 0; i < count; i += 1) {
    const u1 = random() || Number.MIN_VALUE;
    const z = Math.sqrt(-2 * Math.log(u1)) * Math.cos(2 * Math.PI * random());
    out[i] = medianMs * Math.exp(sigma * z);
  }
  return out;
}

/** Pareto samples: scale `minMs`, shape `alpha` (smaller alpha, heavier tail). */
export function pareto(random: () => number, count: number, minMs: number, alpha: number): Float64Array {
  const out = new Float64Array(count);
  for (let i = 0; i < count; i += 1) out[i] = minMs / (1 - random()) ** (1 / alpha);
  return out;
}

/** The exact quantile with DDSketch's rank convention: the sample of rank floor(q × (n − 1)). */
export function exactQuantile(sorted: Float64Array, q: number): number {
  return sorted[Math.floor(q * (sorted.length - 1))]!;
}
