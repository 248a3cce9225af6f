import { type StoreEvents, storeEvents } from '../dependency/events.js';

export { emitterOf, isStoreEvents, type StoreEvents } from '../dependency/events.js';

/**
 * Events of one MySQL dependency: pass as `events` to `mysqlQuery`, `mysqlDeadlinePool`, ... Attempts,
 * their duration by outcome (a statement stopped at the deadline is a `timeout` in phase `deadline`:
 * the work the server did and threw away; one that waited for a pool connection too long is phase
 * `queue`: never sent), fast failures (`deadline-insufficient`) and refusals (`throttled`).
 */
export function createStoreEvents(name: string): StoreEvents {
  return storeEvents('createStoreEvents', name);
}
