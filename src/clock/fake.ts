import { defineOptions, type OptionsOf, option } from '../options/declare.js';
import { readOptions } from '../options/validator.js';
import { type Clock, clampDelay, type Timer } from './clock.js';
import { type HeapTimer, TimerHeap } from './timer-heap.js';

/**
 * How many timers fire at one instant (or `afterIo` callbacks run in one turn) before a move gives up
 * as a runaway loop, and `runAllAsync`'s default limit: far more than any test arms, few enough to
 * fail in well under a second.
 */
const RUNAWAY_LIMIT = 100_000;

/** Options of {@link FakeClock}, declared once. */
export const FAKE_CLOCK_OPTIONS = defineOptions({
  /** Initial monotonic reading in ms. Default 0; any finite number. */
  now: option.number({ default: 0, unit: 'ms' }),
  /** Initial wall-clock epoch in ms. Default 1_700_000_000_000 (2023-11-14T22:13:20Z); >= 0. */
  epoch: option.number({ default: 1_700_000_000_000, unit: 'ms', min: 0 }),
});

export type FakeClockOptions = OptionsOf<typeof FAKE_CLOCK_OPTIONS>;

/**
 * A clock that only moves when told to. Timers fire in due order (ties in arming order) and, while
 * one fires, `now()` reads its due time, so code observes exactly the instants it asked for.
 *
 * - `advance(ms)` moves time synchronously, firing timers on the way.
 * - `advanceAsync(ms)` also lets promise continuations run between timers, which is what async code
 *   (a retry loop awaiting a backoff, then arming the next timeout) needs.
 * - `skewWall(ms)` moves only the wall clock, to model hosts whose clocks disagree.
 * - `stall(ms)` moves time without firing anything, like a blocked event loop: the next `advance`
 *   fires the overdue timers late, as Node does after a long synchronous task.
 * - `afterIo(fn)` callbacks run like Node's check phase: once the timers due at the current instant
 *   have fired, before time moves on (and, in `advanceAsync`, after pending promise work).
 *
 * Time moves only forward and only by finite amounts (`RangeError` otherwise), also when a timer
 * callback moves it itself or an `advanceAsync` is not awaited: `now()` never reads less than before.
 *
 * A move gives up with an `Error` (naming the instant and the count) once {@link RUNAWAY_LIMIT}
 * timers have fired at one instant, or as many `afterIo` callbacks have run in one turn: a timer
 * that re-arms itself at 0 ms (or a callback that queues itself) would otherwise hold the test
 * forever, time never reaching the move's target. Time stays at that instant, the timers armed.
 */
export class FakeClock implements Clock {
  #now: number;
  #epochOffset: number;
  #seq = 0;
  readonly #heap = new TimerHeap();
  #io: Array<() => void> = [];

  constructor(options: FakeClockOptions = {}) {
    const { now, epoch } = readOptions('FakeClock', FAKE_CLOCK_OPTIONS, options);
    this.#now = now;
    this.#epochOffset = epoch - now;
  }

  now(): number {
    return this.#now;
  }

  epochNow(): number {
    return this.#now + this.#epochOffset;
  }

  /** Arms `fn` (a function, as Node's `setTimeout` requires) `delayMs` from now, clamped as every clock does. */
  setTimer(fn: () => void, delayMs: number): Timer {
    if (typeof fn !== 'function') throw new TypeError(`setTimer(fn) needs a function, got ${typeof fn}`);
    const timer: HeapTimer = {
      due: this.#now + clampDelay(delayMs),
      seq: this.#seq++,
      fn,
      cancelled: false,
      heap: undefined,
    };
    this.#heap.push(timer);
    return timer as unknown as Timer;
  }

  /**
   * Cancels a timer of this clock. Anything else (a timer that fired or was cleared, another clock's,
   * `undefined`) is a no-op, as Node's `clearTimeout` is: it never cancels another clock's timer nor
   * miscounts {@link pendingTimers}.
   */
  clearTimer(timer: Timer): void {
    this.#heap.cancel(timer as unknown as HeapTimer);
  }

  afterIo(fn: () => void): void {
    if (typeof fn !== 'function') throw new TypeError(`afterIo(fn) needs a function, got ${typeof fn}`);
    this.#io.push(fn);
  }

  /** Moves time by `ms` without firing timers: the event loop was blocked that long. */
  stall(ms: number): void {
    this.#now += amount('stall', ms);
  }

  /** Number of armed timers, for leak checks. */
  pendingTimers(): number {
    return this.#heap.size;
  }

  /** Moves the wall clock only (monotonic time is unaffected); `ms` may be negative, not NaN or infinite. */
  skewWall(ms: number): void {
    if (!Number.isFinite(ms)) throw new RangeError(`skewWall(ms) needs a finite ms, got ${ms}`);
    this.#epochOffset += ms;
  }

