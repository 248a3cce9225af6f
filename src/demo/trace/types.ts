/**
 * The spans the demo's services record (issue #26 item 2): plain JSON, sent to the parent over the
 * IPC channel at the end of a scenario and stitched there by trace id. Times are wall-clock epoch ms
 * (fractional): the services are separate processes on one host, and the wall clock is the one time
 * they share (each process converts its monotonic readings once, `recorder.ts`).
 */

/** How a span ended. */
export type SpanOutcome =
  /** Answered (a server: a 2xx–4xx status; a call or an attempt: an answer below 500). */
  | 'ok'
  /** Failed: a 5xx, a refused connection, an error thrown. */
  | 'error'
  /** A timeout or the deadline ended it. */
  | 'timeout'
  /** Stopped from outside: a lost hedge, a caller that hung up before the answer. */
  | 'cancelled'
  /** Refused locally, nothing sent (prazo: throttled, budget, deadline insufficient, limited). */
  | 'refused'
  /** Still running when the spans were collected (the scenario's cut-off). */
  | 'open';

export type SpanKind =
  /** A request a service received, from its arrival to the end of its work for it. */
  | 'server'
  /** prazo's logical call of a dependency (the executor's plan: its attempts, its decisions). */
  | 'call'
  /** One request on the wire to the next hop: an attempt, a retry, a hedge. */
  | 'attempt';

export interface SpanEvent {
  readonly name: string;
  readonly atMs: number;
  /** Its attributes in a few words (`time left 12 ms`). */
  readonly detail?: string;
}

export interface SpanRecord {
  readonly traceId: string;
  readonly spanId: string;
  /** The span it is a child of (absent: a root). */
  readonly parentId?: string;
  /** The service that recorded it: `gateway`, `orders`, `inventory`, `supplier #2`. */
  readonly service: string;
  readonly kind: SpanKind;
  /** The operation: `GET /checkout`; for calls and attempts, the dependency called. */
  readonly name: string;
  readonly startMs: number;
  readonly endMs: number;
  readonly outcome: SpanOutcome;
  /** HTTP status answered (server) or received (attempt, call). */
  readonly status?: number;
  /** Attempts: their number (1 = the first) and kind. */
  readonly attempt?: number;
  readonly attemptKind?: 'original' | 'retry' | 'hedge';
  /** prazo attempts: the attempt's own timeout; calls and attempts: the deadline's time left at the start. */
  readonly timeoutMs?: number;
  readonly timeLeftMs?: number;
  /** The instance an attempt went to (prazo picks it: `http://127.0.0.1:41234`). */
  readonly instance?: string;
  /** What ended it, when it failed: prazo's error code, or the error's name or message. */
  readonly error?: string;
  /** Server spans: the request's deadline (prazo's, read by the service), as epoch ms. */
  readonly deadlineEpochMs?: number;
  /** Server spans: when the user gives up (the demo's accounting header), as epoch ms. */
  readonly giveUpEpochMs?: number;
  readonly events?: readonly SpanEvent[];
}

/** What one service recorded of one trace. */
export interface TracePiece {
  readonly traceId: string;
  readonly spans: readonly SpanRecord[];
  /** Spans not kept (past the per-trace cap). */
  readonly dropped: number;
}
