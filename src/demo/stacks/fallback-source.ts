import type { LatencySnapshot, LatencySource, Outcome } from '../../latency/types.js';

/** Attempts of the live window before its failures say the dependency is failing as a whole. */
const FAILING_MIN_ATTEMPTS = 5;

/** Quantiles of the healthy calibration a hop's client knows: q → ms. */
export interface CalibratedQuantiles {
  readonly p50Ms?: number;
  readonly p95Ms: number;
  /** The quantile at `hedgePercentile` (the supplier's hedge delay). */
  readonly hedgeMs?: number;
  readonly hedgePercentile?: number;
  readonly p99Ms: number;
}

/**
 * A live latency source that answers with the calibrated quantiles until its own windows have
 * enough samples. prazo hedges after the dependency's *live* quantile (SPEC H1); a freshly started
 * process has no live window yet, and in a demo scenario of a few seconds the library's window
 * (10 s, at least 100 answers: a p95 of 20 answers is their 19th and hedges one call in ten, 8%
 * extra supplier load measured with 1 s windows) never fills. Falling back to the quantiles
 * measured in the healthy calibration is what a service restarting in production would do with its
 * last known distribution. Asked for a quantile it does not hold, it answers the next one above it
 * (never a shorter time than it knows): the median a hedge needs left falls back to the p95 in a
 * drill, whose configuration holds only a p99. And it stands in only while the dependency answers:
 * once most of the live window's attempts failed or timed out (a supplier down, hanging, slow as a
 * whole) it has no quantile, as the live recorder with no successes would have none, so nothing is
 * hedged into a dependency that is failing as a whole (H1's "no quantile, no hedge").
 */
export function withCalibratedFallback(live: LatencySource, calibrated: CalibratedQuantiles): LatencySource {
  const known: (readonly [number, number])[] = [];
  if (calibrated.p50Ms !== undefined) known.push([0.5, calibrated.p50Ms]);
  known.push([0.95, calibrated.p95Ms]);
  if (calibrated.hedgeMs !== undefined && calibrated.hedgePercentile !== undefined)
    known.push([calibrated.hedgePercentile, calibrated.hedgeMs]);
  known.sort((a, b) => a[0] - b[0]);
  const fallback = (q: number): number | undefined => {
    const w = live.currentWindow();
    if (w.count >= FAILING_MIN_ATTEMPTS && w.successes < w.errors + w.timeouts) return undefined;
    return known.find(([at]) => at >= q)?.[1] ?? calibrated.p99Ms;
  };
  return {
    record: (latencyMs: number, outcome: Outcome): void => live.record(latencyMs, outcome),
    quantile: (q: number): number | undefined => live.quantile(q) ?? fallback(q),
    lastWindow: (): LatencySnapshot | undefined => live.lastWindow(),
    currentWindow: (): LatencySnapshot => live.currentWindow(),
  };
}
