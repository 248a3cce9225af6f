import { type Clock, LATE_TIMER_MS, runAfterIo, type Timer } from '../clock/clock.js';
import { ON_DUE, type QueuedBound } from '../clock/timer-queue.js';
import type { AttemptSlice } from '../dependency/transport.js';
import { DeadlineExceededError } from '../errors/deadline.js';
import { BodyTimeoutError, QueueTimeoutError, ResponseTimeoutError } from '../errors/timeout.js';
import { TIMER_TOLERANCE_MS } from './constants.js';

/** Waiting for a connection (a pooled one to free up, or a connect): nothing written yet. */
export const QUEUED = 0;
/** The request was handed to a socket: waiting for the response head. */
export const RESPONSE = 1;
/** The head arrived: the body flows while the consumer reads. */
export const BODY = 2;
export const DONE = 3;

/**
 * The clock side of an HTTP attempt: where each phase ends, and **one** timer that fires no later than
 * the earliest of those ends (SPEC C2, D5, D6). The executor arms no timer of its own for such an
 * attempt: this one is its bound, read off the executor's slice (`slice`) once, at construction. The timer is re-armed only when a bound moves earlier; a timer that
 * fires before its phase really ended (progress moved the bound later) re-checks and re-arms, so
 * progress costs a timestamp, not a timer. What a fired bound means:
 *
 * - the deadline, in any phase → DEADLINE_EXCEEDED;
 * - still queued at the attempt's limit (the executor's slice, from the attempt's start) →
 *   QUEUE_TIMEOUT: never written, nothing reached the dependency;
 * - before the head, the attempt's limit, or `responseTimeoutMs` from the request written → RESPONSE_TIMEOUT;
 * - after the head, `bodyTimeoutMs` without a chunk while the consumer reads → BODY_TIMEOUT.
 *
 * Node runs expired timers before it reads sockets: after the loop was blocked, a timer fires late
 * with the answer it waits for already in the socket. A timer that fires {@link LATE_TIMER_MS} or
 * more past its instant therefore lets the pending I/O be read (`clock.afterIo`) before deciding, and
 * says so (`timer-late` event): a blocked loop does not fabricate timeouts.
 */
export abstract class PhaseTimer implements QueuedBound {
  /** The executor's slice of this attempt: its number, kind, limit, and how it reports back. */
  readonly slice: AttemptSlice;
  protected readonly clock: Clock;
  /** The call's deadline, as an instant of `clock`. */
  protected readonly deadlineAt: number;
  /**
   * The instant the attempt's own limit ends (`startedAt + timeoutMs`, never past the
   * deadline): its bound, and what its deadline headers tell the next hop.
   */
  readonly attemptEndAt: number;
  /** From the request written to the response head, in ms. */
  protected readonly responseTimeoutMs: number;
  /** Longest silence between body chunks while the consumer reads, in ms. */
  protected readonly bodyTimeoutMs: number;
  protected phase = QUEUED;
  protected phaseAt = 0;
  protected lastDataAt = 0;
  protected paused = false;
  #timer: Timer | undefined;
  /** Its place in the dependency's queue of bounds, when the bound armed is the calibrated one. */
  #queued = -1;
  #due = Number.POSITIVE_INFINITY;
  #deferred = false;
  #deferredPhase = QUEUED;
  /** The clock timer's callback, made the first time one is armed (most attempts' bound is queued). */
  #fire: (() => void) | undefined;

  protected constructor(slice: AttemptSlice, responseTimeoutMs: number, bodyTimeoutMs: number) {
    this.slice = slice;
    const { callDeadline: deadline, clock, startedAt } = slice;
    this.clock = clock;
    // Same clock (the common case): the deadline's own instant, without reading the clock again.
    this.deadlineAt = deadline.clock === clock ? deadline.at : startedAt + deadline.remainingMs();
    const endAt = startedAt + slice.timeoutMs;
    this.attemptEndAt = endAt < this.deadlineAt ? endAt : this.deadlineAt;
    this.responseTimeoutMs = responseTimeoutMs;
    this.bodyTimeoutMs = bodyTimeoutMs;
  }

  /** A bound was reached: end the attempt with this error. */
  protected abstract expire(error: Error): void;

  /** Arms the timer for the current phase's bound (queued, or request written). */
  protected guardHead(now: number): void {
    const end = this.attemptEndAt;
    this.#armBy(this.phase === RESPONSE ? Math.min(end, this.phaseAt + this.responseTimeoutMs) : end, now);
  }

