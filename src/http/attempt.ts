import { util } from 'undici';
import type { Timer } from '../clock/clock.js';
import { type HeaderFormat, writeDeadlineHeaders } from '../deadline/deadline.js';
import type { AttemptSlice, Carrier } from '../dependency/transport.js';
import {
  checkCore,
  type Dispatch,
  type DispatchController,
  type DispatchHandler,
  type LegacyHandlerMethods,
  learnCore,
  type ResponseHeaders,
} from './handler.js';
import type { Instance, Target } from './instances.js';
import { BODY, DONE, PhaseTimer, QUEUED, RESPONSE } from './phase-timer.js';
import type { WrittenHeadersOwner } from './written.js';

/**
 * A response body drained so that its connection goes back to the pool (a retried 503, a hedge that
 * answered second) is read up to this many bytes; past it the connection is cheaper destroyed.
 */
const DRAIN_LIMIT_BYTES = 128 * 1024;
/** ...and for this long at most: a body that trickles is never silent long enough for a body timeout. */
const DRAIN_LIMIT_MS = 1_000;

/** Where an attempt stands for its call, once its head is in (or it ended). */
const RACING = 0; // no verdict yet
const HELD = 1; // a failed answer (a 503) kept paused while the call decides
const WON = 2; // the call's answer: streams to the caller
const RELEASED = 3; // not the answer: drained (bounded) or torn down
const CANCELLED = 4; // stopped by its call (hedge lost, caller gone)

/** What an attempt asks of its call (`HttpCall`, call.ts): the call is above it, and drives it. */
export interface AttemptCall {
  readonly route: { readonly headerFormat: HeaderFormat };
  /** True while the caller paused the response streaming to it. */
  readonly paused: boolean;
  send(attempt: HttpAttempt): void;
  transportError(error: Error, attempt: HttpAttempt, queued: boolean): Error;
  forwardStart(attempt: HttpAttempt): void;
  /** An informational (1xx) head of `attempt`, before its answer: the caller's `onInfo` hears it. */
  forwardInfo(
    controller: DispatchController,
    statusCode: number,
    headers: ResponseHeaders | undefined,
    statusMessage: string | undefined,
  ): void;
  forwardData(chunk: Buffer): void;
  forwardEnd(trailers: ResponseHeaders): void;
  forwardError(error: Error): void;
  /** `attempt`'s released answer is over (drained, or given up). */
  drainEnded(attempt: HttpAttempt): void;
}

/**
 * One attempt of one HTTP call: a handler on undici's current API, dispatched once (SPEC C2, D5,
 * D6). The executor's attempt and the HTTP one are this single object: it is the `AttemptContext`,
 * the undici handler, and its own bound ({@link PhaseTimer}: one timer for every phase, the executor
 * arms none). Ending it early needs no AbortController: undici hands the handler a controller whose
 * `abort` destroys the socket (the connection is released, not reused); a request still queued is
 * refused when undici gets to it (`onRequestStart` throws), which drops it without touching the
 * connection it was about to use.
 *
 * Its head is its value: the call judges the status (retry, hedge, answer); the winner's response
 * then streams through to the caller, the others are drained or torn down.
 */
export class HttpAttempt extends PhaseTimer implements DispatchHandler, WrittenHeadersOwner, Carrier {
  readonly #call: AttemptCall;
  #controller: DispatchController | undefined;
  #dispatching = false;
  #role: number = RACING;
  /** Why the attempt was ended by prazo (a bound, a cancel): undici reports it back as the error. */
  #reason: Error | undefined;
  /** The response's own failure or end while the attempt was held, replayed if it is delivered. */
  #failure: Error | undefined;
  #trailers: ResponseHeaders | undefined;
  #chunks: Buffer[] | undefined;
  #drained = 0;
  /** undici's header list of this request and where the relative deadline pairs sit in it. */
  #written: string[] | undefined;
  #writtenAt = 0;
  statusCode = 0;
  statusMessage = '';
  /** The head's headers as undici parsed them; undefined for a head the legacy API handed over raw. */
  #headers: ResponseHeaders | undefined;
  /** The dispatch it was sent with on the current API, while what that reaches is not known yet. */
  probing: Dispatch | undefined;
  /** The socket of an upgraded (101 / CONNECT) request, handed to the caller. */
  socket: unknown;
  /** The instance it goes to, when the dependency is several (SPEC X5): settled once with its verdict. */
  target: Instance<Target> | undefined;
  /** True once its instance was told how it went (its in-flight count released). */
  targetSettled = false;

