import type { LatencySnapshot, LatencySource, Outcome } from '../../latency/types.js';

/**
 * A live latency source that answers with the calibrated quantiles until its own windows have
 * enough samples. prazo hedges after the dependency's *live* p95 (SPEC H1); a freshly started
 * process has no live window yet, and in a demo scenario of a few seconds it would never hedge.
 * Falling back to the p95 measured in the healthy calibration is what a service restarting in
 * production would do with its last known distribution.
 */
export function withCalibratedFallback(
  live: LatencySource,
  calibrated: { readonly p95Ms: number; readonly p99Ms: number },
): LatencySource {
  return {
    record: (latencyMs: number, outcome: Outcome): void => live.record(latencyMs, outcome),
    quantile: (q: number): number | undefined =>
      live.quantile(q) ?? (q <= 0.95 ? calibrated.p95Ms : calibrated.p99Ms),
    lastWindow: (): LatencySnapshot | undefined => live.lastWindow(),
    currentWindow: (): LatencySnapshot => live.currentWindow(),
  };
}
