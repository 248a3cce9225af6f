import { performance } from 'node:perf_hooks';
import { type Clock, clampDelay, type Timer, type TimerOptions } from './clock.js';

/**
 * The real clock: `performance.now()` for monotonic time, `Date.now()` for the wall, Node timers.
 * This module and the fake clock are the only places in `src/` that touch time directly.
 */
export const systemClock: Clock = Object.freeze({
  now: (): number => performance.now(),
  epochNow: (): number => Date.now(),
  setTimer(fn: () => void, delayMs: number, options?: TimerOptions): Timer {
    const handle = setTimeout(fn, clampDelay(delayMs));
    if (options?.unref) handle.unref();
    return handle as unknown as Timer;
  },
  clearTimer(timer: Timer): void {
    clearTimeout(timer as unknown as NodeJS.Timeout);
  },
  afterIo(fn: () => void): void {
    setImmediate(fn);
  },
});
