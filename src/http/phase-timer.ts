import type { Timer } from '../clock/clock.js';
import type { Deadline } from '../deadline/deadline.js';
import { DeadlineExceededError } from '../errors/deadline.js';
import { BodyTimeoutError, ResponseTimeoutError } from '../errors/timeout.js';
import { TIMER_TOLERANCE_MS } from './constants.js';
import type { AttemptScope } from './handler.js';

export const QUEUED = 0;
export const RESPONSE = 1;
export const BODY = 2;
export const DONE = 3;

/**
 * The clock side of an attempt: where each phase ends, and **one** timer that fires no later than the
 * earliest of those ends (SPEC C2, D5, D6). The timer is re-armed only when a bound moves earlier; a
 * timer that fires before its phase really ended (progress moved the bound later) re-checks and
 * re-arms, so progress costs a timestamp, not a timer. What a fired bound means:
 *
 * - the deadline, in any phase → DEADLINE_EXCEEDED;
 * - before the head, the attempt's limit (the executor's slice, from the attempt's start) or
 *   `responseMs` from the request written → RESPONSE_TIMEOUT;
 * - after the head, `bodyMs` without a chunk while the consumer reads → BODY_TIMEOUT.
 */
export abstract class PhaseTimer {
  protected readonly scope: AttemptScope;
  protected readonly deadline: Deadline;
  protected readonly startedAt: number;
  protected readonly deadlineAt: number;
  protected readonly attemptMs: number;
  protected readonly attemptEndAt: number;
  protected readonly responseMs: number;
  protected readonly bodyMs: number;
  protected phase = QUEUED;
  protected phaseAt = 0;
  protected lastDataAt = 0;
  protected paused = false;
  #timer: Timer | undefined;
  #due = Number.POSITIVE_INFINITY;
  #bodyStarting = false;
  readonly #fire = (): void => this.#onTimer();

  protected constructor(
    scope: AttemptScope,
    deadline: Deadline,
    attemptMs: number,
    responseMs: number,
    bodyMs: number,
  ) {
    this.scope = scope;
    this.deadline = deadline;
    const now = scope.clock.now();
    this.startedAt = now;
    // Same clock (the common case): the deadline's own instant, without reading the clock again.
    this.deadlineAt = deadline.clock === scope.clock ? deadline.at : now + deadline.remainingMs();
    this.attemptMs = attemptMs;
    this.attemptEndAt = now + attemptMs;
    this.responseMs = responseMs;
    this.bodyMs = bodyMs;
  }

  /** A bound was reached: end the attempt with this error. */
  protected abstract expire(error: Error): void;

  /** Arms the timer for the current phase's bound (queued, or request written). */
  protected guardHead(now: number): void {
    const end = this.attemptEndAt < this.deadlineAt ? this.attemptEndAt : this.deadlineAt;
    this.#armBy(this.phase === RESPONSE ? Math.min(end, this.phaseAt + this.responseMs) : end, now);
  }

  /**
   * The head arrived: the body is guarded from the end of the current socket read (a microtask, where
   * the clock is read once), so a body that completes in that read, as most do, never arms a timer
   * and never reads the clock at all.
   */
  protected guardBody(): void {
    this.stopTimer();
    this.#bodyStarting = true;
    queueMicrotask(this.#fire);
  }

  /** A body chunk arrived: only a guarded body needs its time (before that, the head's instant holds). */
  protected progressed(): void {
    if (this.#timer !== undefined) this.lastDataAt = this.scope.clock.now();
  }

  protected stopTimer(): void {
    if (this.#timer !== undefined) this.scope.clock.clearTimer(this.#timer);
    this.#timer = undefined;
    this.#due = Number.POSITIVE_INFINITY;
  }

  #onTimer(): void {
    this.#timer = undefined;
    this.#due = Number.POSITIVE_INFINITY;
    if (this.phase === DONE) return;
    const now = this.scope.clock.now();
    if (this.#bodyStarting) {
      this.#bodyStarting = false;
      this.lastDataAt = now; // the head's read ended just now: the body's clock starts here
    }
    const due = (at: number): boolean => now >= at - TIMER_TOLERANCE_MS;
    const dependency = this.scope.name;
    if (due(this.deadlineAt)) {
      const elapsedMs = now - this.startedAt;
      this.expire(
        new DeadlineExceededError({ dependency, elapsedMs, deadlineEpochMs: this.deadline.epochMs() }),
      );
    } else if (this.phase === BODY) {
      const since = this.paused ? now : this.lastDataAt;
      if (!due(since + this.bodyMs)) this.#armBy(Math.min(since + this.bodyMs, this.deadlineAt), now);
      else this.expire(new BodyTimeoutError({ dependency, elapsedMs: now - since, timeoutMs: this.bodyMs }));
    } else if (due(this.attemptEndAt)) {
      const elapsedMs = now - this.startedAt;
      this.expire(new ResponseTimeoutError({ dependency, elapsedMs, timeoutMs: this.attemptMs }));
    } else if (this.phase === RESPONSE && due(this.phaseAt + this.responseMs)) {
      const elapsedMs = now - this.phaseAt;
      this.expire(new ResponseTimeoutError({ dependency, elapsedMs, timeoutMs: this.responseMs }));
    } else {
      this.guardHead(now);
    }
  }

  /** Makes sure the timer fires no later than `at`: one timer, re-armed only when `at` is earlier. */
  #armBy(at: number, now: number): void {
    if (at === Number.POSITIVE_INFINITY) return;
    if (this.#timer !== undefined) {
      if (this.#due <= at) return;
      this.scope.clock.clearTimer(this.#timer);
    }
    this.#due = at;
    this.#timer = this.scope.clock.setTimer(this.#fire, at - now);
  }
}
