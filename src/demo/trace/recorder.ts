import { AsyncLocalStorage } from 'node:async_hooks';
import type { IncomingHttpHeaders } from 'node:http';
import type { Dispatcher } from 'undici';
import type { Clock } from '../../clock/clock.js';
import type {
  AttemptTrace,
  CallTrace,
  CallTracer,
  TraceAttributes,
  TraceEventName,
  TraceOutcome,
} from '../../dependency/trace.js';
import type { AttemptKind } from '../../dependency/types.js';
import { isPrazoError } from '../../errors/base.js';
import { DEMO_TRACE_LIMITS } from './limits.js';
import {
  formatTraceparent,
  type IdSource,
  parseTraceparent,
  randomIds,
  traceStartEpochMs,
} from './traceparent.js';
import type { SpanEvent, SpanKind, SpanOutcome, SpanRecord, TracePiece } from './types.js';

/**
 * A small in-process span recorder for the demo's services (issue #26 item 2). The demo runs from the
 * published CLI, where the OpenTelemetry SDK is not installed (a devDependency only), so each service
 * records its own spans on prazo's tracing seam (`dependency/trace.ts`, the same one prazo/otel
 * implements), passes the trace on with W3C `traceparent`, and hands what it kept to the parent at
 * the end of a scenario; the parent stitches the pieces by trace id (`stitch.ts`).
 *
 * What each stack gets:
 * - every stack: a **server span** per checkout-chain request a service receives, from its arrival
 *   to the end of its work for it (past the answer when a handler keeps working after its caller
 *   hung up: that is the wasted work the demo measures);
 * - prazo: the executor's own **call span** (its plan: attempts, decisions as events) and an
 *   **attempt span** per attempt, retry and hedge, through the {@link CallTracer} installed on the
 *   hop's dependency; each attempt's request carries its span id as the `traceparent` parent;
 * - naive and cockatiel have no executor to ask: each request their client hands to the dispatcher
 *   is an **attempt span** recorded by the dispatcher interceptor (numbered in order under the
 *   server span: attempt 2 is a retry), with no call span. That is all that exists for them: no
 *   plan, no deadline, no decision to show.
 *
 * Constant memory: at most `maxTraces` traces per recorder (a recorder lives for one scenario: the
 * services make a new one at each reset), at most `maxSpansPerTrace` spans in each (the rest counted
 * as dropped). Which traces: the ones with the smallest trace ids (bottom-k on the id's random
 * low 52 bits, the part W3C Trace Context level 2 asks to be random). Every service applies the same
 * rule to the same ids, so a trace the gateway keeps is kept by every hop it reached, with no
 * coordination (a hop sees a subset of the gateway's traces: a trace among the gateway's k smallest
 * is among its k smallest too). "The slowest n per service" would not stitch: each hop would keep
 * different traces. The sample is uniform; `stitch.ts` picks the representative from it.
 */

/** A server span in progress: run the request's work inside it, then end it once. */
export interface ServerSpan {
  readonly traceId: string;
  readonly spanId: string;
  /** Runs `fn` inside the span: calls and requests made from it are its children. */
  run<T>(fn: () => T): T;
  /** Something worth a mark on the bar (the caller hung up). */
  event(name: string, detail?: string): void;
  /**
   * What the service knows of the request's time, as epoch ms: its deadline (prazo's, once the
   * server read it) and when its user gives up. Kept even if the span is still running when collected.
   */
  note(times: {
    readonly deadlineEpochMs?: number | undefined;
    readonly giveUpEpochMs?: number | undefined;
  }): void;
  /**
   * The work is over. `status`: what was answered (undefined: nothing was, the caller had gone);
   * the request's deadline and the user's give-up instant, as epoch ms, when known.
   */
  end(result: {
    readonly status: number | undefined;
    readonly deadlineEpochMs?: number | undefined;
    readonly giveUpEpochMs?: number | undefined;
  }): void;
}

