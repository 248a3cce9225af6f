import { clearSketch, createSketch, type Sketch, sketchQuantile } from './sketch.js';
import type { LatencySnapshot } from './types.js';

/**
 * One window of samples: a sketch of successful latencies plus a count per outcome. Mutable and
 * reused (the recorder swaps two of these), so recording never allocates. The recorder fills it on
 * its hot path directly. Only successes feed the quantiles: an error can be fast, a timeout is cut at
 * the timeout itself, and both would distort the p99 that calibration reads; their rates are kept apart.
 */
export class LatencyWindow {
  readonly sketch: Sketch;
  startedAt = 0;
  successes = 0;
  errors = 0;
  timeouts = 0;
  /** Largest successful latency, ms; −1 before the first (a number field, never boxed). */
  maxMs = -1;

  constructor(relativeAccuracy: number, startedAt: number) {
    this.sketch = createSketch(relativeAccuracy);
    this.startedAt = startedAt;
  }

  get count(): number {
    return this.successes + this.errors + this.timeouts;
  }

  reset(startedAt: number): void {
    clearSketch(this.sketch);
    this.startedAt = startedAt;
    this.successes = 0;
    this.errors = 0;
    this.timeouts = 0;
    this.maxMs = -1;
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
      max: this.maxMs < 0 ? undefined : this.maxMs,
      startedAt: this.startedAt,
      endedAt,
    });
  }
}
