import type { AttemptKind } from './types.js';

/**
 * The executor's tracing seam: prazo's own interface, so that the executor never imports
 * OpenTelemetry (only prazo/otel does, test/architecture.test.ts). prazo/otel implements it with the
 * OpenTelemetry API and installs it on a dependency it instruments ({@link CallTracer} on the
 * dependency's listener list, shared by every version of its core, so an update keeps it).
 *
 * Why a hook and not the events: an event names a dependency, not a call, so two calls in flight
 * cannot be told apart; and a span is only useful if the work it covers runs *inside* it — the
 * attempt's operation (prazo/http's dispatch) is started inside `attempt(...)`'s `run`, so a client
 * span of an HTTP instrumentation, and the trace context it propagates, are the attempt's children.
 *
 * Cost when unused: one `undefined` check per call (`core.events.tracer`), one per attempt, one per
 * decision worth an event. Nothing is allocated.
 */

/** Span attribute values the executor hands over: plain, ready to set. */
export type TraceAttributes = Readonly<Record<string, string | number | boolean>>;

/** The decisions that become span events on the call's span. */
export type TraceEventName =
  | 'budget-refused'
  | 'deadline-insufficient'
  | 'pushback'
  | 'retry-after'
  | 'throttled'
  | 'hedge-skipped'
  | 'limited';

/** How an attempt ended, as the recorder sees it (plus `cancelled`: a lost hedge, a caller gone). */
export type TraceOutcome = 'success' | 'error' | 'timeout' | 'cancelled';

/** One attempt's trace: ended once. */
export interface AttemptTrace {
  /**
   * Runs `fn` inside the attempt's trace context again: for work of the attempt resumed from a
   * callback that does not carry it (prazo/http's dispatch once DNS discovery found an instance).
   */
  resume(fn: () => void): void;
  /**
   * The attempt is over: `ok` and `value` as the execution saw them (a result, or the error thrown),
   * `attributes` what the integration knows of a result (an HTTP status).
   */
  end(outcome: TraceOutcome, ok: boolean, value: unknown, attributes: TraceAttributes | undefined): void;
}

/** One call's trace: its attempts, its decisions, its end. */
export interface CallTrace {
  /**
   * Attempt `attempt` starts with `remainingMs` of the deadline left, bounded by `timeoutMs`: `run` starts it (the operation, the dispatch) and must be called once,
   * synchronously, inside the attempt's trace context.
   */
  attempt(
    kind: AttemptKind,
    attempt: number,
    remainingMs: number,
    timeoutMs: number,
    instance: string | undefined,
    run: () => void,
  ): AttemptTrace;
  /** A decision of the executor (budget refused, deadline insufficient, pushback, Retry-After...). */
  event(name: TraceEventName, attributes: TraceAttributes): void;
  /** The call ended: delivered `value` (a result, ok) or the error. */
  end(ok: boolean, value: unknown, attributes: TraceAttributes | undefined): void;
}

/** Starts a call's trace, or declines (undefined: the call is not traced, nothing else is asked). */
export interface CallTracer {
  /**
   * A call of `dependency` starts with `remainingMs` of its deadline left; `attributes` say what the
   * integration knows of the request (HTTP method, server address, URL).
   */
  startCall(
    dependency: string,
    remainingMs: number,
    attributes: TraceAttributes | undefined,
  ): CallTrace | undefined;
}
