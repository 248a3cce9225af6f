/**
 * Time, as prazo sees it. Every component takes a `Clock` instead of reading time itself, so that a
 * test can drive hours of retries, backoffs and deadlines in microseconds, deterministically.
 *
 * Two kinds of time, never mixed (SPEC D1):
 * - `now()` is monotonic milliseconds: durations, remaining time, rate windows. It never jumps.
 * - `epochNow()` is wall-clock epoch milliseconds: only for what crosses a process boundary
 *   (the `x-deadline-epoch-ms` header, `Retry-After` dates).
 */

import { subscribeAbort, unsubscribeAbort } from '../signal/shared-abort.js';

/** An armed timer. Opaque: pass it back to {@link Clock.clearTimer}. */
export type Timer = { readonly __prazoTimer: unique symbol } | object;

export interface TimerOptions {
  /**
   * When true the timer does not keep the process alive (Node's `unref`). Deadline signals use it; a
   * backoff sleep must not (a process whose only pending work is a retry would exit silently).
   */
  readonly unref?: boolean;
}

export interface Clock {
  /** Monotonic milliseconds (fractional allowed). Only differences are meaningful. */
  now(): number;
  /** Wall-clock epoch milliseconds, for headers that cross hosts. */
  epochNow(): number;
  /**
   * Calls `fn` once after `delayMs`. Delays are clamped to [0, `MAX_TIMER_DELAY_MS` (2^31 − 1 ms)] like
   * grpc-js does; callers needing longer re-arm (see `Deadline.signal`).
   */
  setTimer(fn: () => void, delayMs: number, options?: TimerOptions): Timer;
  /** Cancels a timer; a no-op when it already fired or was cleared. */
  clearTimer(timer: Timer): void;
  /**
   * Calls `fn` once the I/O already waiting has been read (Node: `setImmediate`, which runs after the
   * loop's poll phase). Node runs expired timers *before* it reads sockets, so after the loop was
   * blocked a timer fires late with the answer it waits for already in the socket, unread: a timer
   * that fires late passes its verdict through here (see `LATE_TIMER_MS`, 2 ms). Optional: a clock
   * without it has no I/O of its own, and `fn` runs at once.
   */
  afterIo?(fn: () => void): void;
}

/**
 * A timer that fires at least this many ms after its due instant fired late (the loop was busy):
 * whatever it guards may have happened meanwhile, unread. Below this, a timer is on time (Node's
 * timers have whole-ms resolution and are checked against the loop's cached time).
 */
export const LATE_TIMER_MS = 2;

/** Runs `fn` after the pending I/O has been read (`clock.afterIo`), or at once for a clock without I/O. */
export function runAfterIo(clock: Clock, fn: () => void): void {
  if (clock.afterIo === undefined) fn();
  else clock.afterIo(fn);
}

/** The largest delay a Node timer honours (2^31 - 1 ms, about 24.8 days); longer ones fire at once. */
export const MAX_TIMER_DELAY_MS = 2 ** 31 - 1;

/**
 * Clamps a delay into what a timer can honour: NaN and negatives become 0. A delay that is not a
 * number is read as Node's `setTimeout` reads it (`Number(delay)`: `'10'` is 10 ms), so the fake
 * clock agrees with the system one (it concatenated `'10'` onto its time and fired 500 ms late).
 */
export function clampDelay(delayMs: number): number {
  if (typeof delayMs !== 'number') delayMs = Number(delayMs);
  if (!(delayMs > 0)) return 0;
  return delayMs > MAX_TIMER_DELAY_MS ? MAX_TIMER_DELAY_MS : delayMs;
}

/** Resolves after `ms` on `clock`, or rejects with the signal's reason when it aborts first. */
export function sleep(clock: Clock, ms: number, signal?: AbortSignal): Promise<void> {
  if (signal?.aborted) return Promise.reject(signal.reason);
  return new Promise<void>((resolve, reject) => {
    const onAbort = (): void => {
      clock.clearTimer(timer);
      reject(signal?.reason);
    };
    const timer = clock.setTimer(() => {
      if (signal !== undefined) unsubscribeAbort(signal, onAbort);
      resolve();
    }, ms);
    if (signal !== undefined) subscribeAbort(signal, onAbort);
  });
}