export interface SpanRecorderOptions {
  /** The service's name on its spans (`gateway`, `supplier #2`). */
  readonly service: string;
  readonly clock: Clock;
  readonly ids?: IdSource;
  readonly maxTraces?: number;
  readonly maxSpansPerTrace?: number;
}

interface Span {
  traceId: string;
  spanId: string;
  parentId: string | undefined;
  kind: SpanKind;
  name: string;
  startMs: number;
  endMs: number | undefined;
  outcome: SpanOutcome;
  status?: number;
  attempt?: number;
  attemptKind?: AttemptKind;
  timeoutMs?: number;
  timeLeftMs?: number;
  instance?: string;
  error?: string;
  deadlineEpochMs?: number;
  giveUpEpochMs?: number;
  events?: SpanEvent[];
}

interface Piece {
  readonly traceId: string;
  readonly rank: number;
  readonly spans: Span[];
  dropped: number;
  evicted: boolean;
}

/** One request being served: what the calls and requests made for it hang from. */
interface Served {
  readonly traceId: string;
  spanId: string;
  readonly piece: Piece | undefined;
  /** Requests sent on the wire without an executor's attempt around them (naive, cockatiel). */
  wire: number;
}

interface Scope {
  readonly served: Served;
  /** Inside a prazo attempt: its span, the parent of the request it sends. */
  readonly attemptSpanId?: string;
}

/** The order of bottom-k retention: the trace id's low 52 bits (random by the spec). */
export function traceRank(traceId: string): number {
  const rank = Number.parseInt(traceId.slice(-13), 16);
  return Number.isFinite(rank) ? rank : Number.MAX_SAFE_INTEGER;
}

/** prazo's refusals: the call ended without a request sent. */
const REFUSALS = new Set([
  'THROTTLED',
  'RETRY_BUDGET_EXHAUSTED',
  'DEADLINE_INSUFFICIENT',
  'CONCURRENCY_LIMITED',
  'NO_INSTANCE',
]);

/** A failure in a few words: prazo's code, a system error's code, the error's name or message. */
export function errorLabel(error: unknown): string {
  if (isPrazoError(error)) return error.code;
  if (error instanceof Error) {
    const code = (error as { code?: unknown }).code;
    if (typeof code === 'string' && code.length > 0) return code;
    if (error.name !== 'Error' && error.name !== 'NaiveError') return error.name;
    return error.message.slice(0, 60) || error.name;
  }
  return typeof error === 'string' ? error.slice(0, 60) : 'error';
}

/** How a thrown failure ended a span. */
function failureOutcome(error: unknown): SpanOutcome {
  const label = errorLabel(error);
  if (/TIMEOUT|DEADLINE_EXCEEDED|timeout|timed out/i.test(label)) return 'timeout';
  if (/abort|cancel/i.test(label)) return 'cancelled';
  return 'error';
}

const round1 = (x: number): number => Math.round(x * 10) / 10;

function describe(attributes: TraceAttributes): string {
  return Object.entries(attributes)
    .map(([k, v]) => `${k.replace(/^prazo\./, '').replace(/[._]/g, ' ')} ${v}`)
    .join(', ');
}

export class SpanRecorder {
  readonly #als = new AsyncLocalStorage<Scope>();
  readonly #service: string;
  readonly #clock: Clock;
  readonly #ids: IdSource;
  readonly #maxTraces: number;
  readonly #maxSpans: number;
  readonly #pieces = new Map<string, Piece>();
  /** The wall clock once, and the monotonic clock from there: spans are epoch ms without a jump. */
  readonly #epochBase: number;
  readonly #monoBase: number;

  constructor(options: SpanRecorderOptions) {
    this.#service = options.service;
    this.#clock = options.clock;
    this.#ids = options.ids ?? randomIds;
    this.#maxTraces = Math.max(1, Math.floor(options.maxTraces ?? DEMO_TRACE_LIMITS.maxTraces));
    this.#maxSpans = Math.max(1, Math.floor(options.maxSpansPerTrace ?? DEMO_TRACE_LIMITS.maxSpansPerTrace));
    this.#epochBase = this.#clock.epochNow();
    this.#monoBase = this.#clock.now();
  }

