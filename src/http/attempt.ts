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
 * - queued / connecting: bounded by the deadline (the connect itself by the connector's timer);
 * - request written → response head: `min(responseTimeoutMs, deadline)` → RESPONSE_TIMEOUT;
 * - head → end of body: no chunk for `bodyTimeoutMs` while the consumer is reading → BODY_TIMEOUT;
 * - any phase: the deadline → DEADLINE_EXCEEDED, the phase error when the phase's own limit is hit.
 *
 * Under the executor, whose own attempt timer already bounds everything up to the head, the head
 * phases are left to it (`responseTimeoutMs = Infinity`) unless a tighter response timeout was asked:
 * the attempt then arms its timer only at the head, for the body.
 *
 * A timer that fires early (the bound moved later) re-checks and re-arms, so progress costs a
 * timestamp, not a timer. No AbortController and no AbortSignal.any: undici hands the handler an
 * `abort` function, which destroys the socket (the connection is released, not reused).
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
  readonly #deadlineAt: number;
  readonly #responseMs: number;
  readonly #bodyMs: number;
  readonly #startedAt: number;
  readonly #signal: AbortSignal | undefined;
  /** False when someone else (the executor) bounds the phases before the head. */
  readonly #guardHead: boolean;
  #abort: ((reason?: Error) => void) | undefined;
  #onAbort: (() => void) | undefined;
  #phase = QUEUED;
  #phaseAt = 0;
  #lastDataAt = 0;
  #paused = false;
  #timer: Timer | undefined;
  #due = Number.POSITIVE_INFINITY;
  #error: Error | undefined;
  readonly #fire = (): void => this.#onTimer();

  constructor(
    scope: AttemptScope,
    deadline: Deadline,
    responseTimeoutMs: number,
    bodyTimeoutMs: number,
    signal?: AbortSignal,
  ) {
    this.#scope = scope;
    this.#deadline = deadline;
    this.#responseMs = responseTimeoutMs;
    this.#guardHead = responseTimeoutMs !== Number.POSITIVE_INFINITY;
    this.#bodyMs = bodyTimeoutMs;
    const now = scope.clock.now();
    this.#startedAt = now;
    this.#deadlineAt = now + deadline.remainingMs();
    this.#signal = signal;
    if (signal !== undefined) {
      this.#onAbort = () => this.#fail(signal.reason ?? new Error('aborted'));
      signal.addEventListener('abort', this.#onAbort, { once: true });
    }
  }

  /** Called once dispatch returned: a request still waiting for a socket is bounded by the deadline. */
  dispatched(): void {
    if (this.#phase === QUEUED && this.#guardHead) this.#armBy(this.#deadlineAt, this.#scope.clock.now());
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
    if (this.#guardHead) this.#armBy(Math.min(now + this.#responseMs, this.#deadlineAt), now);
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
    const bound = Math.min(now + this.#bodyMs, this.#deadlineAt);
    if (this.#timer === undefined || this.#due > bound) {
      if (this.#timer !== undefined) this.#scope.clock.clearTimer(this.#timer);
      this.#timer = undefined;
      // Armed after the current socket read: a body that completes in it (most) never needs a timer.
      queueMicrotask(this.#fire);
    }
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
    const reported = this.#error ?? (this.#map(error, this.#scope.clock.now()) as Error);
    this.#finish();
    this.inner.onError(reported);
  }

  #map(error: Error, now: number): unknown {
    return mapTransportError(error, {
      dependency: this.#scope.name,
      elapsedMs: now - this.#startedAt,
      connectTimeoutMs: this.#scope.connectTimeoutMs,
      responseTimeoutMs: this.#responseMs,
      bodyTimeoutMs: this.#bodyMs,
    });
  }

  /** Ends the attempt with `error`: aborts the request in flight, or settles a queued one at once. */
  #fail(error: Error): void {
    if (this.#phase === DONE || this.#error !== undefined) return;
    this.#error = error;
    if (this.#abort !== undefined) this.#abort(error); // undici calls onError(error) back
    if (this.#phase !== DONE) this.onError(error);
  }

  #onTimer(): void {
    this.#timer = undefined;
    this.#due = Number.POSITIVE_INFINITY;
    if (this.#phase === DONE) return;
    const now = this.#scope.clock.now();
    if (now >= this.#deadlineAt - TIMER_TOLERANCE_MS) {
      this.#fail(
        new DeadlineExceededError({
          dependency: this.#scope.name,
          elapsedMs: now - this.#startedAt,
          deadlineEpochMs: this.#deadline.epochMs(),
        }),
      );
    } else if (this.#phase === RESPONSE) {
      const bound = this.#phaseAt + this.#responseMs;
      if (now < bound - TIMER_TOLERANCE_MS) this.#armBy(Math.min(bound, this.#deadlineAt), now);
      else this.#fail(this.#phaseError(ResponseTimeoutError, now - this.#phaseAt, this.#responseMs));
    } else if (this.#phase === BODY) {
      const bound = (this.#paused ? now : this.#lastDataAt) + this.#bodyMs;
      if (now < bound - TIMER_TOLERANCE_MS) this.#armBy(Math.min(bound, this.#deadlineAt), now);
      else this.#fail(this.#phaseError(BodyTimeoutError, now - this.#lastDataAt, this.#bodyMs));
    } else {
      this.#armBy(this.#deadlineAt, now);
    }
  }

  #phaseError(
    Kind: typeof ResponseTimeoutError | typeof BodyTimeoutError,
    elapsedMs: number,
    timeoutMs: number,
  ): Error {
    return new Kind({ dependency: this.#scope.name, elapsedMs, timeoutMs });
  }

  /** Makes sure the timer fires no later than `at` (one timer; re-armed only when `at` is earlier). */
  #armBy(at: number, now: number): void {
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
    if (this.#onAbort !== undefined) this.#signal?.removeEventListener('abort', this.#onAbort);
  }
}
