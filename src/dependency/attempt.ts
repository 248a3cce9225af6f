import type { Clock, Timer } from '../clock/clock.js';
import type { Deadline } from '../deadline/deadline.js';
import { DeadlineExceededError } from '../errors/deadline.js';
import { ResponseTimeoutError } from '../errors/timeout.js';
import { IDEMPOTENCY_KEY_HEADER } from '../retry/constants.js';
import type { AttemptContext, AttemptKind, Operation } from './types.js';

/** What an attempt reports to the execution that started it. */
export interface AttemptOwner<T> {
  readonly name: string;
  readonly clock: Clock;
  readonly deadline: Deadline;
  readonly idempotencyKey: string | undefined;
  outgoingHeaders(deadline: Deadline): Record<string, string>;
  /** The attempt settled: `ok` with a value, or failed with `value` as the error. */
  ended(attempt: Attempt<T>, ok: boolean, value: unknown, timedOut: boolean): void;
  /** The attempt was cancelled (hedge lost, caller aborted): it has no outcome of its own. */
  cancelled(attempt: Attempt<T>): void;
  /** A value that arrived after the attempt was over (timed out or cancelled): release it. */
  late(value: T): void;
}

/**
 * One attempt: the {@link AttemptContext} the operation receives, its single timer, and its fate.
 *
 * Cheap by construction (the executor's fixed cost matters on the HTTP hot path): the AbortController
 * is created only when the operation reads `signal`, the headers and the attempt's own deadline only
 * when read, and one timer, `min(attempt timeout, remaining deadline)`, bounds the attempt. When it
 * fires the attempt is over at once, even if the operation ignores its signal: a late value is handed
 * to `discard`, never returned.
 */
export class Attempt<T> implements AttemptContext {
  readonly kind: AttemptKind;
  readonly attempt: number;
  readonly timeoutMs: number;
  readonly connectTimeoutMs: number;
  /** Monotonic ms at which the attempt started. */
  readonly started: number;
  /** True when the remaining deadline, not the attempt timeout, sets this attempt's limit. */
  readonly byDeadline: boolean;
  readonly #owner: AttemptOwner<T>;
  #controller: AbortController | undefined;
  #reason: unknown;
  #aborted = false;
  #timer: Timer | undefined;
  #done = false;
  #deadline: Deadline | undefined;
  #headers: Record<string, string> | undefined;

  constructor(
    owner: AttemptOwner<T>,
    kind: AttemptKind,
    attempt: number,
    timeoutMs: number,
    connectMs: number,
    byDeadline: boolean,
    started: number = owner.clock.now(),
  ) {
    this.#owner = owner;
    this.kind = kind;
    this.attempt = attempt;
    this.timeoutMs = timeoutMs;
    this.connectTimeoutMs = connectMs < timeoutMs ? connectMs : timeoutMs;
    this.byDeadline = byDeadline;
    this.started = started;
  }

  get done(): boolean {
    return this.#done;
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
      const left = this.timeoutMs - (this.#owner.clock.now() - this.started);
      this.#deadline = this.#owner.deadline.cap(left);
    }
    return this.#deadline;
  }

  get headers(): Readonly<Record<string, string>> {
    if (this.#headers === undefined) {
      const headers = this.#owner.outgoingHeaders(this.deadline);
      const key = this.#owner.idempotencyKey;
      if (key !== undefined) headers[IDEMPOTENCY_KEY_HEADER] = key;
      this.#headers = headers;
    }
    return this.#headers;
  }

  /** Arms the timer and runs the operation. Settlement is always asynchronous. */
  start(operation: Operation<T>): void {
    this.#timer = this.#owner.clock.setTimer(() => this.#expire(), this.timeoutMs, { unref: true });
    let pending: Promise<T>;
    try {
      pending = operation(this);
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

  /** Ends the attempt without an outcome (another attempt won, or the caller gave up). */
  cancel(reason: unknown): void {
    if (this.#done) return;
    this.#done = true;
    this.#clearTimer();
    this.#abort(reason);
    this.#owner.cancelled(this);
  }

  #settle(ok: boolean, value: unknown): void {
    if (this.#done) {
      if (ok) this.#owner.late(value as T);
      return;
    }
    this.#done = true;
    this.#clearTimer();
    this.#owner.ended(this, ok, value, false);
  }

  #expire(): void {
    this.#timer = undefined;
    if (this.#done) return;
    this.#done = true;
    const owner = this.#owner;
    const elapsedMs = owner.clock.now() - this.started;
    const error = this.byDeadline
      ? new DeadlineExceededError({
          dependency: owner.name,
          elapsedMs,
          deadlineEpochMs: owner.deadline.epochMs(),
        })
      : new ResponseTimeoutError({ dependency: owner.name, elapsedMs, timeoutMs: this.timeoutMs });
    this.#abort(error);
    owner.ended(this, false, error, true);
  }

  #abort(reason: unknown): void {
    this.#aborted = true;
    this.#reason = reason;
    this.#controller?.abort(reason);
  }

  #clearTimer(): void {
    if (this.#timer !== undefined) {
      this.#owner.clock.clearTimer(this.#timer);
      this.#timer = undefined;
    }
  }
}
