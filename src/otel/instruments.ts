import type { Counter, Histogram, Meter, MetricOptions, ObservableGauge } from '@opentelemetry/api';
import { DURATION_BUCKETS_S, METRICS, type MetricSpec } from './constants.js';

/**
 * The instruments prazo records into, created once from a Meter. Synchronous instruments are held and
 * called on every event; with no SDK installed they are the API's no-op singletons, so an event costs a
 * listener call and an empty method call (measured by `npm run bench`'s micro cases).
 */
export interface PrazoInstruments {
  readonly attempts: Counter;
  readonly budgetRefusals: Counter;
  readonly timeouts: Counter;
  readonly deadlineInsufficient: Counter;
  readonly throttled: Counter;
  readonly throttleProbability: ObservableGauge;
  readonly hedgesWon: Counter;
  readonly instanceAttempts: Counter;
  readonly instanceEjections: Counter;
  readonly instanceReturns: Counter;
  readonly instances: ObservableGauge;
  readonly attemptDuration: Histogram;
  readonly retryRatio: ObservableGauge;
  readonly timeoutConfigured: ObservableGauge;
  readonly latencyP99: ObservableGauge;
  readonly configGeneration: ObservableGauge;
  readonly wastedWork: Counter;
  readonly wastedWorkTime: Counter;
  readonly rejectedExpired: Counter;
  readonly sliceObservations: Counter;
  readonly sliceOverruns: Counter;
}

const options = (metric: MetricSpec): MetricOptions => ({
  description: metric.description,
  unit: metric.unit,
});

/** Creates every prazo instrument on `meter` (names, units and descriptions from `constants.ts`). */
export function createInstruments(meter: Meter): PrazoInstruments {
  const counter = (metric: MetricSpec): Counter => meter.createCounter(metric.name, options(metric));
  const gauge = (metric: MetricSpec): ObservableGauge =>
    meter.createObservableGauge(metric.name, options(metric));
  const M = METRICS;
  return Object.freeze({
    attempts: counter(M.attempts),
    budgetRefusals: counter(M.budgetRefusals),
    timeouts: counter(M.timeouts),
    deadlineInsufficient: counter(M.deadlineInsufficient),
    throttled: counter(M.throttled),
    throttleProbability: gauge(M.throttleProbability),
    hedgesWon: counter(M.hedgesWon),
    instanceAttempts: counter(M.instanceAttempts),
    instanceEjections: counter(M.instanceEjections),
    instanceReturns: counter(M.instanceReturns),
    instances: gauge(M.instances),
    attemptDuration: meter.createHistogram(M.attemptDuration.name, {
      ...options(M.attemptDuration),
      advice: { explicitBucketBoundaries: [...DURATION_BUCKETS_S] },
    }),
    retryRatio: gauge(M.retryRatio),
    timeoutConfigured: gauge(M.timeoutConfigured),
    latencyP99: gauge(M.latencyP99),
    configGeneration: gauge(M.configGeneration),
    wastedWork: counter(M.wastedWork),
    wastedWorkTime: counter(M.wastedWorkTime),
    rejectedExpired: counter(M.rejectedExpired),
    sliceObservations: counter(M.sliceObservations),
    sliceOverruns: counter(M.sliceOverruns),
  });
}
