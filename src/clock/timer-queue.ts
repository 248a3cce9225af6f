import { type Clock, runAfterIo, type Timer } from './clock.js';

/**
 * Many timers of one delay on one clock, kept as a queue behind a single clock timer. Every attempt of
 * a dependency is bounded by the same calibrated timeout, so its bounds come due in the order they
 * were armed: a first-in-first-out list holds them, and only its head needs a real timer. Arming and
 * cancelling cost an array store each, where a Node timer costs an allocation, a read of the loop's
 * time and its ref accounting (measured: a fifth of the executor's fixed cost per call). A cancelled
 * entry is dropped when it reaches the head; the clock timer is re-armed for the next live one. When
 * the last live entry is cancelled the timer is kept until the pending I/O has been read
 * (`clock.afterIo`), and cleared then if nothing was armed meanwhile: calls that follow each other
 * (each one's bound cancelled before the next is armed) share one timer instead of arming one each,
 * and an idle dependency still holds none.
 *
 * Entries must be armed with `now` readings of the queue's own clock, in non-decreasing order (a
 * monotonic clock's). The clock timer is unref'd, like the attempt timers it stands for.
 */
/** The method a queued entry is run by (a symbol: an attempt handed to user code does not show it). */
export const ON_DUE: unique symbol = Symbol('prazo.onDue');

/** What a {@link TimerQueue} runs when its bound comes due: the bounded object itself, no closure. */
export interface QueuedBound {
  [ON_DUE](): void;
}

export class TimerQueue {
  readonly delayMs: number;
  readonly #clock: Clock;
  #fns: Array<QueuedBound | undefined> = [];
  #due: number[] = [];
  /** Index in the arrays of the head; `#base + index` is an entry's handle. */
  #head = 0;
  #base = 0;
  #timer: Timer | undefined;
  /** Entries armed, neither run nor cancelled. */
  #live = 0;
  /** True while due entries run: the timer is re-armed once they are done, for the next live one. */
  #firing = false;
  #idleCheck = false;
  readonly #checkIdle = (): void => {
    this.#idleCheck = false;
    if (this.#live === 0) this.#clear();
  };
  readonly #fire = (): void => this.#onTimer();

  constructor(clock: Clock, delayMs: number) {
    this.#clock = clock;
    this.delayMs = delayMs;
  }

  /**
   * Runs `entry`'s {@link ON_DUE} `delayMs` after `now` (a reading of this queue's clock just taken).
   * Returns a handle.
   */
  add(entry: QueuedBound, now: number): number {
    const index = this.#fns.length;
    this.#fns.push(entry);
    this.#due.push(now + this.delayMs);
    this.#live += 1;
    if (this.#timer === undefined && !this.#firing) this.#arm(this.delayMs);
    return this.#base + index;
  }

  /** Cancels the entry `handle`; a no-op when it already ran or was cancelled. */
  cancel(handle: number): void {
    const index = handle - this.#base;
    if (index < this.#head || index >= this.#fns.length || this.#fns[index] === undefined) return;
    this.#fns[index] = undefined;
    this.#live -= 1;
    if (index === this.#head && !this.#firing) {
      // The head went (the usual case: calls end in the order they started): drop it now.
      let head = index + 1;
      const fns = this.#fns;
      while (head < fns.length && fns[head] === undefined) head += 1;
      this.#head = head;
      this.#compact();
    }
    if (this.#live > 0 || this.#firing || this.#idleCheck) return;
    this.#idleCheck = true;
    runAfterIo(this.#clock, this.#checkIdle);
  }

  /** Nothing left to wait for: no timer, and the arrays start over. */
  #clear(): void {
    if (this.#timer !== undefined) this.#clock.clearTimer(this.#timer);
    this.#timer = undefined;
    this.#base += this.#fns.length;
    this.#fns = [];
    this.#due = [];
    this.#head = 0;
  }

  /** Entries armed and not yet run nor cancelled. */
  get size(): number {
    return this.#live;
  }

  #arm(delayMs: number): void {
    this.#timer = this.#clock.setTimer(this.#fire, delayMs, { unref: true });
  }

  #onTimer(): void {
    this.#timer = undefined;
    const now = this.#clock.now();
    this.#firing = true;
    try {
      // Only what was due when the timer fired: an entry armed by a callback below waits its turn.
      // A callback may cancel every entry left, which starts the arrays over: read them anew.
      while (this.#head < this.#fns.length) {
        const i = this.#head;
        const entry = this.#fns[i];
        if (entry !== undefined && this.#due[i]! > now) break;
        this.#fns[i] = undefined;
        this.#head = i + 1;
        if (entry !== undefined) {
          this.#live -= 1;
          entry[ON_DUE]();
        }
      }
    } finally {
      // Also when an entry threw: the entries after it still need their timer, or they never run.
      this.#firing = false;
      this.#compact();
      if (this.#timer === undefined && this.#live > 0) {
        const next = this.#nextDelay(this.#clock.now());
        if (next !== Number.POSITIVE_INFINITY) this.#arm(next);
      }
    }
  }

  /** Delay to the next live entry (skipping cancelled ones at the head). */
  #nextDelay(now: number): number {
    while (this.#head < this.#fns.length && this.#fns[this.#head] === undefined) this.#head += 1;
    this.#compact();
    if (this.#head >= this.#fns.length) return Number.POSITIVE_INFINITY;
    const left = this.#due[this.#head]! - now;
    return left > 0 ? left : 0;
  }

  /** Drops the consumed part of the arrays once it is the larger part (amortised O(1)). */
  #compact(): void {
    const head = this.#head;
    if (head > 1_024 && head * 2 > this.#fns.length) {
      this.#base += head;
      this.#fns = this.#fns.slice(head);
      this.#due = this.#due.slice(head);
      this.#head = 0;
    }
  }
}

/**
 * Queues for a delay that changes now and then: a hedge is sent after the live p95, which moves when
 * the recorder's window rotates. Each delay gets its queue; the latest is kept, an earlier one serves
 * the entries it holds and lets its timer go once they are done. A source whose delay changed on every
 * call would make a queue per call, no worse than the timer each would arm.
 */
export class TimerQueues {
  readonly #clock: Clock;
  #last: TimerQueue | undefined;

  constructor(clock: Clock) {
    this.#clock = clock;
  }

  /** The queue of `delayMs` (ms, finite). */
  of(delayMs: number): TimerQueue {
    const last = this.#last;
    if (last !== undefined && last.delayMs === delayMs) return last;
    const queue = new TimerQueue(this.#clock, delayMs);
    this.#last = queue;
    return queue;
  }
}
