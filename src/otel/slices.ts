import type { Attributes } from '@opentelemetry/api';
import { ATTR } from './constants.js';
import type { PrazoInstruments } from './instruments.js';

/**
 * Latency-budget slices (SPEC B1, B3): each timed run of an endpoint component counts as one
 * observation, and as an overrun when it took longer than its slice. Both are counters, so the alert
 * is a *rate* per component (overruns / observations) that Prometheus can sum across instances: one
 * slow run is noise, a component that keeps eating its neighbours' time is a design problem.
 *
 * The source is `src/slo/`'s overrun tracker, whose `observe(component, elapsedMs)` already decides
 * "overrun or not": the instrumentation wraps it, so the tracker's own alarm and the metric can never
 * disagree about what an overrun is.
 */

/** The part of an overrun tracker (`createOverrunTracker(...)`) the metrics need. */
export interface OverrunObserver {
  /** Records one run; true when it overran its slice. */
  observe(component: string, elapsedMs: number): boolean;
}

/**
 * A tracker that behaves exactly like `tracker` and also counts each observation (every method but
 * `observe` is the tracker's own). Counting stops when `live()` turns false (instrumentation disposed).
 * The tracker's other methods and getters run on the tracker itself: a class with private fields
 * (`#alarms`) throws a TypeError when its method runs on any other object (an `Object.create` of it).
 */
export function countingTracker<T extends OverrunObserver>(
  instruments: PrazoInstruments,
  tracker: T,
  endpoint: string,
  cacheLimit: number,
  live: () => boolean,
): T {
  const cache = new Map<string, Attributes>();
  const attributesOf = (component: string): Attributes => {
    const hit = cache.get(component);
    if (hit) return hit;
    const built = Object.freeze({ [ATTR.endpoint]: endpoint, [ATTR.component]: component });
    if (cache.size < cacheLimit) cache.set(component, built);
    return built;
  };
  const known = componentNames(tracker);
  const observe = (component: string, elapsedMs: number): boolean => {
    const over = tracker.observe(component, elapsedMs);
    // The tracker ignores names outside its budget and NaN times: so do the metrics (bounded labels).
    const counted = known === undefined ? typeof component === 'string' : known.has(component);
    if (live() && counted && !Number.isNaN(elapsedMs)) {
      try {
        const attributes = attributesOf(component);
        instruments.sliceObservations.add(1, attributes);
        if (over) instruments.sliceOverruns.add(1, attributes);
      } catch {
        // A meter that throws loses the count; the tracker has recorded the run and answers as always.
      }
    }
    return over;
  };
  // The proxy's own target is an empty object over the tracker (`instanceof` still holds): a frozen
  // tracker's `observe` could not be answered by another function (a proxy invariant).
  return new Proxy(Object.create(tracker) as T, {
    get: (_shell, key) => {
      if (key === 'observe') return observe;
      const value: unknown = Reflect.get(tracker, key, tracker);
      return typeof value === 'function' ? value.bind(tracker) : value;
    },
    set: (_shell, key, value) => Reflect.set(tracker, key, value, tracker),
  });
}

/**
 * The tracker's budget components, read once (fixed by its budget); undefined when it cannot say: a
 * user's tracker whose `report` is something else (returns nothing, throws) is counted by name, as
 * one without `report` is, rather than failing `trackSlices` with a TypeError.
 */
function componentNames(tracker: OverrunObserver): Set<string> | undefined {
  const report = (tracker as { report?: () => unknown }).report;
  if (typeof report !== 'function') return undefined;
  try {
    const entries = report.call(tracker);
    if (!Array.isArray(entries)) return undefined;
    const names = entries.map((c) => (c as { name?: unknown } | null)?.name);
    return names.every((n) => typeof n === 'string') ? new Set(names as string[]) : undefined;
  } catch {
    return undefined;
  }
}
