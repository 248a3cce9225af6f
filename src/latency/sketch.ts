import { DDSketch } from '@datadog/sketches-js';

/**
 * The one place that knows which histogram library prazo uses: DDSketch (`@datadog/sketches-js`).
 *
 * Why DDSketch, measured on this project's machine (1M log-normal samples, median 40 ms, σ 0.8; see
 * `library-choice.test.ts` and docs/calibration.md):
 *
 * | library                          | record  | quantile | p99 error |
 * |----------------------------------|---------|----------|-----------|
 * | DDSketch, α = 1%                 | ~20 ns  | ~1.5 µs  | −0.2%     |
 * | hdr-histogram-js WASM, 3 digits  | ~24 ns  | ~9 µs    | 0.01%     |
 * | hdr-histogram-js pure JS, 3 dig. | ~86 ns  | ~10 µs   | 0.01%     |
 *
 * DDSketch records as fast as HDR's WASM build without its costs: the WASM build must be compiled
 * before first use (async, or ~14 ms blocking with `initWebAssemblySync`), and its histograms live
 * in WASM memory that the garbage collector never frees (`destroy()` by hand, or leak per dependency).
 * DDSketch is plain JS with no dependencies, takes fractional milliseconds as they come (HDR needs
 * integers: µs scaling), and its error is *relative* (every quantile within ±α of the truth) over any
 * range, which is the guarantee a timeout wants: a 1% error on a 40% slack is noise. HDR's finer
 * precision buys nothing here.
 *
 * Reuse instead of reallocation: {@link clearSketch} zeroes the bins in place, so after the first
 * windows have sized the store, recording never allocates.
 *
 * `Sketch` is prazo's own view of a DDSketch (the members used here), not the library's class: the
 * declarations prazo publishes then never import `@datadog/sketches-js`, whose types import
 * `protobufjs` (a consumer compiling with `skipLibCheck: false` failed on them, #26).
 */
export interface Sketch {
  /** Adds one value. */
  accept(value: number): void;
  /** The value at quantile `q` in [0, 1] (NaN-free only when `count` > 0). */
  getValueAtQuantile(q: number): number;
  count: number;
  sum: number;
  min: number;
  max: number;
  zeroCount: number;
  readonly store: { readonly bins: number[]; count: number };
}

export function createSketch(relativeAccuracy: number): Sketch {
  // Typed as prazo's view: this stops compiling if the library's class ever stops fitting it.
  return new DDSketch({ relativeAccuracy });
}

/** Empties a sketch in place, keeping its bins allocated (only public fields are touched). */
export function clearSketch(sketch: Sketch): void {
  sketch.store.bins.fill(0);
  sketch.store.count = 0;
  sketch.zeroCount = 0;
  sketch.count = 0;
  sketch.sum = 0;
  sketch.min = Number.POSITIVE_INFINITY;
  sketch.max = Number.NEGATIVE_INFINITY;
}

/** The value at quantile `q` in [0, 1], or `undefined` for an empty sketch. */
export function sketchQuantile(sketch: Sketch, q: number): number | undefined {
  if (sketch.count === 0) return undefined;
  const value = sketch.getValueAtQuantile(q);
  if (!Number.isFinite(value)) return undefined;
  // The bucket's representative may sit above the largest sample; never report beyond what was seen.
  return value > sketch.max ? sketch.max : value < sketch.min ? sketch.min : value;
}
