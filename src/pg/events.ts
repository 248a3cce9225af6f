import { type StoreEvents, storeEvents } from '../dependency/events.js';

export { emitterOf, isStoreEvents } from '../dependency/events.js';

/**
 * Where a PostgreSQL dependency's decisions go: for now the throttle's refusals (`throttled`, issue
 * 23); attempts and their outcomes are prazo/mysql's and prazo/redis's so far. The same handle as
 * prazo/mysql's `createStoreEvents`: the two are interchangeable.
 */
export type PgEvents = StoreEvents;

/** Events of one PostgreSQL dependency: pass as `events` to `queryWithDeadline`, `pgDeadlinePool`, ... */
export function createPgEvents(name: string): PgEvents {
  return storeEvents('createPgEvents', name);
}