  /**
   * Moves time forward by `ms`, firing every timer due on the way, in order. A timer that throws does
   * not stop the clock: the others due fire, time reaches its target, and then the first error is
   * thrown (as @sinonjs/fake-timers' `tick` does), so a test that catches it reads the clock it asked for.
   */
  advance(ms: number): void {
    const target = this.#now + amount('advance', ms);
    const errors: unknown[] = [];
    const instant = new Instant('advance');
    for (let next = this.#heap.peek(); next !== undefined && next.due <= target; next = this.#heap.peek()) {
      if (next.due > this.#now && this.#io.length > 0) {
        this.#runIo('advance', errors); // the loop turn of the current instant ends first; it may arm or clear timers
        continue;
      }
      const at = Math.max(this.#now, next.due);
      instant.fire(at, errors);
      this.#heap.pop();
      this.#now = at;
      run(next.fn, errors);
    }
    this.#runIo('advance', errors);
    // Never back: a timer callback may itself have advanced the clock past this move's target.
    if (target > this.#now) this.#now = target;
    if (errors.length > 0) throw errors[0];
  }

  /**
   * Runs the `afterIo` callbacks queued so far (and those they queue), giving up between batches
   * once RUNAWAY_LIMIT have run: a callback that queues itself again would never let the turn end.
   */
  #runIo(method: string, errors: unknown[]): void {
    let ran = 0;
    while (this.#io.length > 0) {
      if (ran >= RUNAWAY_LIMIT) {
        throw runaway(
          `${method}: ${ran} afterIo callbacks ran at ${this.#now} ms and more are queued; an afterIo callback queues itself?`,
          errors,
        );
      }
      const batch = this.#io;
      this.#io = [];
      ran += batch.length;
      for (const fn of batch) run(fn, errors);
    }
  }

  /**
   * Like `advance`, but drains pending promise work before each timer and at the end, so async code
   * scheduled by a timer (or by a resolved promise) gets to arm its own timers in time.
   */
  advanceAsync(ms: number): Promise<void> {
    return this.#advanceAsync('advanceAsync', ms);
  }

  async #advanceAsync(method: string, ms: number): Promise<void> {
    const target = this.#now + amount(method, ms);
    const errors: unknown[] = [];
    const instant = new Instant(method);
    await flushMicrotasks();
    for (let next = this.#heap.peek(); next !== undefined && next.due <= target; next = this.#heap.peek()) {
      if (next.due > this.#now && this.#io.length > 0) {
        this.#runIo(method, errors);
        await flushMicrotasks();
        continue; // an afterIo callback may have armed an earlier timer
      }
      const at = Math.max(this.#now, next.due);
      instant.fire(at, errors);
      this.#heap.pop();
      this.#now = at;
      run(next.fn, errors);
      await flushMicrotasks();
    }
    this.#runIo(method, errors);
    await flushMicrotasks();
    // Never back: another move (an advance not awaited, one run by a timer) may have gone further.
    if (target > this.#now) this.#now = target;
    await flushMicrotasks();
    if (errors.length > 0) throw errors[0];
  }

  /**
   * Advances until no timer is left (at most `limit` timers, to stop runaway loops; `limit` a number
   * >= 0, else a RangeError). An idle clock returns at once, whatever the limit.
   */
  async runAllAsync(limit = RUNAWAY_LIMIT): Promise<void> {
    if (typeof limit !== 'number' || !(limit >= 0)) {
      throw new RangeError(`runAllAsync(limit) needs a number >= 0, got ${String(limit)}`);
    }
    for (let fired = 0; ; fired += 1) {
      const next = this.#heap.peek();
      if (next === undefined) return;
      if (fired >= limit) {
        throw new Error(`runAllAsync: more than ${limit} timers fired; a timer re-arms itself forever?`);
      }
      await this.#advanceAsync('runAllAsync', Math.max(0, next.due - this.#now));
    }
  }
}

/**
 * A finite, non-negative amount of time to move by. Time never moves backwards, and an infinite move
 * would leave `now()` at Infinity for good (every deadline then reads NaN or 0 left) and never end
 * while a timer re-arms itself (a deadline beyond a timer's range does, every 24.8 days).
 */
function amount(method: string, ms: number): number {
  if (typeof ms !== 'number' || !(ms >= 0) || ms === Number.POSITIVE_INFINITY) {
    throw new RangeError(`${method}(ms) needs a finite ms >= 0, got ${ms}`);
  }
  return ms;
}

/**
 * Counts the timers a move fires at one instant, and stops the move (before firing one more) once
 * RUNAWAY_LIMIT have fired there: time moving on resets the count.
 */
class Instant {
  #at = Number.NaN;
  #fired = 0;

  constructor(readonly method: string) {}

  fire(at: number, errors: readonly unknown[]): void {
    if (at !== this.#at) {
      this.#at = at;
      this.#fired = 0;
    }
    if (this.#fired >= RUNAWAY_LIMIT) {
      throw runaway(
        `${this.method}: ${this.#fired} timers fired at ${at} ms and more are due there; a timer re-arms itself at 0 ms?`,
        errors,
      );
    }
    this.#fired += 1;
  }
}

/** The error that stops a runaway move; the first error a callback threw on the way is its cause. */
function runaway(message: string, errors: readonly unknown[]): Error {
  return errors.length > 0 ? new Error(message, { cause: errors[0] }) : new Error(message);
}

/** Runs a timer's or an afterIo callback, keeping what it throws for the end of the move. */
function run(fn: () => void, errors: unknown[]): void {
  try {
    fn();
  } catch (error) {
    errors.push(error);
  }
}

/** Lets queued promise reactions (and the ones they queue, a few levels deep) run. */
async function flushMicrotasks(): Promise<void> {
  for (let i = 0; i < 3; i += 1) await new Promise<void>((resolve) => setImmediate(resolve));
}
