import { type Clock, MAX_TIMER_DELAY_MS, type Timer } from '../clock/clock.js';

/**
 * A timer for the instant a deadline passes, whatever its distance. A timer holds at most
 * 2^31 − 1 ms (24.8 days): a longer delay is clamped to it (Node's `setTimeout`, and every prazo
 * `Clock`), so a deadline 30 days away — or an endless one, `Deadline.after(Infinity)` — armed as one
 * timer would fire at 24.8 days and end a call early with DEADLINE_EXCEEDED. Here a deadline beyond
 * a timer's range is waited for one range at a time (`leftMs` read anew at each step), and an
 * endless one arms nothing. `Deadline.signal` does the same for its own timer.
 */
export interface DeadlineTimer {
  /** Disarms it (idempotent). */
  clear(): void;
}

/** Calls `fire` once `leftMs()` (read now, and again at each re-arm) has run out on `clock`. */
export function armDeadlineTimer(
  clock: Clock,
  leftMs: () => number,
  fire: () => void,
  options?: { readonly unref?: boolean },
): DeadlineTimer {
  let timer: Timer | undefined;
  const arm = (left: number): void => {
    if (left === Number.POSITIVE_INFINITY) timer = undefined;
    else if (left > MAX_TIMER_DELAY_MS)
      timer = clock.setTimer(() => arm(leftMs()), MAX_TIMER_DELAY_MS, options);
    else
      timer = clock.setTimer(
        () => {
          timer = undefined;
          fire();
        },
        left,
        options,
      );
  };
  arm(leftMs());
  return {
    clear(): void {
      if (timer !== undefined) clock.clearTimer(timer);
      timer = undefined;
    },
  };
}
