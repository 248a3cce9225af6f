import { AsyncLocalStorage } from 'node:async_hooks';
import type { Deadline } from './deadline.js';

/**
 * The ambient deadline: the one of the request being served, visible to any code running on its
 * behalf (across awaits, timers and callbacks) without threading it through every function.
 */
const storage = new AsyncLocalStorage<Deadline>();

/**
 * Runs `fn` with `deadline` as the ambient deadline. Nesting can only shorten: inside an outer
 * deadline the ambient one becomes the earlier of the two (a callee never extends its caller).
 */
export function runWithDeadline<T>(deadline: Deadline, fn: () => T): T {
  const outer = storage.getStore();
  return storage.run(outer === undefined ? deadline : deadline.min(outer), fn);
}

/** The ambient deadline, or `undefined` outside any {@link runWithDeadline}. */
export function currentDeadline(): Deadline | undefined {
  return storage.getStore();
}
