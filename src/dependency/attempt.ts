import { type Clock, LATE_TIMER_MS, MAX_TIMER_DELAY_MS, runAfterIo, type Timer } from '../clock/clock.js';
import { ON_DUE, type QueuedBound, type TimerQueue } from '../clock/timer-queue.js';
import type { Deadline } from '../deadline/deadline.js';
import { DeadlineExceededError } from '../errors/deadline.js';
import { ResponseTimeoutError } from '../errors/timeout.js';
import type { ConcurrencyLimiter } from '../limit/limiter.js';
import { IDEMPOTENCY_KEY_HEADER } from '../retry/constants.js';
import type { DependencyCore } from './core.js';
import type { AttemptTrace } from './trace.js';
import type { AttemptSlice, Carrier } from './transport.js';
import type { AttemptContext, AttemptKind, Operation } from './types.js';

/** What an attempt reports to the execution that started it. */
export interface AttemptOwner<T, C extends Carrier> {
  /** The plan the call runs with: the attempt reads its name, clock, timers and header format there. */
  readonly core: DependencyCore;
  readonly deadline: Deadline;
  readonly idempotencyKey: string | undefined;
  /** The attempt settled: `ok` with a value, or failed with `value` as the error. */
  ended(attempt: Attempt<T, C>, ok: boolean, value: unknown, timedOut: boolean): void;
  /** The attempt was cancelled (hedge lost, caller aborted): it has no outcome of its own. */
  cancelled(attempt: Attempt<T, C>): void;
  /** A value that arrived after the attempt was over (timed out or cancelled): release it. */
  late(value: T): void;
  /** A timer of this call fired `lateMs` after its instant: the event loop was busy (an event). */
  timerLate(lateMs: number): void;
}

/**
 * One attempt of a call as the executor slices it (final: nothing outside src/dependency extends
 * it): the {@link AttemptSlice} its transport's {@link Carrier} runs, the {@link AttemptContext} an
 * `execute` operation receives, and its fate, reported once to the execution (`report`, or
 * `cancel` when the execution ends it first).
 *
 * How an attempt is bounded is the carrier's, so that one timer, not two, guards it: an `execute`
 * attempt is its own carrier and arms one timer around its operation's promise ({@link runs});
 * prazo/http's attempt times its own phases. Cheap by construction (the executor's fixed cost matters on the HTTP hot path): the
 * AbortController is created only when `signal` is read, the headers and the attempt's own deadline
 * only when read.
 */