  constructor(call: AttemptCall, slice: AttemptSlice, responseTimeoutMs: number, bodyTimeoutMs: number) {
    super(slice, responseTimeoutMs, bodyTimeoutMs);
    this.#call = call;
  }

  get instance(): string | undefined {
    return this.target?.key;
  }

  /** True once the attempt reported its end or was cancelled. */
  get done(): boolean {
    return this.slice.done;
  }

  /** The response head's headers, parsed from the raw buffers the first time they are read. */
  get responseHeaders(): ResponseHeaders | undefined {
    if (this.#headers === undefined && this.statusCode !== 0) {
      const raw = this.#controller?.rawHeaders;
      this.#headers = (Array.isArray(raw) ? util.parseHeaders(raw) : (raw ?? {})) as ResponseHeaders;
    }
    return this.#headers;
  }

  /** The request's controller, once undici started it (for the caller's pause, resume and abort). */
  get controller(): DispatchController | undefined {
    return this.#controller;
  }

  /** Dispatches the request; the bound is armed first (a request written inside dispatch keeps it). */
  start(): void {
    this.guardHead(this.slice.startedAt);
    this.#dispatching = true;
    this.#call.send(this);
    this.#dispatching = false;
  }

  onRequestStart(controller: DispatchController): void {
    if (this.probing !== undefined) {
      learnCore(this.probing, controller);
      this.probing = undefined;
    }
    if (this.phase === RESPONSE && !this.done) {
      this.#restart(controller);
      return;
    }
    if (this.phase !== QUEUED || this.done) {
      // Ended while queued (deadline, queue timeout, cancelled): never written. Not `abort()`, which
      // also destroys the healthy connection this request was about to use; undici drops a request
      // whose start throws and hands the connection to the next one.
      throw this.#reason ?? new Error('aborted');
    }
    this.#controller = controller;
    // Written inside dispatch (a kept-alive connection): no need to read the clock. Nor when
    // `responseTimeoutMs` cannot end before the attempt's own limit and no header needs the instant.
    const now =
      this.#dispatching || (this.responseTimeoutMs >= this.slice.timeoutMs && this.#written === undefined)
        ? this.slice.startedAt
        : this.clock.now();
    this.phase = RESPONSE;
    this.phaseAt = now;
    this.guardHead(now);
    if (this.#written !== undefined && !this.#dispatching) this.#rewrite(now);
  }

  /**
   * Started again before any answer reached it: a dispatcher below sends the request once more
   * (undici's retry after a 503 it kept to itself, its redirect following a 302, its dns interceptor
   * trying the other address family). The same attempt goes on, within its own limit; only the head's
   * wait restarts from this write. Refused, the request would fail with an untyped `aborted`.
   */
  #restart(controller: DispatchController): void {
    this.#controller = controller;
    const now = this.clock.now();
    this.phaseAt = now;
    this.guardHead(now);
    if (this.#written !== undefined) this.#rewrite(now);
  }

  onRequestUpgrade(
    controller: DispatchController,
    statusCode: number,
    headers: ResponseHeaders | undefined,
    socket: unknown,
  ): void {
    this.#controller = controller;
    this.statusCode = statusCode;
    this.#headers = headers;
    this.socket = socket;
    this.#finish();
    if (!this.slice.report(true, this)) (socket as { destroy?: () => void }).destroy?.();
  }

  /** The head (`headers` undefined: handed over raw on the legacy API, parsed when read). */
  onResponseStart(
    controller: DispatchController,
    statusCode: number,
    headers: ResponseHeaders | undefined,
    statusMessage?: string,
  ): void {
    if (this.#role !== RACING || this.phase === DONE) return;
    if (statusCode < 200) {
      this.#call.forwardInfo(controller, statusCode, headers, statusMessage); // 1xx: informational
      return;
    }
    this.#controller = controller;
    this.statusCode = statusCode;
    this.#headers = headers;
    this.statusMessage = statusMessage ?? '';
    this.phase = BODY;
    const now = this.clock.now();
    this.slice.endedAt = now; // the executor records the latency from this same reading
    this.guardBody(now);
    this.slice.report(true, this); // the call decides now: answer, held (a retryable status), or released
    if (this.held) {
      this.paused = true;
      controller.pause();
    }
  }

  onResponseData(controller: DispatchController, chunk: Buffer): void {
    this.progressed();
    switch (this.#role) {
      case WON:
        this.#call.forwardData(chunk);
        return;
      case HELD:
        this.#chunks ??= [];
        this.#chunks.push(chunk); // a dispatcher that did not pause at once
        return;
      case RELEASED:
        this.#drained += chunk.length;
        if (this.#drained > DRAIN_LIMIT_BYTES)
          controller.abort(new Error('prazo: drained response too long'));
        return;
      default:
        return;
    }
  }

  onResponseEnd(_controller: DispatchController, trailers: ResponseHeaders): void {
    if (this.phase === DONE) return;
    this.#finish();
    if (this.#role === WON) this.#call.forwardEnd(trailers);
    else if (this.#role === HELD) this.#trailers = trailers;
  }

  onResponseError(_controller: DispatchController | null, error: Error): void {
    if (this.phase === DONE) return;
    const wasQueued = this.phase === QUEUED;
    this.#finish();
    const reported = this.#reason ?? this.#call.transportError(error, this, wasQueued);
    if (this.#role === RACING) this.slice.report(false, reported);
    else if (this.#role === WON) this.#call.forwardError(reported);
    else if (this.#role === HELD) this.#failure = reported;
  }

  // ── the legacy handler API, for a dispatcher that still calls it (undici 7's MockPool, a
  // dispatcher built on undici 6): the same attempt behind its legacy face ────────────────────────

  #legacy: LegacyFace | undefined;
  /** The bound of a drain (a released answer still streaming), when one is under way. */
  #drainTimer: Timer | undefined;
  /** Ended by prazo on its connection (an abort, not the response's end): the socket is closing. */
  #tornDown = false;

  /** Its legacy face: the controller its current-API callbacks are given when undici speaks legacy. */
  get legacy(): LegacyFace {
    this.#legacy ??= new LegacyFace(this);
    return this.#legacy;
  }

  /** Its legacy face, sent with `dispatch` (known to reach undici 7's core): the first start checks it. */
  legacyVia(dispatch: Dispatch): LegacyFace {
    const face = this.legacy;
    face.via = dispatch;
    return face;
  }

  onConnect(abort: (reason?: Error) => void): void {
    this.legacy.onConnect(abort);
  }

  onHeaders(statusCode: number, raw: Buffer[], resume: () => void, statusText: string): boolean {
    return this.legacy.onHeaders(statusCode, raw, resume, statusText);
  }

  onData(chunk: Buffer): boolean {
    return this.legacy.onData(chunk);
  }

  onComplete(raw: Buffer[] | string[] | null): void {
    this.legacy.onComplete(raw);
  }

  onError(error: Error): void {
    this.legacy.onError(error);
  }

  onUpgrade(statusCode: number, raw: Buffer[] | string[] | null, socket: unknown): void {
    this.legacy.onUpgrade(statusCode, raw, socket);
  }

  /**
   * The request has left the client: not waiting for a connection any more. What an attempt cut
   * while still queued had run says nothing about its instance (read when its end is reported).
   */
  get sent(): boolean {
    return this.phase !== QUEUED;
  }

  /** A bound was reached: report it (when no verdict was given yet), then stop the request. */
  protected expire(error: Error): void {
    if (this.#reason !== undefined) return;
    this.#reason = error;
    if (this.#role === RACING) this.slice.report(false, error, true);
    this.#stopRequest(error);
  }

  /** The call ended this attempt (another one won, the caller gave up). */
  halt(reason: unknown): void {
    this.#role = CANCELLED;
    if (this.#reason === undefined) this.#reason = reason as Error;
    this.#stopRequest(reason as Error);
  }

  /** Becomes the call's answer: the held head is delivered, then whatever followed it. */
  win(): void {
    const held = this.#role === HELD;
    this.#role = WON;
    this.#call.forwardStart(this);
    if (!held) return;
    const chunks = this.#chunks;
    this.#chunks = undefined;
    if (chunks !== undefined) for (const chunk of chunks) this.#call.forwardData(chunk);
    if (this.#trailers !== undefined) this.#call.forwardEnd(this.#trailers);
    else if (this.#failure !== undefined) this.#call.forwardError(this.#failure);
    else if (this.phase !== DONE && !this.#call.paused) this.#resumeLater();
  }

  /** Holds a failed answer (its fate is open): paused until delivered or released. */
  hold(): void {
    this.#role = HELD;
  }

  /** True while its released answer is still being drained (its connection not back in the pool). */
  get draining(): boolean {
    return this.#role === RELEASED && this.phase !== DONE;
  }

  /** True while held: a failed answer whose fate its call has not decided yet. */
  get held(): boolean {
    return this.#role === HELD;
  }

  /** Not the answer: the rest of its body is drained (bounded) so its connection can be reused. */
  release(): void {
    if (this.#role === RELEASED || this.#role === CANCELLED) return;
    this.#role = RELEASED;
    this.#chunks = undefined;
    if (this.phase === DONE) return;
    this.#drainTimer = this.clock.setTimer(
      () => {
        this.#drainTimer = undefined;
        this.abortRequest(new Error('prazo: drained response too slow'));
      },
      DRAIN_LIMIT_MS,
      { unref: true },
    );
    this.#resumeLater();
  }

  pauseRequest(): void {
    this.paused = true;
    this.#controller?.pause();
  }

  /** The consumer reads again (the call's controller): resumed at once, as undici's own are. */
  resumeRequest(): void {
    if (this.phase === DONE) return;
    this.reading();
    this.#controller?.resume();
  }

  /**
   * Reads again once the current callback has returned. A held answer is released or delivered from
   * inside the callback of the attempt that decided the race (its hedge's head, on another
   * connection), and undici's HTTP/1.1 parser cannot be resumed from inside another parser's callback
   * (it asserts that none is executing). Resumed there, it would throw into the deciding attempt's
   * callback: the call would never finish, and with every attempt over no timer would be left to end
   * it — the caller would wait forever.
   */
  #resumeLater(): void {
    if (this.phase === DONE) return;
    this.reading();
    const controller = this.#controller;
    if (controller === undefined) return;
    queueMicrotask(() => {
      if (this.phase === DONE || this.paused) return;
      try {
        controller.resume();
      } catch (error) {
        this.abortRequest(error as Error); // a dispatcher that cannot resume it: it is given up
      }
    });
  }

  /** Stops the request in flight (the socket goes), or marks a queued one to be refused. */
  abortRequest(reason: Error): void {
    if (this.#reason === undefined) this.#reason = reason;
    this.#stopRequest(reason);
  }

  relativeHeaders(): readonly string[] {
    return this.#relativeAt(this.#dispatching ? this.slice.startedAt : this.clock.now());
  }

  /** `grpc-timeout` / `x-envoy-expected-rq-timeout-ms` at `now` (flat pairs): what is left of its limit. */
  #relativeAt(now: number): readonly string[] {
    const out: string[] = [];
    writeDeadlineHeaders(out, this.#call.route.headerFormat, this.attemptEndAt - now, 0, 'relative');
    return out;
  }

  linkHeaders(list: string[], at: number): void {
    this.#written = list;
    this.#writtenAt = at;
  }

  #rewrite(now: number): void {
    const fresh = this.#relativeAt(now);
    const list = this.#written!;
    for (let i = 0; i < fresh.length; i += 1) list[this.#writtenAt + i] = fresh[i]!;
  }

  #stopRequest(reason: Error): void {
    if (this.phase === DONE) return;
    const controller = this.#controller;
    if (controller === undefined) {
      this.#finish(); // still queued: refused when undici gets to it
      return;
    }
    this.#tornDown = true;
    try {
      controller.abort(reason); // undici calls onResponseError back
    } catch {
      // A dispatcher whose abort throws: the request is given up all the same, below.
    }
    if (this.phase !== DONE) this.onResponseError(controller, reason);
  }

  /** Over on the wire (the response's end, the request torn down, never sent): the limit's slot goes back. */
  #finish(): void {
    this.phase = DONE;
    this.stopTimer();
    if (this.#drainTimer !== undefined) {
      this.clock.clearTimer(this.#drainTimer);
      this.#drainTimer = undefined;
    }
    if (this.#tornDown) this.#releaseOnceClosed();
    else this.slice.releasePermit();
    if (this.#role === RELEASED) this.#call.drainEnded(this);
  }

  /**
   * Gives the limit's slot of a request prazo tore down on its connection back once undici has let
   * that connection go. undici reports the aborted request's end at once, but its pool counts the
   * request as running until the socket's close is handled, in the loop's close phase: given back at
   * once, the slot lets the next call waiting for it take another connection meanwhile, one more in
   * flight than the limit allows (measured: a pool of 3 under a limit of 2 seen with 3 running), and
   * a pool sized to the limit plus a reserve (the catalog's, in the demo) finds its reserve taken.
   * Two turns of the loop's check phase (the first may come before this turn's close phase), on the
   * real loop whatever the clock: what is waited for is a real socket's close, not time.
   */
  #releaseOnceClosed(): void {
    const slice = this.slice;
    setImmediate(() => setImmediate(() => slice.releasePermit()));
  }
}

/**
 * An attempt on undici's legacy handler API, and the controller its current-API callbacks are given
 * then (built on the `abort` and `resume` functions the legacy calls hand over). undici 7's core takes
 * it as it is: a handler with `onRequestStart` would be handed an `UnwrapHandler`, which parses every
 * head. Sent in the attempt's place where the dispatch is known to reach that core
 * (`reachesLegacyCore`, handler.ts); the head's raw buffers are kept, parsed only when read.
 */
export class LegacyFace implements DispatchController, LegacyHandlerMethods {
  aborted = false;
  paused = false;
  reason: Error | null = null;
  rawHeaders: Buffer[] | null = null;
  rawTrailers: Buffer[] | null = null;
  readonly #attempt: HttpAttempt;
  #abort: ((reason?: Error) => void) | undefined;
  #resume: (() => void) | undefined;
  /** The dispatch it was sent with as undici 7's core, until its start confirms it (`checkCore`). */
  via: Dispatch | undefined;

  constructor(attempt: HttpAttempt) {
    this.#attempt = attempt;
  }

  abort(reason: Error): void {
    if (this.aborted) return;
    this.aborted = true;
    this.reason = reason;
    this.#abort?.(reason);
  }

  pause(): void {
    this.paused = true;
  }

  resume(): void {
    if (!this.paused) return;
    this.paused = false;
    this.#resume?.();
  }

  /** Started (again, when a dispatcher below sends it once more): a fresh controller's state. */
  onConnect(abort: (reason?: Error) => void): void {
    if (this.via !== undefined) {
      checkCore(this.via, abort);
      this.via = undefined;
    }
    this.#abort = abort;
    this.aborted = false;
    this.reason = null;
    this.#attempt.onRequestStart(this);
  }

  onHeaders(statusCode: number, raw: Buffer[], resume: () => void, statusText: string): boolean {
    this.rawHeaders = raw;
    this.#resume = resume;
    this.#attempt.onResponseStart(this, statusCode, undefined, statusText);
    return !this.paused;
  }

  onData(chunk: Buffer): boolean {
    this.#attempt.onResponseData(this, chunk);
    return !this.paused;
  }

  onComplete(raw: Buffer[] | string[] | null): void {
    this.rawTrailers = raw as Buffer[] | null;
    // Most responses have no trailers: an empty record, as `parseHeaders([])` makes, without the call.
    const trailers = raw == null || raw.length === 0 ? {} : util.parseHeaders(raw);
    this.#attempt.onResponseEnd(this, trailers as ResponseHeaders);
  }

  onError(error: Error): void {
    this.#attempt.onResponseError(this, error);
  }

  onUpgrade(statusCode: number, raw: Buffer[] | string[] | null, socket: unknown): void {
    this.rawHeaders = raw as Buffer[] | null;
    this.#attempt.onRequestUpgrade(this, statusCode, undefined, socket);
  }
}