  /** Now, as epoch ms. */
  #now(): number {
    return round1(this.#epochBase + (this.#clock.now() - this.#monoBase));
  }

  /**
   * Keeps `traceId` if it is among the `maxTraces` smallest seen (bottom-k), evicting the largest. A
   * trace begun before this recorder (the previous scenario's lingering work, still arriving below
   * the gateway after a reset) is not this scenario's: kept, it would displace ones the gateway keeps.
   */
  #admit(traceId: string): Piece | undefined {
    const known = this.#pieces.get(traceId);
    if (known !== undefined) return known;
    const started = traceStartEpochMs(traceId);
    if (started !== undefined && started < this.#epochBase - DEMO_TRACE_LIMITS.resetSkewMs) return undefined;
    const rank = traceRank(traceId);
    if (this.#pieces.size >= this.#maxTraces) {
      let largest: Piece | undefined;
      for (const piece of this.#pieces.values())
        if (largest === undefined || piece.rank > largest.rank) largest = piece;
      if (largest === undefined || rank >= largest.rank) return undefined;
      largest.evicted = true;
      this.#pieces.delete(largest.traceId);
    }
    const piece: Piece = { traceId, rank, spans: [], dropped: 0, evicted: false };
    this.#pieces.set(traceId, piece);
    return piece;
  }

  #open(served: Served, fields: Omit<Span, 'traceId' | 'spanId' | 'startMs' | 'endMs' | 'outcome'>): Span {
    const span: Span = {
      traceId: served.traceId,
      spanId: this.#ids.spanId(),
      startMs: this.#now(),
      endMs: undefined,
      outcome: 'open',
      ...fields,
    };
    const piece = served.piece;
    if (piece !== undefined && !piece.evicted) {
      if (piece.spans.length < this.#maxSpans) piece.spans.push(span);
      else piece.dropped += 1;
    }
    return span;
  }

  #close(span: Span, outcome: SpanOutcome): void {
    if (span.endMs !== undefined) return;
    span.endMs = this.#now();
    span.outcome = outcome;
  }

  #event(span: Span, name: string, detail: string | undefined): void {
    const event: SpanEvent =
      detail === undefined ? { name, atMs: this.#now() } : { name, atMs: this.#now(), detail };
    if (span.events === undefined) span.events = [event];
    else if (span.events.length < DEMO_TRACE_LIMITS.maxEventsPerSpan) span.events.push(event);
  }

  /**
   * A request arrives: its span joins the caller's trace (`traceparent`, read defensively: a missing
   * or bad header starts a new trace).
   */
  startServer(name: string, headers: IncomingHttpHeaders): ServerSpan {
    const parent = parseTraceparent(headers.traceparent);
    const traceId = parent?.traceId ?? this.#ids.traceId(this.#now());
    const served: Served = { traceId, spanId: '', piece: this.#admit(traceId), wire: 0 };
    const span = this.#open(served, { parentId: parent?.parentId, kind: 'server', name });
    served.spanId = span.spanId;
    // One scope object, shared by every call made inside the span (its wire count).
    const scope: Scope = { served };
    return {
      traceId,
      spanId: span.spanId,
      run: (fn) => this.#als.run(scope, fn),
      event: (eventName, detail) => this.#event(span, eventName, detail),
      note: (times) => note(span, times),
      end: ({ status, deadlineEpochMs, giveUpEpochMs }) => {
        if (span.endMs !== undefined) return;
        if (status !== undefined) span.status = status;
        note(span, { deadlineEpochMs, giveUpEpochMs });
        this.#close(
          span,
          status === undefined ? 'cancelled' : status === 504 ? 'timeout' : status >= 500 ? 'error' : 'ok',
        );
      },
    };
  }

