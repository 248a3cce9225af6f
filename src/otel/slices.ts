import type { Attributes } from '@opentelemetry/api';
import type { Disposable } from '../dependency/types.js';
import { ATTR } from './constants.js';
import type { PrazoInstruments } from './instruments.js';

/**
 * Latency-budget slices (SPEC B1, B3): each timed run of an endpoint component counts as one
 * observation, and as an overrun when it took longer than its slice. Both are counters, so the alert
 * is a *rate* per component (overruns / observations), as B3 asks: one slow run is noise, a component
 * that keeps eating into its neighbours' time is a design problem (cache, queue, or a new SLO).
 */

/** One timed run of a component, as the latency-budget tracker reports it. */
export interface SliceObservation {
  readonly endpoint: string;
  readonly component: string;
  /** True when the run took longer than the component's slice. */
  readonly overrun: boolean;
}

/** A source of slice observations (the latency-budget tracker of `src/slo/`, or your own). */
export interface SliceSource {
  onSlice(listener: (observation: SliceObservation) => void): Disposable;
}

const key = (endpoint: string, component: string): string => `${endpoint}\u0000${component}`;

export function recordSlices(
  instruments: PrazoInstruments,
  source: SliceSource,
  cacheLimit: number,
): Disposable {
  const cache = new Map<string, Attributes>();
  const attributesOf = (endpoint: string, component: string): Attributes => {
    const k = key(endpoint, component);
    const hit = cache.get(k);
    if (hit) return hit;
    const built = Object.freeze({ [ATTR.endpoint]: endpoint, [ATTR.component]: component });
    if (cache.size < cacheLimit) cache.set(k, built);
    return built;
  };
  return source.onSlice((observation) => {
    const attributes = attributesOf(observation.endpoint, observation.component);
    instruments.sliceObservations.add(1, attributes);
    if (observation.overrun) instruments.sliceOverruns.add(1, attributes);
  });
}
