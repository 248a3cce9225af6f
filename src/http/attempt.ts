import type { Clock, Timer } from '../clock/clock.js';
import type { Deadline } from '../deadline/deadline.js';
import { DeadlineExceededError } from '../errors/deadline.js';
import { BodyTimeoutError, ResponseTimeoutError } from '../errors/timeout.js';
import { TIMER_TOLERANCE_MS } from './constants.js';
import { mapTransportError } from './errors.js';

/**
 * One attempt of one HTTP call, as an undici dispatch handler wrapped around undici's own request
 * handler (SPEC C2, D5, D6). It is the only per-attempt object prazo adds to undici's path, and it
 * holds **one** timer, re-armed only when the bound moves earlier:
 *
 * - queued / connecting: the attempt's limit and the deadline (the connect itself: the connector);
 * - request written → head: also `responseTimeoutMs` from the write → RESPONSE_TIMEOUT;
 * - head → end of body: no chunk for `bodyTimeoutMs` while the consumer reads → BODY_TIMEOUT;
 * - any phase: the deadline → DEADLINE_EXCEEDED.
 *
 * A timer that fires early (the bound moved later) re-checks and re-arms, so progress costs a
 * timestamp, not a timer. No AbortController, no AbortSignal.any: undici hands the handler an
 * `abort` function, which destroys the socket (the connection is released, not reused). Signals are
 * listened to only when they exist: the caller's own, and the executor's when a hedge races
 * ({@link follow}); creating one per attempt costs more than the rest of this class.
 */

/** undici's dispatch-handler callbacks that its request API uses. */
export interface UndiciHandler {
  onConnect(abort: (reason?: Error) => void, context?: object): void;
  onResponseStarted?(): void;
  onHeaders(status: number, headers: Buffer[], resume: () => void, statusText: string): boolean | undefined;
  onData(chunk: Buffer): boolean | undefined;
  onComplete(trailers: string[] | null): void;
  onError(error: Error): void;
}

/** Per-client settings every attempt reads (built once). */
export interface AttemptScope {
  readonly name: string;
  readonly clock: Clock;
  readonly connectTimeoutMs: number;
}

const QUEUED = 0;
const RESPONSE = 1;
const BODY = 2;
const DONE = 3;

export class Attempt implements UndiciHandler {
  /** undici's request handler, set at dispatch. */
  inner!: UndiciHandler;
  readonly #scope: AttemptScope;
  readonly #deadline: Deadline;
  readonly #startedAt: number;
  readonly #deadlineAt: number;
  readonly #attemptMs: number;
  readonly #attemptEndAt: number;
  readonly #responseMs: number;
  readonly #bodyMs: number;
  #abort: ((reason?: Error) => void) | undefined;
  #signals: AbortSignal[] | undefined;
  #onAbort: (() => void) | undefined;
  #phase = QUEUED;
  #phaseAt = 0;
  #lastDataAt = 0;
  #paused = false;
  #timer: Timer | undefined;
  #due = Number.POSITIVE_INFINITY;
  #error: Error | undefined;
  readonly #fire = (): void => this.#onTimer();

  /**
   * @param deadline the call's deadline (it bounds every phase, the body included)
   * @param attemptMs this attempt's limit up to the head, from now (the executor's slice)
   * @param responseMs from the request written to the head
   * @param bodyMs longest silence between body chunks
   * @param signal the caller's own cancellation, when any
   */
  constructor(
    scope: AttemptScope,
    deadline: Deadline,
    attemptMs: number,
    responseMs: number,
    bodyMs: number,
    signal?: AbortSignal,
  ) {
    this.#scope = scope;
    this.#deadline = deadline;
    const now = scope.clock.now();
    this.#startedAt = now;
    this.#deadlineAt = now + deadline.remainingMs();
    this.#attemptMs = attemptMs;
    this.#attemptEndAt = now + attemptMs;
    this.#responseMs = responseMs;
    this.#bodyMs = bodyMs;
    if (signal !== undefined) this.follow(signal);
  }

  /** True once the attempt completed or failed. */
  get done(): boolean {
    return this.#phase === DONE;
  }