  /** prazo's tracing seam: install it on a hop's dependency (`executorOf(d).plan.events.tracer`). */
  readonly tracer: CallTracer = {
    startCall: (dependency, remainingMs) => {
      const scope = this.#als.getStore();
      if (scope === undefined) return undefined; // not a checkout-chain request: not traced
      return this.#call(scope.served, dependency, remainingMs);
    },
  };

  #call(served: Served, dependency: string, remainingMs: number): CallTrace {
    const call = this.#open(served, {
      parentId: served.spanId,
      kind: 'call',
      name: dependency,
      timeLeftMs: Math.round(remainingMs),
    });
    let attempts = 0;
    const recorder = this;
    return {
      attempt(
        kind: AttemptKind,
        attempt: number,
        left: number,
        timeoutMs: number,
        instance: string | undefined,
        run: () => void,
      ): AttemptTrace {
        attempts += 1;
        const span = recorder.#open(served, {
          parentId: call.spanId,
          kind: 'attempt',
          name: dependency,
          attempt,
          attemptKind: kind,
          timeLeftMs: Math.round(left),
          timeoutMs: Math.round(timeoutMs),
          ...(instance === undefined ? {} : { instance }),
        });
        const scope: Scope = { served, attemptSpanId: span.spanId };
        recorder.#als.run(scope, run);
        return {
          resume: (fn) => recorder.#als.run(scope, fn),
          end: (
            outcome: TraceOutcome,
            ok: boolean,
            value: unknown,
            attributes: TraceAttributes | undefined,
          ) => {
            const status = attributes?.['http.response.status_code'];
            if (typeof status === 'number') span.status = status;
            if (!ok && value !== undefined) span.error = errorLabel(value);
            else if (typeof status === 'number' && status >= 500) span.error = `HTTP ${status}`;
            const failed = typeof status === 'number' && status >= 500;
            recorder.#close(
              span,
              outcome === 'success' ? (failed ? 'error' : 'ok') : outcome === 'timeout' ? 'timeout' : outcome,
            );
          },
        };
      },
      event(name: TraceEventName, attributes: TraceAttributes): void {
        recorder.#event(call, name, describe(attributes));
      },
      end(ok: boolean, value: unknown, attributes: TraceAttributes | undefined): void {
        const status = attributes?.['http.response.status_code'];
        if (typeof status === 'number') call.status = status;
        let outcome: SpanOutcome;
        if (ok) outcome = typeof status === 'number' && status >= 500 ? 'error' : 'ok';
        else {
          call.error = errorLabel(value);
          outcome =
            attempts === 0 && isPrazoError(value) && REFUSALS.has(value.code)
              ? 'refused'
              : failureOutcome(value);
        }
        recorder.#close(call, outcome);
      },
    };
  }

  /**
   * The dispatcher interceptor of the hop to `next`: sends `traceparent` with every request made
   * inside a server span (the attempt's span as its parent under prazo), and, for a stack without an
   * executor, records the request itself as the attempt.
   */
  interceptor(next: string): Dispatcher.DispatcherComposeInterceptor {
    return (dispatch) => (opts, handler) => {
      const scope = this.#als.getStore();
      if (scope === undefined) return dispatch(opts, handler);
      const { served } = scope;
      if (scope.attemptSpanId !== undefined) {
        return dispatch(
          withTraceparent(opts, formatTraceparent(served.traceId, scope.attemptSpanId)),
          handler,
        );
      }
      served.wire += 1;
      const span = this.#open(served, {
        parentId: served.spanId,
        kind: 'attempt',
        name: next,
        attempt: served.wire,
        attemptKind: served.wire > 1 ? 'retry' : 'original',
        // No instance: a round robin below may send it elsewhere than the origin it names.
      });
      const sent = withTraceparent(opts, formatTraceparent(served.traceId, span.spanId));
      if (typeof handler.onRequestStart !== 'function') return dispatch(sent, handler); // not observable
      return dispatch(sent, this.#observe(span, handler));
    };
  }

  /** A handler that forwards everything to `handler` and ends `span` with the request's outcome. */
  #observe(span: Span, handler: Dispatcher.DispatchHandler): Dispatcher.DispatchHandler {
    const close = (outcome: SpanOutcome): void => this.#close(span, outcome);
    const wrapped: Dispatcher.DispatchHandler = {
      onRequestStart: (controller, context) => handler.onRequestStart?.(controller, context),
      onResponseStart: (controller, statusCode, headers, statusMessage) => {
        span.status = statusCode;
        return handler.onResponseStart?.(controller, statusCode, headers, statusMessage);
      },
      onResponseData: (controller, chunk) => handler.onResponseData?.(controller, chunk),
      onResponseEnd: (controller, trailers) => {
        const status = span.status ?? 0;
        if (status >= 500) span.error = `HTTP ${status}`;
        close(status >= 500 ? 'error' : 'ok');
        return handler.onResponseEnd?.(controller, trailers);
      },
      onResponseError: (controller, error) => {
        span.error = errorLabel(error);
        close(failureOutcome(error));
        return handler.onResponseError?.(controller, error);
      },
    };
    if (typeof handler.onRequestUpgrade === 'function') {
      wrapped.onRequestUpgrade = (controller, statusCode, headers, socket) =>
        handler.onRequestUpgrade?.(controller, statusCode, headers, socket);
    }
    return wrapped;
  }

  /** What was kept, as JSON; spans still running are cut now (`open`). */
  collect(): TracePiece[] {
    const now = this.#now();
    return [...this.#pieces.values()].map((piece) => ({
      traceId: piece.traceId,
      dropped: piece.dropped,
      spans: piece.spans.map((span) => snapshot(span, now, this.#service)),
    }));
  }

  /** Traces kept now (at most `maxTraces`). */
  get size(): number {
    return this.#pieces.size;
  }
}

