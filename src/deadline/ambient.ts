import { AsyncLocalStorage } from 'node:async_hooks';
import { InvalidOptionsError } from '../errors/options.js';
import { type Deadline, isDeadline } from './deadline.js';

/**
 * The ambient deadline: the one of the request being served, visible to any code running on its
 * behalf (across awaits, timers and callbacks) without threading it through every function.
 */
const storage = new AsyncLocalStorage<Deadline>();

/**
 * Runs `fn` with `deadline` as the ambient deadline. Nesting can only shorten: inside an outer
 * deadline the ambient one becomes the earlier of the two (a callee never extends its caller).
 * Anything but a Deadline (`undefined` included) throws INVALID_OPTIONS, inside an outer deadline
 * or not, and `fn` is not run.
 */
export function runWithDeadline<T>(deadline: Deadline, fn: () => T): T {
  if (!isDeadline(deadline)) {
    throw new InvalidOptionsError('runWithDeadline', [
      `\`deadline\` must be a Deadline, got ${deadline === null ? 'null' : typeof deadline}`,
    ]);
  }
  const outer = storage.getStore();
  return storage.run(outer === undefined ? deadline : deadline.min(outer), fn);
}

/** The ambient deadline, or `undefined` outside any {@link runWithDeadline}. */
export function currentDeadline(): Deadline | undefined {
  return storage.getStore();
}