  /**
   * The head arrived at `now`: the body's silence is counted from here. The timer already armed (the
   * attempt's limit, or the deadline) stays when the body's own bound is later (the default: the body
   * timeout is the attempt timeout): a body that completes before it, as most do, costs no timer of
   * its own, and one still flowing when it fires is given its bound then. A tighter body timeout
   * re-arms it earlier.
   */
  protected guardBody(now: number): void {
    this.lastDataAt = now;
    this.#armBy(Math.min(now + this.bodyTimeoutMs, this.deadlineAt), now);
  }

  /** A body chunk arrived: its instant restarts the body's silence (read only while a bound is armed). */
  protected progressed(): void {
    if (this.#due !== Number.POSITIVE_INFINITY) this.lastDataAt = this.clock.now();
  }

  /** The consumer reads again: the body's silence is counted from now. */
  protected reading(): void {
    this.paused = false;
    this.lastDataAt = this.clock.now();
  }

  protected stopTimer(): void {
    if (this.#timer !== undefined) this.clock.clearTimer(this.#timer);
    else if (this.#queued >= 0) this.slice.timers?.cancel(this.#queued);
    this.#timer = undefined;
    this.#queued = -1;
    this.#due = Number.POSITIVE_INFINITY;
  }

  /** Its bound came due in the dependency's queue. */
  [ON_DUE](): void {
    this.#onTimer();
  }

  #onTimer(): void {
    const due = this.#due;
    this.#timer = undefined;
    this.#queued = -1;
    this.#due = Number.POSITIVE_INFINITY;
    if (this.phase === DONE) return;
    const now = this.clock.now();
    if (!this.#deferred && now - due >= LATE_TIMER_MS) {
      // Fired late: what it guards may have arrived meanwhile, unread. Read it first, then decide.
      this.#deferred = true;
      this.#deferredPhase = this.phase;
      this.slice.timerLate(now - due);
      runAfterIo(this.clock, () => this.#onAfterIo());
      return;
    }
    this.#decide(now);
  }

  #onAfterIo(): void {
    // The phase moved on meanwhile (the head arrived, the attempt ended): its own guard decides.
    if (this.phase !== this.#deferredPhase || this.#due !== Number.POSITIVE_INFINITY) return;
    this.#decide(this.clock.now());
  }

  /** Fails the attempt at the earliest bound crossed by `now`, or arms the timer for the next one. */
  #decide(now: number): void {
    const due = (at: number): boolean => now >= at - TIMER_TOLERANCE_MS;
    const dependency = this.slice.dependency;
    if (due(this.deadlineAt)) {
      const elapsedMs = now - this.slice.startedAt;
      const deadlineEpochMs = this.slice.callDeadline.epochMs();
      this.expire(new DeadlineExceededError({ dependency, elapsedMs, deadlineEpochMs }));
    } else if (this.phase === BODY) {
      // A consumer that is not reading is no stalled body: its silence starts when it reads again.
      const since = this.paused ? now : this.lastDataAt;
      if (!due(since + this.bodyTimeoutMs))
        this.#armBy(Math.min(since + this.bodyTimeoutMs, this.deadlineAt), now);
      else
        this.expire(
          new BodyTimeoutError({ dependency, elapsedMs: now - since, timeoutMs: this.bodyTimeoutMs }),
        );
    } else if (due(this.attemptEndAt)) {
      const details = {
        dependency,
        elapsedMs: now - this.slice.startedAt,
        timeoutMs: this.slice.timeoutMs,
      };
      this.expire(this.phase === QUEUED ? new QueueTimeoutError(details) : new ResponseTimeoutError(details));
    } else if (this.phase === RESPONSE && due(this.phaseAt + this.responseTimeoutMs)) {
      const elapsedMs = now - this.phaseAt;
      this.expire(new ResponseTimeoutError({ dependency, elapsedMs, timeoutMs: this.responseTimeoutMs }));
    } else {
      this.guardHead(now);
    }
  }

  /** Makes sure the timer fires no later than `at`: one timer, re-armed only when `at` is earlier. */
  #armBy(at: number, now: number): void {
    if (at === Number.POSITIVE_INFINITY) return;
    if (this.#due !== Number.POSITIVE_INFINITY) {
      if (this.#due <= at) return;
      this.stopTimer();
    }
    this.#due = at;
    this.#deferred = false;
    const queue = this.slice.timers;
    // The attempt's own calibrated limit (most attempts': not cut by the deadline): the shared queue.
    if (at === this.attemptEndAt && queue !== undefined && queue.delayMs === this.slice.timeoutMs) {
      this.#queued = queue.add(this, this.slice.startedAt);
    } else {
      this.#fire ??= () => this.#onTimer();
      this.#timer = this.clock.setTimer(this.#fire, at - now, { unref: true });
    }
  }
}