  /** Ends the attempt when `signal` aborts (with its reason): the caller's, or a racing executor's. */
  follow(signal: AbortSignal): void {
    if (this.#phase === DONE) return;
    if (signal.aborted) {
      this.#fail(signal.reason ?? new Error('aborted'));
      return;
    }
    this.#onAbort ??= () => {
      const aborted = this.#signals?.find((s) => s.aborted);
      this.#fail(aborted?.reason ?? new Error('aborted'));
    };
    (this.#signals ??= []).push(signal);
    signal.addEventListener('abort', this.#onAbort, { once: true });
  }

  /** Called once dispatch returned: a request still waiting for a socket gets its bound. */
  dispatched(): void {
    if (this.#phase === QUEUED) this.#armBy(this.#headBound(), this.#scope.clock.now());
  }

  onConnect(abort: (reason?: Error) => void, context?: object): void {
    if (this.#phase === DONE) {
      abort(this.#error); // already failed (deadline or caller) while queued: never written
      return;
    }
    this.#abort = abort;
    const now = this.#scope.clock.now();
    this.#phase = RESPONSE;
    this.#phaseAt = now;
    this.#armBy(this.#headBound(), now);
    this.inner.onConnect(abort, context);
  }

  onResponseStarted(): void {
    this.inner.onResponseStarted?.();
  }

  onHeaders(status: number, headers: Buffer[], resume: () => void, statusText: string): boolean | undefined {
    if (status < 200 || this.#phase !== RESPONSE)
      return this.inner.onHeaders(status, headers, resume, statusText);
    const now = this.#scope.clock.now();
    this.#phase = BODY;
    this.#lastDataAt = now;
    if (this.#timer !== undefined && this.#due > Math.min(now + this.#bodyMs, this.#deadlineAt)) {
      this.#scope.clock.clearTimer(this.#timer);
      this.#timer = undefined;
    }
    // Armed after the current socket read: a body that completes in it (most) never needs a timer.
    if (this.#timer === undefined) queueMicrotask(this.#fire);
    const onResume = (): void => {
      this.#paused = false;
      this.#lastDataAt = this.#scope.clock.now();
      resume();
    };
    return this.inner.onHeaders(status, headers, onResume, statusText);
  }

  onData(chunk: Buffer): boolean | undefined {
    this.#lastDataAt = this.#scope.clock.now();
    const more = this.inner.onData(chunk);
    if (more === false) this.#paused = true;
    return more;
  }

  onComplete(trailers: string[] | null): void {
    if (this.#phase === DONE) return;
    this.#finish();
    this.inner.onComplete(trailers);
  }

  onError(error: Error): void {
    if (this.#phase === DONE) return;
    const now = this.#scope.clock.now();
    const { name, connectTimeoutMs } = this.#scope;
    const reported =
      this.#error ??
      (mapTransportError(error, {
        dependency: name,
        elapsedMs: now - this.#startedAt,
        connectTimeoutMs,
        responseTimeoutMs: this.#responseMs,
        bodyTimeoutMs: this.#bodyMs,
      }) as Error);
    this.#finish();
    this.inner.onError(reported);
  }

  /** Ends the attempt with `error`: aborts the request in flight, or settles a queued one at once. */
  #fail(error: Error): void {
    if (this.#phase === DONE || this.#error !== undefined) return;
    this.#error = error;
    if (this.#abort !== undefined) this.#abort(error); // undici calls onError(error) back
    if (this.#phase !== DONE) this.onError(error);
  }

  /** Where the phases before the head end: the attempt's limit, the deadline, the response timeout. */
  #headBound(): number {
    const end = this.#attemptEndAt < this.#deadlineAt ? this.#attemptEndAt : this.#deadlineAt;
    return this.#phase === RESPONSE ? Math.min(end, this.#phaseAt + this.#responseMs) : end;
  }

  #onTimer(): void {
    this.#timer = undefined;
    this.#due = Number.POSITIVE_INFINITY;
    if (this.#phase === DONE) return;
    const now = this.#scope.clock.now();
    const due = (at: number): boolean => now >= at - TIMER_TOLERANCE_MS;
    const name = this.#scope.name;
    if (due(this.#deadlineAt)) {
      const deadlineEpochMs = this.#deadline.epochMs();
      this.#fail(
        new DeadlineExceededError({ dependency: name, elapsedMs: now - this.#startedAt, deadlineEpochMs }),
      );
    } else if (this.#phase === BODY) {
      const since = this.#paused ? now : this.#lastDataAt;
      if (!due(since + this.#bodyMs)) this.#armBy(Math.min(since + this.#bodyMs, this.#deadlineAt), now);
      else
        this.#fail(
          new BodyTimeoutError({ dependency: name, elapsedMs: now - since, timeoutMs: this.#bodyMs }),
        );
    } else if (due(this.#attemptEndAt)) {
      const elapsedMs = now - this.#startedAt;
      this.#fail(new ResponseTimeoutError({ dependency: name, elapsedMs, timeoutMs: this.#attemptMs }));
    } else if (this.#phase === RESPONSE && due(this.#phaseAt + this.#responseMs)) {
      const elapsedMs = now - this.#phaseAt;
      this.#fail(new ResponseTimeoutError({ dependency: name, elapsedMs, timeoutMs: this.#responseMs }));
    } else {
      this.#armBy(this.#headBound(), now);
    }
  }

  /** Makes sure the timer fires no later than `at` (one timer; re-armed only when `at` is earlier). */
  #armBy(at: number, now: number): void {
    if (at === Number.POSITIVE_INFINITY) return;
    const clock = this.#scope.clock;
    if (this.#timer !== undefined) {
      if (this.#due <= at) return;
      clock.clearTimer(this.#timer);
    }
    this.#due = at;
    this.#timer = clock.setTimer(this.#fire, at - now);
  }

  #finish(): void {
    this.#phase = DONE;
    if (this.#timer !== undefined) this.#scope.clock.clearTimer(this.#timer);
    this.#timer = undefined;
    const onAbort = this.#onAbort;
    if (onAbort !== undefined) for (const s of this.#signals ?? []) s.removeEventListener('abort', onAbort);
  }
}
