import type { DependencyEvent, Disposable } from '../dependency/types.js';
import {
  AttributeCache,
  type DependencyAttributes,
  dependencyAttributes,
  InstanceAttributeCache,
} from './attributes.js';
import { ATTR, MS_PER_S, OTEL_LIMITS } from './constants.js';
import type { PrazoInstruments } from './instruments.js';

/** What the gauges read of a dependency: each part feeds one observable gauge. */
export interface GaugeSource {
  /** The retry budget: its `ratio` is the retry-ratio gauge (SPEC R7). */
  readonly budget?: { state(): { readonly ratio: number } };
  /** The latency recorder: its live p99 (`quantile(0.99)`, ms) is the p99 gauge (SPEC C5, V1). */
  readonly recorder?: { quantile(q: number): number | undefined };
  /** Per-attempt timeouts in force, in ms (a getter when they follow live calibration, SPEC X2). */
  readonly timeouts?: { readonly connectMs?: number; readonly responseMs?: number };
  /** The config version its settings come from (`watchConfig`, SPEC X9): the config-generation gauge. */
  readonly configVersion?: { readonly hash: string; readonly generation: number } | undefined;
  /**
   * The adaptive throttle (docs/throttling.md): its `probability` of refusing a new call now is the
   * throttle-probability gauge; undefined when the throttle is switched off (no point then).
   */
  throttling?(): { readonly probability: number } | undefined;
}

/**
 * What prazo/otel needs from a dependency: `createDependency(...)` satisfies it, so does a client
 * built on one (`createHttpClient(...)`: its `on` and its current `dependency`), and anything else
 * that emits {@link DependencyEvent}s (a user's own executor). Only `name` and `on` are required; the
 * gauge parts are read at collection time, never per request — from `dependency` when there is one
 * (the executor a client runs through *now*), else from the object itself.
 */
export interface InstrumentableDependency extends GaugeSource {
  readonly name: string;
  /** Subscribes to every decision the executor makes. */
  on(listener: (event: DependencyEvent) => void): Disposable;
  /** The executor the gauges read, read anew at each collection (a client's current one). */
  readonly dependency?: GaugeSource;
  /**
   * Its instances now, when it is several (SPEC X5): the instances gauge counts them by `state`. Read
   * from the object itself (a client, an interceptor's dependency view), not from its executor.
   */
  instances?(): readonly { readonly state: string }[];
}

/** Where the gauges of `source` are read now: its current executor when it has one. */
export function gaugeSourceOf(source: InstrumentableDependency): GaugeSource {
  const current = source.dependency;
  return current !== null && typeof current === 'object' ? current : source;
}

/**
 * Turns one source's events into counter and histogram updates. The listener does no work beyond a
 * switch, one cached attribute lookup and one instrument call: with no SDK installed that call is
 * the API's empty no-op method.
 */
export function recordDependencyEvents(
  instruments: PrazoInstruments,
  dependency: InstrumentableDependency,
): Disposable {
  const own = dependencyAttributes(dependency.name);
  const others = new AttributeCache(OTEL_LIMITS.attributeCacheSize);
  // An event that names no dependency (a user's source leaving it out) counts as the source's own:
  // built from it, the attribute would be dropped and the series would carry no dependency at all.
  const attrsOf = (name: unknown): DependencyAttributes =>
    name === dependency.name || typeof name !== 'string' || name.length === 0 ? own : others.get(name);
  const instances = new InstanceAttributeCache(OTEL_LIMITS.attributeCacheSize);
  const I = instruments;
  const record = (event: DependencyEvent): void => {
    const a = attrsOf(event.dependency);
    switch (event.type) {
      case 'attempt':
        I.attempts.add(1, a.byKind[event.kind] ?? a.base);
        if (event.instance !== undefined)
          I.instanceAttempts.add(1, instances.get(a.base[ATTR.dependency] as string, event.instance).base);
        return;
      case 'instance-ejected': {
        const at = instances.get(a.base[ATTR.dependency] as string, event.instance);
        I.instanceEjections.add(1, at.byReason[event.reason] ?? at.base);
        return;
      }
      case 'instance-returned':
        I.instanceReturns.add(1, instances.get(a.base[ATTR.dependency] as string, event.instance).base);
        return;
      case 'attempt-end': {
        const latency = event.latencyMs / MS_PER_S;
        // A NaN, negative or infinite latency (a broken clock, a user's source) is dropped rather than
        // poisoning the histogram: one Infinity made its `_sum` +Inf for the life of the process.
        if (latency >= 0 && latency !== Number.POSITIVE_INFINITY)
          I.attemptDuration.record(latency, a.byOutcome[event.outcome] ?? a.base);
        if (event.outcome === 'timeout')
          I.timeouts.add(1, a.byPhase[event.phase ?? 'unknown'] ?? a.byPhase.unknown);
        return;
      }
      case 'budget-refused':
        I.budgetRefusals.add(1, a.byKind[event.kind] ?? a.base);
        return;
      case 'deadline-insufficient':
        I.deadlineInsufficient.add(1, a.base);
        return;
      case 'throttled':
        I.throttled.add(1, a.base);
        return;
      case 'hedge-won':
        I.hedgesWon.add(1, a.base);
        return;
      default:
        // 'retry-after' and event types added later: not metrics (yet). Never throw in a listener.
        return;
    }
  };
  return dependency.on((event) => {
    try {
      record(event);
    } catch {
      // The application's meter threw (a broken SDK): the metric is lost, not the event. Thrown on,
      // it reached the emitter: a client's relay stopped there and its other listeners missed it.
    }
  });
}