export class Attempt<T, C extends Carrier = Carrier>
  implements AttemptContext, AttemptSlice, Carrier, QueuedBound
{
  readonly kind: AttemptKind;
  readonly attempt: number;
  readonly timeoutMs: number;
  readonly connectTimeoutMs: number;
  readonly startedAt: number;
  readonly byDeadline: boolean;
  endedAt = Number.NaN;
  trace: AttemptTrace | undefined = undefined;
  /** What carries it (set right after construction, before it starts). */
  carrier!: C;
  readonly #owner: AttemptOwner<T, C>;
  #over = false;
  #controller: AbortController | undefined;
  #reason: unknown;
  #aborted = false;
  #deadline: Deadline | undefined;
  #headers: Record<string, string> | undefined;
  #permit: ConcurrencyLimiter | undefined;
  /** The operation it runs itself, when it is its own carrier (`execute`: no object besides it). */
  #operation: Operation<T> | undefined;
  #timer: Timer | undefined;
  /** Its place in the dependency's queue of bounds, when the bound is the calibrated timeout. */
  #queued = -1;
  #lateChecked = false;

  constructor(
    owner: AttemptOwner<T, C>,
    kind: AttemptKind,
    attempt: number,
    timeoutMs: number,
    byDeadline: boolean,
    startedAt: number,
  ) {
    this.#owner = owner;
    this.kind = kind;
    this.attempt = attempt;
    this.timeoutMs = timeoutMs;
    const connectTimeoutMs = owner.core.connectTimeoutMs;
    this.connectTimeoutMs = connectTimeoutMs < timeoutMs ? connectTimeoutMs : timeoutMs;
    this.byDeadline = byDeadline;
    this.startedAt = startedAt;
  }

  get done(): boolean {
    return this.#over;
  }

  get dependency(): string {
    return this.#owner.core.name;
  }

  get clock(): Clock {
    return this.#owner.core.clock;
  }

  get timers(): TimerQueue | undefined {
    return this.#owner.core.attemptTimers;
  }

  get callDeadline(): Deadline {
    return this.#owner.deadline;
  }

  get instance(): string | undefined {
    const carrier = this.carrier;
    return carrier === (this as unknown) ? undefined : carrier.instance;
  }

  get signal(): AbortSignal {
    if (this.#controller === undefined) {
      this.#controller = new AbortController();
      if (this.#aborted) this.#controller.abort(this.#reason);
    }
    return this.#controller.signal;
  }

  /** This attempt's deadline: the call's, cut to the end of this attempt's slice. */
  get deadline(): Deadline {
    if (this.#deadline === undefined) {
      const left = this.timeoutMs - (this.clock.now() - this.startedAt);
      this.#deadline = this.#owner.deadline.cap(left);
    }
    return this.#deadline;
  }

  get headers(): Readonly<Record<string, string>> {
    if (this.#headers === undefined) {
      const headers = this.deadline.toHeaders(this.#owner.core.headerFormat);
      const key = this.#owner.idempotencyKey;
      if (key !== undefined) headers[IDEMPOTENCY_KEY_HEADER] = key;
      this.#headers = headers;
    }
    return this.#headers;
  }

  /** The attempt holds a slot of `limiter` (SPEC X7): released once, when it is over on the wire. */
  holdPermit(limiter: ConcurrencyLimiter): void {
    this.#permit = limiter;
  }

  releasePermit(): void {
    const permit = this.#permit;
    if (permit === undefined) return;
    this.#permit = undefined;
    permit.release();
  }

  /** Ends the attempt without an outcome (another attempt won, or the caller gave up). */
  cancel(reason: unknown): void {
    if (this.#over) return;
    this.#over = true;
    this.#abortSignal(reason);
    this.carrier.halt(reason);
    this.#owner.cancelled(this);
  }

  report(ok: boolean, value: unknown, timedOut = false): boolean {
    if (this.#over) {
      if (ok) this.#owner.late(value as T);
      return false;
    }
    this.#over = true;
    if (timedOut) this.#abortSignal(value);
    this.#owner.ended(this, ok, value, timedOut);
    return true;
  }

  timerLate(lateMs: number): void {
    this.#owner.timerLate(lateMs);
  }

  /** Aborts the operation's signal (if it was ever read) with `reason`. */
  #abortSignal(reason: unknown): void {
    this.#aborted = true;
    this.#reason = reason;
    this.#controller?.abort(reason);
  }

  // ── an attempt that runs a promise-returning operation itself (`dependency.execute`) ─────────────

  /**
   * Makes this attempt the carrier of `operation`: one timer, `min(attempt timeout, remaining
   * deadline)`, bounds it. When it fires the attempt is over at once, even if the operation ignores
   * its signal: a late value is handed to `discard`, never returned. A timer that fires late (the
   * loop was blocked) first lets the pending I/O be read: an answer already in the socket wins over a
   * timeout it did not deserve.
   */
  runs(operation: Operation<T>): this {
    this.#operation = operation;
    return this;
  }

  /** Its bound came due in the dependency's queue. */
  [ON_DUE](): void {
    this.#expire();
  }

  /** Arms the timer and runs the operation. Settlement is always asynchronous. */
  start(): void {
    const queue = this.timers;
    if (queue !== undefined && queue.delayMs === this.timeoutMs) {
      this.#queued = queue.add(this, this.startedAt);
    } else this.#arm(this.timeoutMs);
    let pending: Promise<T>;
    try {
      pending = this.#operation!(this);
    } catch (error) {
      pending = Promise.reject(error);
    }
    // A plain value or a foreign thenable is adopted by a native promise, so that a `then` that
    // throws rejects the attempt instead of escaping from `execute` (or from a retry's timer); a
    // native promise whose own `then` throws is caught below.
    if (!(pending instanceof Promise)) pending = Promise.resolve(pending);
    try {
      pending.then(
        (value) => this.#settle(true, value),
        (error: unknown) => this.#settle(false, error),
      );
    } catch (error) {
      // A promise whose own `then` throws (patched, instrumented): the attempt fails with that error,
      // asynchronously as every settlement is.
      Promise.reject(error).catch((reason: unknown) => this.#settle(false, reason));
    }
  }

  halt(): void {
    this.#clearTimer();
    this.releasePermit();
  }

  #settle(ok: boolean, value: unknown): void {
    if (!this.#over) this.#clearTimer();
    this.releasePermit();
    this.report(ok, value);
  }

  /**
   * A timer holds at most 2^31 − 1 ms (24.8 days): a patient attempt under a farther (or endless)
   * deadline is bounded one range at a time ({@link #expire} re-arms), and an endless one by nothing.
   */
  #arm(delayMs: number): void {
    if (delayMs === Number.POSITIVE_INFINITY) return;
    const clamped = delayMs > MAX_TIMER_DELAY_MS ? MAX_TIMER_DELAY_MS : delayMs;
    this.#timer = this.clock.setTimer(() => this.#expire(), clamped, { unref: true });
  }

  #expire(): void {
    this.#timer = undefined;
    this.#queued = -1;
    if (this.#over) return;
    const clock = this.clock;
    const elapsedMs = clock.now() - this.startedAt;
    const timeoutMs = this.timeoutMs;
    if (timeoutMs > MAX_TIMER_DELAY_MS && elapsedMs < timeoutMs) {
      this.#arm(timeoutMs - elapsedMs); // a range of a bound beyond one timer's reach has passed
      return;
    }
    if (!this.#lateChecked && elapsedMs - timeoutMs >= LATE_TIMER_MS) {
      this.#lateChecked = true;
      this.timerLate(elapsedMs - timeoutMs);
      runAfterIo(clock, () => this.#expire());
      return;
    }
    const dependency = this.dependency;
    const error = this.byDeadline
      ? new DeadlineExceededError({ dependency, elapsedMs, deadlineEpochMs: this.#owner.deadline.epochMs() })
      : new ResponseTimeoutError({ dependency, elapsedMs, timeoutMs });
    // The operation was told to stop (its signal aborts): its slot is free for the next call.
    this.releasePermit();
    this.report(false, error, true);
  }

  #clearTimer(): void {
    if (this.#timer !== undefined) {
      this.clock.clearTimer(this.#timer);
      this.#timer = undefined;
    } else if (this.#queued >= 0) {
      this.timers?.cancel(this.#queued);
      this.#queued = -1;
    }
  }
}
