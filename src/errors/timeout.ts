import { PrazoError } from './base.js';
import { ErrorCode } from './codes.js';

export interface PhaseTimeoutDetails {
  readonly dependency: string;
  /** Milliseconds spent in the phase when it was cut. */
  readonly elapsedMs: number;
  /** The phase timeout that was in force (already bounded by the remaining deadline). */
  readonly timeoutMs: number;
  readonly cause?: unknown;
}

type PhaseCode =
  | typeof ErrorCode.QUEUE_TIMEOUT
  | typeof ErrorCode.CONNECT_TIMEOUT
  | typeof ErrorCode.RESPONSE_TIMEOUT
  | typeof ErrorCode.BODY_TIMEOUT;

/**
 * A local, per-attempt timeout of one phase of a call (SPEC C2, D6). Each phase means something
 * different in an incident: connect = the instance is down (retry elsewhere at once); response = the
 * server took the work and is slow (do not pile on); body = the stream stalled mid-way.
 */
export abstract class PhaseTimeoutError extends PrazoError {
  protected static override readonly prazoCodes: readonly string[] = [
    ErrorCode.QUEUE_TIMEOUT,
    ErrorCode.CONNECT_TIMEOUT,
    ErrorCode.RESPONSE_TIMEOUT,
    ErrorCode.BODY_TIMEOUT,
  ];
  abstract readonly phase: 'queue' | 'connect' | 'response' | 'body';
  readonly dependency: string;
  readonly elapsedMs: number;
  readonly timeoutMs: number;

  protected constructor(code: PhaseCode, what: string, details: PhaseTimeoutDetails) {
    super(
      code,
      `${what} timeout calling ${details.dependency}: ${Math.round(details.elapsedMs)} ms elapsed, ` +
        `limit ${Math.round(details.timeoutMs)} ms`,
      { cause: details.cause },
    );
    this.dependency = details.dependency;
    this.elapsedMs = details.elapsedMs;
    this.timeoutMs = details.timeoutMs;
  }
}

/**
 * The attempt waited its whole time for a connection (every pooled one busy, or a connect still under
 * way) and was never written: nothing reached the dependency, so it says nothing about its latency
 * (kept out of the recorder) and another attempt is safe whatever the method.
 */
export class QueueTimeoutError extends PhaseTimeoutError {
  protected static override readonly prazoCodes = [ErrorCode.QUEUE_TIMEOUT];
  readonly phase = 'queue' as const;
  constructor(details: PhaseTimeoutDetails) {
    super(ErrorCode.QUEUE_TIMEOUT, 'queue', details);
  }
}

/** No connection within the connect timeout: treat the instance as down. */
export class ConnectTimeoutError extends PhaseTimeoutError {
  protected static override readonly prazoCodes = [ErrorCode.CONNECT_TIMEOUT];
  readonly phase = 'connect' as const;
  constructor(details: PhaseTimeoutDetails) {
    super(ErrorCode.CONNECT_TIMEOUT, 'connect', details);
  }
}

/** Connected and sent, but no response head within the response timeout. */
export class ResponseTimeoutError extends PhaseTimeoutError {
  protected static override readonly prazoCodes = [ErrorCode.RESPONSE_TIMEOUT];
  readonly phase = 'response' as const;
  constructor(details: PhaseTimeoutDetails) {
    super(ErrorCode.RESPONSE_TIMEOUT, 'response', details);
  }
}

/** The response body stopped flowing for longer than the body timeout. */
export class BodyTimeoutError extends PhaseTimeoutError {
  protected static override readonly prazoCodes = [ErrorCode.BODY_TIMEOUT];
  readonly phase = 'body' as const;
  constructor(details: PhaseTimeoutDetails) {
    super(ErrorCode.BODY_TIMEOUT, 'body', details);
  }
}

export interface ConnectFailedDetails {
  readonly dependency: string;
  /** Milliseconds between the attempt's start and the failure. */
  readonly elapsedMs: number;
  /** The socket error (`ECONNREFUSED`, `EHOSTUNREACH`, `ENOTFOUND`...), with its own `code`. */
  readonly cause: unknown;
}

/**
 * The connect failed before any byte was sent (refused, unreachable, a name that does not resolve):
 * the instance is down or absent (SPEC R4). The socket error is the `cause`, its code in `reason`.
 */
export class ConnectFailedError extends PrazoError {
  protected static override readonly prazoCodes = [ErrorCode.CONNECT_FAILED];
  readonly phase = 'connect' as const;
  readonly dependency: string;
  readonly elapsedMs: number;
  /** The socket error's own code, e.g. `ECONNREFUSED`. */
  readonly reason: string | undefined;

  constructor(details: ConnectFailedDetails) {
    const code = (details.cause as { code?: unknown } | null)?.code;
    const reason = typeof code === 'string' ? code : undefined;
    super(
      ErrorCode.CONNECT_FAILED,
      `connect to ${details.dependency} failed${reason ? ` (${reason})` : ''} after ${Math.round(details.elapsedMs)} ms`,
      { cause: details.cause },
    );
    this.dependency = details.dependency;
    this.elapsedMs = details.elapsedMs;
    this.reason = reason;
  }
}
