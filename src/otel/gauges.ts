import type { BatchObservableResult, Meter } from '@opentelemetry/api';
import type { Disposable } from '../dependency/types.js';
import { type DependencyAttributes, dependencyAttributes } from './attributes.js';
import { MS_PER_S } from './constants.js';
import { gaugeSourceOf, type InstrumentableDependency } from './dependency.js';
import type { PrazoInstruments } from './instruments.js';

/**
 * The three observable gauges (retry ratio, configured timeout, live p99), read from the dependencies
 * only when a reader collects (every scrape, or every export interval): nothing on the request path.
 * One batch callback serves every dependency, so adding one is a Set insertion.
 */
export class DependencyGauges implements Disposable {
  readonly #meter: Meter;
  readonly #instruments: PrazoInstruments;
  readonly #entries = new Map<InstrumentableDependency, DependencyAttributes>();
  readonly #callback = (result: BatchObservableResult): void => this.#observe(result);
  #disposed = false;

  constructor(meter: Meter, instruments: PrazoInstruments) {
    this.#meter = meter;
    this.#instruments = instruments;
    const I = instruments;
    meter.addBatchObservableCallback(this.#callback, [I.retryRatio, I.timeoutConfigured, I.latencyP99]);
  }

  /** Observes `dependency` at every collection until the returned handle is disposed. */
  add(dependency: InstrumentableDependency): Disposable {
    this.#entries.set(dependency, dependencyAttributes(dependency.name));
    return { dispose: () => void this.#entries.delete(dependency) };
  }

  dispose(): void {
    if (this.#disposed) return;
    this.#disposed = true;
    this.#entries.clear();
    const I = this.#instruments;
    this.#meter.removeBatchObservableCallback(this.#callback, [
      I.retryRatio,
      I.timeoutConfigured,
      I.latencyP99,
    ]);
  }

  #observe(result: BatchObservableResult): void {
    const I = this.#instruments;
    for (const [instrumented, a] of this.#entries) {
      // One dependency whose getter throws must not blank the others' gauges for this collection.
      try {
        const dependency = gaugeSourceOf(instrumented);
        const ratio = dependency.budget?.state().ratio;
        if (isGaugeValue(ratio)) result.observe(I.retryRatio, ratio, a.base);
        const timeouts = dependency.timeouts;
        const connect = timeouts?.connectMs;
        if (isGaugeValue(connect)) result.observe(I.timeoutConfigured, connect / MS_PER_S, a.byPhase.connect);
        const response = timeouts?.responseMs;
        if (isGaugeValue(response)) {
          result.observe(I.timeoutConfigured, response / MS_PER_S, a.byPhase.response);
        }
        // No p99 until the recorder has a full window with enough samples: no point rather than a guess.
        const p99 = dependency.recorder?.quantile(0.99);
        if (isGaugeValue(p99)) result.observe(I.latencyP99, p99 / MS_PER_S, a.base);
      } catch {
        // Skipped for this collection; the next one tries again.
      }
    }
  }
}

/** A value worth exporting: a finite, non-negative number (never NaN in a gauge). */
function isGaugeValue(value: unknown): value is number {
  return typeof value === 'number' && Number.isFinite(value) && value >= 0;
}
