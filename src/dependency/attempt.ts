import { type Clock, LATE_TIMER_MS, runAfterIo, type Timer } from '../clock/clock.js';
import type { TimerQueue } from '../clock/timer-queue.js';
import type { Deadline } from '../deadline/deadline.js';
import { DeadlineExceededError } from '../errors/deadline.js';
import { ResponseTimeoutError } from '../errors/timeout.js';
import type { ConcurrencyLimiter } from '../limit/limiter.js';
import { IDEMPOTENCY_KEY_HEADER } from '../retry/constants.js';
import type { AttemptTrace } from './trace.js';
import type { AttemptContext, AttemptKind, Operation } from './types.js';

/** What an attempt reports to the execution that started it. */
export interface AttemptOwner<T> {
  readonly name: string;
  readonly clock: Clock;
  /** The dependency's queue of calibrated attempt bounds (one clock timer for all of them). */
  readonly attemptTimers: TimerQueue | undefined;
  readonly deadline: Deadline;
  readonly idempotencyKey: string | undefined;
  outgoingHeaders(deadline: Deadline): Record<string, string>;
  /** The attempt settled: `ok` with a value, or failed with `value` as the error. */
  ended(attempt: Attempt<T>, ok: boolean, value: unknown, timedOut: boolean): void;
  /** The attempt was cancelled (hedge lost, caller aborted): it has no outcome of its own. */
  cancelled(attempt: Attempt<T>): void;
  /** A value that arrived after the attempt was over (timed out or cancelled): release it. */
  late(value: T): void;
  /** A timer of this call fired `lateMs` after its instant: the event loop was busy (an event). */
  timerLate(lateMs: number): void;
}

/**
 * One attempt of a call: the {@link AttemptContext} the operation receives, and its fate, reported
 * once to the execution (`ended`, or `cancelled` when the execution ends it first).
 *
 * How an attempt is bounded is the subclass's business, so that one timer, not two, guards it: the
 * generic {@link OperationAttempt} arms one timer around a promise-returning operation; an
 * integration that times its own phases (prazo/http's attempt) arms its own and reports its own
 * timeouts. Cheap by construction (the executor's fixed cost matters on the HTTP hot path): the
 * AbortController is created only when the operation reads `signal`, the headers and the attempt's own
 * deadline only when read.
 */
export abstract class Attempt<T> implements AttemptContext {
  readonly kind: AttemptKind;
  readonly attempt: number;
  readonly timeoutMs: number;
  readonly connectTimeoutMs: number;
  /** Monotonic ms at which the attempt started. */
  readonly started: number;
  /** True when the remaining deadline, not the attempt timeout, sets this attempt's limit. */
  readonly byDeadline: boolean;
  /**
   * The instant its outcome arrived, when the attempt read the clock itself at that moment (NaN
   * otherwise): the execution records the latency from it instead of reading the clock again.
   */
  endedAt = Number.NaN;
  /** Its trace, when the call is traced (src/dependency/trace.ts). */
  trace: AttemptTrace | undefined = undefined;
  protected readonly owner: AttemptOwner<T>;
  #over = false;
  #controller: AbortController | undefined;
  #reason: unknown;
  #aborted = false;
  #deadline: Deadline | undefined;
  #headers: Record<string, string> | undefined;
  #permit: ConcurrencyLimiter | undefined;

  constructor(
    owner: AttemptOwner<T>,
    kind: AttemptKind,
    attempt: number,
    timeoutMs: number,
    connectMs: number,
    byDeadline: boolean,
    started: number,
  ) {
    this.owner = owner;
    this.kind = kind;
    this.attempt = attempt;
    this.timeoutMs = timeoutMs;
    this.connectTimeoutMs = connectMs < timeoutMs ? connectMs : timeoutMs;
    this.byDeadline = byDeadline;
    this.started = started;
  }

