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

/**
 * Calls `fire` once `leftMs()` (read now, and again at each re-arm) has run out on `clock`: never
 * before, even where the clock's timer fires a fraction of a ms early.
 */
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
    else {
      // Node's whole-ms timers fire up to a ms before a monotonic instant: until the instant
      // this timer was armed for has come, wait for the rest (Deadline.signal does the same). The
      // instant, not `leftMs()` again: a caller's `leftMs` may be clamped (remaining + a grace).
      const due = clock.now() + left;
      const onDue = (): void => {
        const early = due - clock.now();
        if (early > 0) {
          timer = clock.setTimer(onDue, early, options);
          return;
        }
        timer = undefined;
        fire();
      };
      timer = clock.setTimer(onDue, left, options);
    }
  };
  arm(leftMs());
  return {
    clear(): void {
      if (timer !== undefined) clock.clearTimer(timer);
      timer = undefined;
    },
  };
}
