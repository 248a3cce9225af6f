import type { Deadline } from '../deadline/deadline.js';
import { mapTransportError } from './errors.js';
import type { AttemptScope, UndiciHandler } from './handler.js';
import { BODY, DONE, PhaseTimer, QUEUED, RESPONSE } from './phase-timer.js';
import { SignalWatch } from './signal-watch.js';

/**
 * One attempt of one HTTP call, as an undici dispatch handler wrapped around undici's own request
 * handler (SPEC C2, D5, D6): the only per-attempt object prazo adds to undici's path. Its phases are
 * timed by {@link PhaseTimer} (one timer); ending it early needs no AbortController and no
 * AbortSignal.any: undici hands the handler an `abort` function, which destroys the socket (the
 * connection is released, not reused). Signals are listened to only when they exist: the caller's
 * own, and the executor's when a hedge races ({@link follow}); creating one per attempt would cost
 * more than the rest of this class.
 */

export type { AttemptScope, UndiciHandler } from './handler.js';

export class Attempt extends PhaseTimer implements UndiciHandler {
  /** undici's request handler, set at dispatch. */
  inner!: UndiciHandler;
  #abort: ((reason?: Error) => void) | undefined;
  #watch: SignalWatch | undefined;
  #error: Error | undefined;
  #dispatched = false;

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
    super(scope, deadline, attemptMs, responseMs, bodyMs);
    if (signal !== undefined) this.follow(signal);
  }

  /** True once the attempt completed or failed. */
  get done(): boolean {
    return this.phase === DONE;
  }

  /** Ends the attempt when `signal` aborts (with its reason): the caller's, or a racing executor's. */
  follow(signal: AbortSignal): void {
    if (this.phase === DONE) return;
    if (signal.aborted) this.expire(signal.reason ?? new Error('aborted'));
    else {
      this.#watch ??= new SignalWatch((reason) => this.expire(reason));
      this.#watch.add(signal);
    }
  }

  /**
   * Called once dispatch returned: a request still waiting for a socket gets its bound. Dispatch runs
   * in the same synchronous step as the constructor, so its instant stands for now (a timer armed from
   * it fires at most those microseconds late, and re-checks its bound when it does).
   */
  dispatched(): void {
    this.#dispatched = true;
    if (this.phase === QUEUED) this.guardHead(this.startedAt);
  }

  onConnect(abort: (reason?: Error) => void, context?: object): void {
    if (this.phase === DONE) {
      // Already failed (deadline or caller) while queued: never written. Not `abort()`, which also
      // destroys the healthy connection this request was about to use; undici drops a request whose
      // onConnect throws from its queue and hands the connection to the next one.
      throw this.#error ?? new Error('aborted');
    }
    this.#abort = abort;
    // On a kept-alive connection undici writes the request inside dispatch: no need to read the clock.
    // Nor when `responseMs` cannot end before the attempt's own limit: the request's instant then
    // bounds nothing (its phase ends with the attempt), so the attempt's start stands for it.
    const now =
      this.#dispatched && this.responseMs < this.attemptMs ? this.scope.clock.now() : this.startedAt;
    this.phase = RESPONSE;
    this.phaseAt = now;
    this.guardHead(now);
    this.inner.onConnect(abort, context);
  }

  onResponseStarted(): void {
    this.inner.onResponseStarted?.();
  }

  onHeaders(status: number, headers: Buffer[], resume: () => void, statusText: string): boolean | undefined {
    if (status < 200 || this.phase !== RESPONSE)
      return this.inner.onHeaders(status, headers, resume, statusText);
    this.phase = BODY;
    this.guardBody();
    const onResume = (): void => {
      this.paused = false;
      this.lastDataAt = this.scope.clock.now();
      resume();
    };
    return this.inner.onHeaders(status, headers, onResume, statusText);
  }

  onData(chunk: Buffer): boolean | undefined {
    this.progressed();
    const more = this.inner.onData(chunk);
    if (more === false) this.paused = true;
    return more;
  }

  onComplete(trailers: string[] | null): void {
    if (this.phase === DONE) return;
    this.#finish();
    this.inner.onComplete(trailers);
  }

  onError(error: Error): void {
    if (this.phase === DONE) return;
    const { name, clock, connectTimeoutMs } = this.scope;
    const reported =
      this.#error ??
      (mapTransportError(error, {
        dependency: name,
        elapsedMs: clock.now() - this.startedAt,
        connectTimeoutMs,
        responseTimeoutMs: this.responseMs,
        bodyTimeoutMs: this.bodyMs,
      }) as Error);
    this.#finish();
    this.inner.onError(reported);
  }

  /** Ends the attempt with `error`: aborts the request in flight, or settles a queued one at once. */
  protected expire(error: Error): void {
    if (this.phase === DONE || this.#error !== undefined) return;
    this.#error = error;
    if (this.#abort !== undefined) this.#abort(error); // undici calls onError(error) back
    if (this.phase !== DONE) this.onError(error);
  }

  #finish(): void {
    this.phase = DONE;
    this.stopTimer();
    this.#watch?.clear();
  }
}