  /** True once the attempt reported its outcome or was cancelled. */
  get done(): boolean {
    return this.#over;
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
      const left = this.timeoutMs - (this.owner.clock.now() - this.started);
      this.#deadline = this.owner.deadline.cap(left);
    }
    return this.#deadline;
  }

  get headers(): Readonly<Record<string, string>> {
    if (this.#headers === undefined) {
      const headers = this.owner.outgoingHeaders(this.deadline);
      const key = this.owner.idempotencyKey;
      if (key !== undefined) headers[IDEMPOTENCY_KEY_HEADER] = key;
      this.#headers = headers;
    }
    return this.#headers;
  }

  /** Starts the attempt; the execution calls it once, right after construction. */
  abstract start(): void;

  /**
   * The instance this attempt was sent to, when the dependency is several (an origin, for events and
   * metrics); undefined otherwise.
   */
  get instance(): string | undefined {
    return undefined;
  }

  /** The attempt holds a slot of `limiter` (SPEC X7): released once, when it is over on the wire. */
  holdPermit(limiter: ConcurrencyLimiter): void {
    this.#permit = limiter;
  }

  /** Gives the concurrency limit's slot back (a no-op without one, or the second time). */
  protected releasePermit(): void {
    const permit = this.#permit;
    if (permit === undefined) return;
    this.#permit = undefined;
    permit.release();
  }

  /** Ends the attempt without an outcome (another attempt won, or the caller gave up). */
  cancel(reason: unknown): void {
    if (this.#over) return;
    this.#over = true;
    this.abortSignal(reason);
    this.halt(reason);
    this.owner.cancelled(this);
  }

  /** Stops the work of a cancelled attempt (clears its timer, aborts the request in flight). */
  protected abstract halt(reason: unknown): void;

  /**
   * Reports the outcome, once: false when the attempt was already over (a value is then released).
   * A timeout (`timedOut`) also aborts the attempt's signal, so that the operation stops.
   */
  protected report(ok: boolean, value: unknown, timedOut = false): boolean {
    if (this.#over) {
      if (ok) this.owner.late(value as T);
      return false;
    }
    this.#over = true;
    if (timedOut) this.abortSignal(value);
    this.owner.ended(this, ok, value, timedOut);
    return true;
  }

  /** Aborts the operation's signal (if it was ever read) with `reason`. */
  protected abortSignal(reason: unknown): void {
    this.#aborted = true;
    this.#reason = reason;
    this.#controller?.abort(reason);
  }
}

/**
 * The attempt of a promise-returning operation (`dependency.execute`): one timer,
 * `min(attempt timeout, remaining deadline)`, bounds it. When it fires the attempt is over at once,
 * even if the operation ignores its signal: a late value is handed to `discard`, never returned. A
 * timer that fires late (the loop was blocked) first lets the pending I/O be read: an answer already
 * in the socket wins over a timeout it did not deserve.
 */
export class OperationAttempt<T> extends Attempt<T> {
  readonly #operation: Operation<T>;
  #timer: Timer | undefined;
  /** Its place in the dependency's queue of bounds, when the bound is the calibrated timeout. */
  #queued = -1;
  #lateChecked = false;

  constructor(
    owner: AttemptOwner<T>,
    operation: Operation<T>,
    kind: AttemptKind,
    attempt: number,
    timeoutMs: number,
    connectMs: number,
    byDeadline: boolean,
    started: number,
  ) {
    super(owner, kind, attempt, timeoutMs, connectMs, byDeadline, started);
    this.#operation = operation;
  }

  /** Arms the timer and runs the operation. Settlement is always asynchronous. */
  start(): void {
    const queue = this.owner.attemptTimers;
    if (queue !== undefined && queue.delayMs === this.timeoutMs) {
      this.#queued = queue.add(() => this.#expire(), this.started);
    } else {
      this.#timer = this.owner.clock.setTimer(() => this.#expire(), this.timeoutMs, { unref: true });
    }
    let pending: Promise<T>;
    try {
      pending = this.#operation(this);
    } catch (error) {
      pending = Promise.reject(error);
    }
    // A plain value or a foreign thenable is adopted by a native promise, so that a `then` that
    // throws rejects the attempt instead of escaping from `execute` (or from a retry's timer).
    if (!(pending instanceof Promise)) pending = Promise.resolve(pending);
    pending.then(
      (value) => this.#settle(true, value),
      (error: unknown) => this.#settle(false, error),
    );
  }

  protected halt(): void {
    this.#clearTimer();
    this.releasePermit();
  }

  #settle(ok: boolean, value: unknown): void {
    if (!this.done) this.#clearTimer();
    this.releasePermit();
    this.report(ok, value);
  }

  #expire(): void {
    this.#timer = undefined;
    this.#queued = -1;
    if (this.done) return;
    const owner = this.owner;
    const elapsedMs = owner.clock.now() - this.started;
    if (!this.#lateChecked && elapsedMs - this.timeoutMs >= LATE_TIMER_MS) {
      this.#lateChecked = true;
      owner.timerLate(elapsedMs - this.timeoutMs);
      runAfterIo(owner.clock, () => this.#expire());
      return;
    }
    const error = this.byDeadline
      ? new DeadlineExceededError({
          dependency: owner.name,
          elapsedMs,
          deadlineEpochMs: owner.deadline.epochMs(),
        })
      : new ResponseTimeoutError({ dependency: owner.name, elapsedMs, timeoutMs: this.timeoutMs });
    // The operation was told to stop (its signal aborts): its slot is free for the next call.
    this.releasePermit();
    this.report(false, error, true);
  }

  #clearTimer(): void {
    if (this.#timer !== undefined) {
      this.owner.clock.clearTimer(this.#timer);
      this.#timer = undefined;
    } else if (this.#queued >= 0) {
      this.owner.attemptTimers?.cancel(this.#queued);
      this.#queued = -1;
    }
  }
}
