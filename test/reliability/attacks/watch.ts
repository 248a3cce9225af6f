import { systemClock } from '../../../src/clock/index.js';

/**
 * What the attack files share to follow a call: a promise watched without awaiting it (its rejection
 * never left unhandled), the pending promise work let run, and a real-time call's outcome and duration.
 */

/** Lets the promise reactions queued so far (and the ones they queue) run. */
export const flush = async (): Promise<void> => {
  for (let i = 0; i < 5; i += 1) await new Promise<void>((resolve) => setImmediate(resolve));
};

export interface Box<T> {
  state: 'pending' | 'ok' | 'err';
  value?: T;
  error?: unknown;
}

/** Watches a promise without ever leaving its rejection unhandled. */
export function watch<T>(p: Promise<T>): Box<T> {
  const box: Box<T> = { state: 'pending' };
  p.then(
    (value) => {
      box.state = 'ok';
      box.value = value;
    },
    (error: unknown) => {
      box.state = 'err';
      box.error = error;
    },
  );
  return box;
}

/** Awaits `p` on the real clock: its value or its error, and how long it took (ms). */
export async function outcome<T>(p: Promise<T>): Promise<{ value?: T; error?: unknown; ms: number }> {
  const t0 = systemClock.now();
  try {
    const value = await p;
    return { value, ms: systemClock.now() - t0 };
  } catch (error) {
    return { error, ms: systemClock.now() - t0 };
  }
}

/** Waits `ms` of real time. */
export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Whether `check` holds within `ms` of real time (polled every 10 ms): a socket's close event on its
 * way is not a leak. Generous by default (the machine is shared).
 */
export async function eventually(check: () => boolean, ms = 2_000): Promise<boolean> {
  const until = systemClock.now() + ms;
  while (!check()) {
    if (systemClock.now() > until) return false;
    await sleep(10);
  }
  return true;
}
