import { type DependencyListener, Listeners } from '../dependency/events.js';
import type { DependencyEvent, Disposable } from '../dependency/types.js';

/**
 * Where a PostgreSQL dependency's decisions go: the executor's own events (SPEC X3), so
 * `instrumentPrazo().addDependency(events)` counts them as any dependency's. For now prazo/pg emits
 * the throttle's refusals (`throttled`, issue 23); attempts and their outcomes are prazo/mysql's and
 * prazo/redis's so far. The same brand as prazo/mysql's `createStoreEvents` (a global symbol), so
 * the two are interchangeable.
 */
export interface PgEvents {
  readonly name: string;
  on(listener: DependencyListener): Disposable;
}

const LISTENERS = Symbol.for('prazo.storeEvents');

/** Events of one PostgreSQL dependency: pass as `events` to `queryWithDeadline`, `pgDeadlinePool`, ... */
export function createPgEvents(name: string): PgEvents {
  if (typeof name !== 'string' || name.length === 0)
    throw new TypeError('createPgEvents(name): a name is required');
  const listeners = new Listeners();
  return Object.freeze({
    name,
    on: (listener: DependencyListener) => listeners.add(listener),
    [LISTENERS]: listeners,
  });
}

export const isStoreEvents = (value: unknown): boolean =>
  value !== null &&
  typeof value === 'object' &&
  (value as Record<symbol, unknown>)[LISTENERS] instanceof Listeners;

/** The emitter behind `events`, or none: events are built only when someone listens. */
export function emitterOf(
  events: PgEvents | undefined,
): ((event: () => DependencyEvent) => void) | undefined {
  const listeners = (events as Record<symbol, unknown> | undefined)?.[LISTENERS] as Listeners | undefined;
  if (listeners === undefined) return undefined;
  return (make) => {
    if (listeners.active) listeners.emit(make());
  };
}
