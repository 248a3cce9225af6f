import { sleep } from './clock.js';
import { systemClock } from './system.js';

/**
 * Waits in real time until `check()` holds, looking every `stepMs`: for tests that wait on something
 * outside the process (a server starting, a file watch firing, a child exiting), where no fake clock
 * can stand in. Resolves whether it held at the end (the last look is after the time ran out, so a
 * condition that became true during the final step still counts); the caller decides whether a
 * `false` is a failure (see `waitForOrThrow`).
 */
export async function waitFor(check: () => boolean, timeoutMs: number, stepMs = 50): Promise<boolean> {
  const until = systemClock.now() + timeoutMs;
  while (systemClock.now() < until) {
    if (check()) return true;
    await sleep(systemClock, stepMs);
  }
  return check();
}

/** `waitFor`, failing with "timed out waiting for <what>" when the condition never held. */
export async function waitForOrThrow(
  check: () => boolean,
  timeoutMs: number,
  what: string,
  stepMs = 2,
): Promise<void> {
  if (!(await waitFor(check, timeoutMs, stepMs))) throw new Error(`timed out waiting for ${what}`);
}

/** Milliseconds since `since` (a `systemClock.now()` reading): how long something outside took. */
export function elapsedSince(since: number): number {
  return systemClock.now() - since;
}
