import { addToSketch, clearSketch, createSketch, type Sketch, sketchQuantile } from './sketch.js';
import type { LatencySnapshot, Outcome } from './types.js';

/**
 * One window of samples: a sketch of successful latencies plus a count per outcome. Mutable and
 * reused (the recorder swaps two of these), so recording never allocates.
 */
export class LatencyWindow {
  readonly sketch: Sketch;
  startedAt = 0;
  successes = 0;
  errors = 0;
  timeouts = 0;
  max: number | undefined;

  constructor(relativeAccuracy: number, startedAt: number) {
    this.sketch = createSketch(relativeAccuracy);
    this.startedAt = startedAt;
  }

  get count(): number {
    return this.successes + this.errors + this.timeouts;
  }

  /**
   * Counts one call. Only successes feed the quantiles (an error can be fast, a timeout is cut at the
   * timeout itself: both would distort the p99 that calibration reads); their rates are kept apart.
   */
  add(latencyMs: number, outcome: Outcome): void {
    if (outcome === 'success') {
      this.successes += 1;
      addToSketch(this.sketch, latencyMs);
      if (this.max === undefined || latencyMs > this.max) this.max = latencyMs;
    } else if (outcome === 'timeout') {
      this.timeouts += 1;
    } else {
      this.errors += 1;
    }
  }

  reset(startedAt: number): void {
    clearSketch(this.sketch);
    this.startedAt = startedAt;
    this.successes = 0;
    this.errors = 0;
    this.timeouts = 0;
    this.max = undefined;
  }

  quantile(q: number): number | undefined {
    return sketchQuantile(this.sketch, q);
  }

  snapshot(endedAt: number): LatencySnapshot {
    return Object.freeze({
      count: this.count,
      successes: this.successes,
      errors: this.errors,
      timeouts: this.timeouts,
      p50: this.quantile(0.5),
      p95: this.quantile(0.95),
      p99: this.quantile(0.99),
      p999: this.quantile(0.999),
      max: this.max,
      startedAt: this.startedAt,
      endedAt,
    });
  }
}
