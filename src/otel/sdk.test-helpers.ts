import type { Attributes } from '@opentelemetry/api';
import {
  DataPointType,
  type Histogram,
  MeterProvider,
  type MetricData,
  MetricReader,
} from '@opentelemetry/sdk-metrics';
import type { DependencyEvent, Disposable } from '../dependency/types.js';

/** A pull reader over the real SDK: `collect()` returns what an exporter would export. */
class PullReader extends MetricReader {
  protected override async onForceFlush(): Promise<void> {}
  protected override async onShutdown(): Promise<void> {}
}

export interface SdkHarness {
  readonly provider: MeterProvider;
  /** Every metric collected now, by name. */
  collect(): Promise<Map<string, MetricData>>;
  shutdown(): Promise<void>;
}

export function createSdk(): SdkHarness {
  const reader = new PullReader();
  const provider = new MeterProvider({ readers: [reader] });
  return {
    provider,
    async collect() {
      const { resourceMetrics, errors } = await reader.collect();
      if (errors.length > 0) throw new AggregateError(errors, 'collection failed');
      const out = new Map<string, MetricData>();
      for (const scope of resourceMetrics.scopeMetrics)
        for (const m of scope.metrics) out.set(m.descriptor.name, m);
      return out;
    },
    shutdown: () => provider.shutdown(),
  };
}

const matches = (have: Attributes, want: Attributes): boolean =>
  Object.entries(want).every(([k, v]) => have[k] === v) &&
  Object.keys(have).length === Object.keys(want).length;

/** The value of the one point of `metric` with exactly `attributes` (sum or gauge), or undefined. */
export function pointValue(metric: MetricData | undefined, attributes: Attributes): number | undefined {
  if (!metric) return undefined;
  if (metric.dataPointType === DataPointType.HISTOGRAM) throw new Error('use histogramPoint');
  const point = (metric.dataPoints as { attributes: Attributes; value: number }[]).find((p) =>
    matches(p.attributes, attributes),
  );
  return point?.value;
}

export function histogramPoint(
  metric: MetricData | undefined,
  attributes: Attributes,
): Histogram | undefined {
  if (metric?.dataPointType !== DataPointType.HISTOGRAM) return undefined;
  return metric.dataPoints.find((p) => matches(p.attributes, attributes))?.value;
}

/** A hand-driven event source: what `createDependency(...).on` is, minus the executor. */
export class EventSource {
  readonly name: string;
  #listeners: ((event: DependencyEvent) => void)[] = [];

  constructor(name: string) {
    this.name = name;
  }

  get listeners(): number {
    return this.#listeners.length;
  }

  on(listener: (event: DependencyEvent) => void): Disposable {
    this.#listeners.push(listener);
    return {
      dispose: () => {
        this.#listeners = this.#listeners.filter((l) => l !== listener);
      },
    };
  }

  emit(event: DependencyEvent): void {
    for (const listener of this.#listeners) listener(event);
  }
}
