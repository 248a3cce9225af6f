import type { Attributes, BatchObservableResult, Meter, ObservableGauge } from '@opentelemetry/api';
import type { Disposable } from '../dependency/types.js';
import { type DependencyAttributes, dependencyAttributes } from './attributes.js';
import { ATTR, MS_PER_S } from './constants.js';
import { gaugeSourceOf, type InstrumentableDependency } from './dependency.js';
import type { PrazoInstruments } from './instruments.js';

/**
 * The attribute that marks a configured timeout derived from an *assumed* p99 (SPEC C8): the starting
 * value of the dependency's `kind`, never measured. Set only while it is assumed (a dependency whose
 * p99 was measured keeps the series it always had), read from the source's `p99Assumed` (true until
 * live calibration or a measured config replaces the assumption).
 */
export const P99_ASSUMED_ATTRIBUTE = 'prazo.p99.assumed';

/** Whether `source` says its p99 is assumed: `p99Assumed === true` (a getter, read per collection). */
const isAssumed = (source: object): boolean =>
  (source as { readonly p99Assumed?: unknown }).p99Assumed === true;

/**
 * The observable gauges (retry ratio, configured timeout, live p99, config generation, instances by
 * state, the throttle's refusal probability), read from the dependencies only when a reader collects (every scrape, or every export
 * interval): nothing on the request path.
 * One batch callback serves every dependency, so adding one is a Set insertion.
 */
export class DependencyGauges implements Disposable {
  readonly #meter: Meter;
  readonly #instruments: PrazoInstruments;
  readonly #entries = new Map<InstrumentableDependency, DependencyAttributes>();
  /** The attributes of the config version last seen per dependency (a new set only when it changes). */
  readonly #versions = new Map<
    InstrumentableDependency,
    { readonly hash: string; readonly attributes: Attributes }
  >();
  /** The configured-timeout attributes with the assumed mark, per dependency, built once. */
  readonly #assumed = new Map<InstrumentableDependency, { connect: Attributes; response: Attributes }>();
  readonly #callback = (result: BatchObservableResult): void => this.#observe(result);
  #disposed = false;

  constructor(meter: Meter, instruments: PrazoInstruments) {
    this.#meter = meter;
    this.#instruments = instruments;
    meter.addBatchObservableCallback(this.#callback, this.#gauges());
  }

  /** Observes `dependency` at every collection until the returned handle is disposed. */
  add(dependency: InstrumentableDependency): Disposable {
    this.#entries.set(dependency, dependencyAttributes(dependency.name));
    return {
      dispose: () => {
        this.#entries.delete(dependency);
        this.#versions.delete(dependency);
        this.#assumed.delete(dependency);
      },
    };
  }

  #gauges(): ObservableGauge[] {
    const I = this.#instruments;
    return [
      I.retryRatio,
      I.timeoutConfigured,
      I.latencyP99,
      I.configGeneration,
      I.instances,
      I.throttleProbability,
    ];
  }

  dispose(): void {
    if (this.#disposed) return;
    this.#disposed = true;
    this.#entries.clear();
    this.#versions.clear();
    this.#assumed.clear();
    try {
      this.#meter.removeBatchObservableCallback(this.#callback, this.#gauges());
    } catch {
      // A meter that cannot remove it: the callback, with no entries left, observes nothing.
    }
  }

  #versionAttributes(
    instrumented: InstrumentableDependency,
    a: DependencyAttributes,
    hash: string,
  ): Attributes {
    const last = this.#versions.get(instrumented);
    if (last?.hash === hash) return last.attributes;
    const attributes = Object.freeze({ ...a.base, [ATTR.configHash]: hash.slice(0, 64) });
    this.#versions.set(instrumented, { hash, attributes });
    return attributes;
  }

  #assumedAttributes(
    instrumented: InstrumentableDependency,
    a: DependencyAttributes,
  ): { connect: Attributes; response: Attributes } {
    let sets = this.#assumed.get(instrumented);
    if (sets === undefined) {
      sets = {
        connect: Object.freeze({ ...a.byPhase.connect, [P99_ASSUMED_ATTRIBUTE]: true }),
        response: Object.freeze({ ...a.byPhase.response, [P99_ASSUMED_ATTRIBUTE]: true }),
      };
      this.#assumed.set(instrumented, sets);
    }
    return sets;
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
        // A timeout derived from an assumed p99 says so on its series (SPEC C8).
        const phase = isAssumed(dependency) ? this.#assumedAttributes(instrumented, a) : a.byPhase;
        const connect = timeouts?.connectMs;
        if (isGaugeValue(connect)) result.observe(I.timeoutConfigured, connect / MS_PER_S, phase.connect);
        const response = timeouts?.responseMs;
        if (isGaugeValue(response)) {
          result.observe(I.timeoutConfigured, response / MS_PER_S, phase.response);
        }
        // No p99 until the recorder has a full window with enough samples: no point rather than a guess.
        const p99 = dependency.recorder?.quantile(0.99);
        if (isGaugeValue(p99)) result.observe(I.latencyP99, p99 / MS_PER_S, a.base);
        // Only the version in force is observed. (The JS SDK 2.x, under cumulative temporality, still
        // exports an attribute set no callback observes any more, at its last value: the previous
        // hash's series then stays beside the new one; the API has no way to withdraw it.)
        const version = dependency.configVersion;
        if (version !== undefined && isGaugeValue(version.generation) && typeof version.hash === 'string') {
          result.observe(
            I.configGeneration,
            version.generation,
            this.#versionAttributes(instrumented, a, version.hash),
          );
        }
        // 0 while nothing is refused (a flat line, not "no data"); nothing when switched off.
        const probability = dependency.throttling?.()?.probability;
        if (isGaugeValue(probability)) result.observe(I.throttleProbability, probability, a.base);
        observeInstances(result, I.instances, instrumented, a);
      } catch {
        // Skipped for this collection; the next one tries again.
      }
    }
  }
}

/**
 * How many of its instances are in each state now (SPEC X5): every state observed, 0 included, so
 * "ejected now" reads 0 rather than no data while all are in rotation. Nothing for a dependency that
 * is one origin (an empty list).
 */
function observeInstances(
  result: BatchObservableResult,
  gauge: ObservableGauge,
  instrumented: InstrumentableDependency,
  a: DependencyAttributes,
): void {
  const read = instrumented.instances;
  if (typeof read !== 'function') return;
  const states = read.call(instrumented);
  if (!Array.isArray(states) || states.length === 0) return;
  let active = 0;
  let probation = 0;
  let ejected = 0;
  for (const s of states) {
    const state = (s as { state?: unknown } | null)?.state;
    if (state === 'ejected') ejected++;
    else if (state === 'probation') probation++;
    else if (state === 'active') active++;
  }
  result.observe(gauge, active, a.byInstanceState.active);
  result.observe(gauge, probation, a.byInstanceState.probation);
  result.observe(gauge, ejected, a.byInstanceState.ejected);
}

/** A value worth exporting: a finite, non-negative number (never NaN in a gauge). */
function isGaugeValue(value: unknown): value is number {
  return typeof value === 'number' && Number.isFinite(value) && value >= 0;
}
