import { defineOptions, type OptionsOf, option } from '../options/declare.js';
import { readOptions } from '../options/validator.js';
import { type Clock, clampDelay, type Timer } from './clock.js';
import { type HeapTimer, TimerHeap } from './timer-heap.js';

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

  setTimer(fn: () => void, delayMs: number): Timer {
    const timer: HeapTimer = { due: this.#now + clampDelay(delayMs), seq: this.#seq++, fn, cancelled: false };
    this.#heap.push(timer);
    return timer as unknown as Timer;
  }

  clearTimer(timer: Timer): void {
    this.#heap.cancel(timer as unknown as HeapTimer);
  }

  afterIo(fn: () => void): void {
    this.#io.push(fn);
  }

  /** Moves time by `ms` without firing timers: the event loop was blocked that long. */
  stall(ms: number): void {
    if (!(ms >= 0)) throw new RangeError(`stall(ms) needs ms >= 0, got ${ms}`);
    this.#now += ms;
  }

  /** Number of armed timers, for leak checks. */
  pendingTimers(): number {
    return this.#heap.size;
  }

  /** Moves the wall clock only (monotonic time is unaffected). */
  skewWall(ms: number): void {
    this.#epochOffset += ms;
  }

  /** Moves time forward by `ms`, firing every timer due on the way, in order. */
  advance(ms: number): void {
    if (!(ms >= 0)) throw new RangeError(`advance(ms) needs ms >= 0, got ${ms}`);
    const target = this.#now + ms;
    for (let next = this.#heap.peek(); next !== undefined && next.due <= target; next = this.#heap.peek()) {
      if (next.due > this.#now && this.#io.length > 0) {
        this.#runIo(); // the loop turn of the current instant ends first; it may arm or clear timers
        continue;
      }
      this.#heap.pop();
      this.#now = Math.max(this.#now, next.due);
      next.fn();
    }
    this.#runIo();
    this.#now = target;
  }

  /** Runs the `afterIo` callbacks queued so far (and those they queue). */
  #runIo(): void {
    while (this.#io.length > 0) {
      const batch = this.#io;
      this.#io = [];
      for (const fn of batch) fn();
    }
  }

  /**
   * Like `advance`, but drains pending promise work before each timer and at the end, so async code
   * scheduled by a timer (or by a resolved promise) gets to arm its own timers in time.
   */
  async advanceAsync(ms: number): Promise<void> {
    if (!(ms >= 0)) throw new RangeError(`advanceAsync(ms) needs ms >= 0, got ${ms}`);
    const target = this.#now + ms;
    await flushMicrotasks();
    for (let next = this.#heap.peek(); next !== undefined && next.due <= target; next = this.#heap.peek()) {
      if (next.due > this.#now && this.#io.length > 0) {
        this.#runIo();
        await flushMicrotasks();
        continue; // an afterIo callback may have armed an earlier timer
      }
      this.#heap.pop();
      this.#now = Math.max(this.#now, next.due);
      next.fn();
      await flushMicrotasks();
    }
    this.#runIo();
    await flushMicrotasks();
    this.#now = target;
    await flushMicrotasks();
  }

  /** Advances until no timer is left (at most `limit` timers, to stop runaway loops). */
  async runAllAsync(limit = 100_000): Promise<void> {
    for (let i = 0; i < limit; i += 1) {
      const next = this.#heap.peek();
      if (next === undefined) return;
      await this.advanceAsync(next.due - this.#now);
    }
    throw new Error(`runAllAsync: more than ${limit} timers fired; a timer re-arms itself forever?`);
  }
}

/** Lets queued promise reactions (and the ones they queue, a few levels deep) run. */
async function flushMicrotasks(): Promise<void> {
  for (let i = 0; i < 3; i += 1) await new Promise<void>((resolve) => setImmediate(resolve));
}