function note(
  span: Span,
  times: { readonly deadlineEpochMs?: number | undefined; readonly giveUpEpochMs?: number | undefined },
): void {
  const { deadlineEpochMs, giveUpEpochMs } = times;
  if (deadlineEpochMs !== undefined && Number.isFinite(deadlineEpochMs))
    span.deadlineEpochMs = round1(deadlineEpochMs);
  if (giveUpEpochMs !== undefined && Number.isFinite(giveUpEpochMs)) span.giveUpEpochMs = giveUpEpochMs;
}

function snapshot(span: Span, now: number, service: string): SpanRecord {
  const { endMs, events, parentId, ...rest } = span;
  return {
    ...rest,
    ...(parentId === undefined ? {} : { parentId }),
    service,
    endMs: endMs ?? now,
    ...(events === undefined ? {} : { events: [...events] }),
  } as SpanRecord;
}

/** The request's options with `traceparent` set (replacing one the caller passed). */
export function withTraceparent(opts: Dispatcher.DispatchOptions, value: string): Dispatcher.DispatchOptions {
  const headers = opts.headers;
  if (headers === undefined || headers === null) return { ...opts, headers: { traceparent: value } };
  if (Array.isArray(headers)) {
    const flat: string[] = [];
    for (let i = 0; i + 1 < headers.length; i += 2) {
      if (String(headers[i]).toLowerCase() !== 'traceparent')
        flat.push(String(headers[i]), String(headers[i + 1]));
    }
    flat.push('traceparent', value);
    return { ...opts, headers: flat };
  }
  if (typeof headers === 'object' && !(Symbol.iterator in headers)) {
    const out: Record<string, string | string[] | undefined> = {};
    for (const [k, v] of Object.entries(headers as Record<string, string | string[] | undefined>))
      if (k.toLowerCase() !== 'traceparent') out[k] = v;
    out.traceparent = value;
    return { ...opts, headers: out };
  }
  const out: [string, string][] = [];
  for (const [k, v] of headers as Iterable<[string, string | string[] | undefined]>) {
    if (k.toLowerCase() === 'traceparent' || v === undefined) continue;
    for (const one of Array.isArray(v) ? v : [v]) out.push([k, one]);
  }
  out.push(['traceparent', value]);
  return { ...opts, headers: out.flat() };
}
