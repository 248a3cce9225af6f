import { performance } from 'node:perf_hooks';
import { DDSketch } from '@datadog/sketches-js';
import * as hdr from 'hdr-histogram-js';
import { describe, expect, it } from 'vitest';
import { exactQuantile, logNormal, mulberry32 } from './prng.test-helpers.js';

/**
 * The measurement behind the histogram choice (see `sketch.ts`): record cost, quantile cost and error
 * of DDSketch and hdr-histogram-js (pure JS and WASM) on the same log-normal samples. Timings are
 * printed, not asserted (2 shared cores); the stated errors are asserted.
 */
const N = 200_000;
const samples = logNormal(mulberry32(42), N, 40, 0.8);
const sorted = Float64Array.from(samples).sort();
const QS = [0.5, 0.95, 0.99, 0.999];

interface Candidate {
  readonly name: string;
  /** Stated relative error of a quantile. */
  readonly error: number;
  make(): unknown;
  record(h: unknown, ms: number): void;
  quantile(h: unknown, q: number): number;
}

const hdrBuild = (useWebAssembly: boolean) => () =>
  hdr.build({
    bitBucketSize: 32,
    lowestDiscernibleValue: 1,
    highestTrackableValue: 3_600_000_000,
    numberOfSignificantValueDigits: 3,
    autoResize: false,
    useWebAssembly,
  });
type Hdr = ReturnType<typeof hdr.build>;
const hdrOps = {
  // HDR stores integers: microseconds.
  record: (h: unknown, ms: number) => (h as Hdr).recordValue(Math.round(ms * 1000)),
  quantile: (h: unknown, q: number) => (h as Hdr).getValueAtPercentile(q * 100) / 1000,
};

const candidates: Candidate[] = [
  {
    name: 'DDSketch α=1%',
    error: 0.01,
    make: () => new DDSketch({ relativeAccuracy: 0.01 }),
    record: (h, ms) => (h as DDSketch).accept(ms),
    quantile: (h, q) => (h as DDSketch).getValueAtQuantile(q),
  },
  // 3 significant digits = 0.1% of the value, plus 1 µs of integer rounding.
  { name: 'HDR pure JS 3 digits', error: 0.001 + 0.001 / 40, make: hdrBuild(false), ...hdrOps },
  { name: 'HDR WASM 3 digits', error: 0.001 + 0.001 / 40, make: hdrBuild(true), ...hdrOps },
];

describe('histogram library choice (measured, see sketch.ts)', () => {
  it.each(candidates)('$name: record cost, quantile cost, error within the stated bound', (c) => {
    if (c.name.includes('WASM')) hdr.initWebAssemblySync();
    const warm = c.make();
    for (let i = 0; i < N; i += 1) c.record(warm, samples[i]!);
    const h = c.make();
    const t0 = performance.now();
    for (let i = 0; i < N; i += 1) c.record(h, samples[i]!);
    const recordNs = ((performance.now() - t0) * 1e6) / N;
    const t1 = performance.now();
    for (let i = 0; i < 500; i += 1) c.quantile(h, 0.99);
    const quantileUs = ((performance.now() - t1) * 1000) / 500;
    const errors = QS.map((q) => {
      const exact = exactQuantile(sorted, q);
      return Math.abs(c.quantile(h, q) - exact) / exact;
    });
    console.log(
      `${c.name}: record ${recordNs.toFixed(1)} ns, quantile ${quantileUs.toFixed(2)} µs, ` +
        `errors ${errors.map((e) => `${(e * 100).toFixed(3)}%`).join(' ')}`,
    );
    for (const e of errors) expect(e).toBeLessThanOrEqual(c.error);
    (h as { destroy?: () => void }).destroy?.();
    (warm as { destroy?: () => void }).destroy?.();
  });
});
