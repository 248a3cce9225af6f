/**
 * Seeded randomness for the supplier double, so a scenario's latencies are reproducible from its
 * seed (a run can be replayed and compared) without touching `Math.random`.
 */

/** mulberry32, shared with `prazo/testing`: uniform in [0, 1). */
export { seededRandom as createRandom } from '../testing/random.js';

/** A standard normal deviate (Box–Muller), from two uniforms. */
export function normal(random: () => number): number {
  const u = 1 - random(); // (0, 1]: log(0) never happens
  const v = random();
  return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * v);
}

/** A log-normal latency: `median × e^(σ·z)`, never below `minMs`. */
export function logNormal(random: () => number, medianMs: number, sigma: number, minMs: number): number {
  const value = medianMs * Math.exp(sigma * normal(random));
  return value < minMs ? minMs : value;
}

/** The p-quantile of a log-normal (z from a rational approximation of the normal's inverse CDF). */
export function logNormalQuantile(medianMs: number, sigma: number, p: number): number {
  return medianMs * Math.exp(sigma * normalQuantile(p));
}

/** Inverse CDF of the standard normal (Acklam's approximation, relative error < 1.2e-9). */
export function normalQuantile(p: number): number {
  if (!(p > 0 && p < 1)) return p <= 0 ? Number.NEGATIVE_INFINITY : Number.POSITIVE_INFINITY;
  const a = [
    -39.69683028665376, 220.9460984245205, -275.9285104469687, 138.357751867269, -30.66479806614716,
    2.506628277459239,
  ];
  const b = [
    -54.47609879822406, 161.5858368580409, -155.6989798598866, 66.80131188771972, -13.28068155288572,
  ];
  const c = [
    -0.007784894002430293, -0.3223964580411365, -2.400758277161838, -2.549732539343734, 4.374664141464968,
    2.938163982698783,
  ];
  const d = [0.007784695709041462, 0.3224671290700398, 2.445134137142996, 3.754408661907416];
  const tail = (q: number): number =>
    (((((c[0]! * q + c[1]!) * q + c[2]!) * q + c[3]!) * q + c[4]!) * q + c[5]!) /
    ((((d[0]! * q + d[1]!) * q + d[2]!) * q + d[3]!) * q + 1);
  if (p < 0.02425) return tail(Math.sqrt(-2 * Math.log(p)));
  if (p > 1 - 0.02425) return -tail(Math.sqrt(-2 * Math.log(1 - p)));
  const q = p - 0.5;
  const r = q * q;
  return (
    ((((((a[0]! * r + a[1]!) * r + a[2]!) * r + a[3]!) * r + a[4]!) * r + a[5]!) * q) /
    (((((b[0]! * r + b[1]!) * r + b[2]!) * r + b[3]!) * r + b[4]!) * r + 1)
  );
}
