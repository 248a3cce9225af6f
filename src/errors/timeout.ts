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
  | typeof ErrorCode.CONNECT_TIMEOUT
  | typeof ErrorCode.RESPONSE_TIMEOUT
  | typeof ErrorCode.BODY_TIMEOUT;

/**
 * A local, per-attempt timeout of one phase of a call (SPEC C2, D6). Each phase means something
 * different in an incident: connect = the instance is down (retry elsewhere at once); response = the
 * server took the work and is slow (do not pile on); body = the stream stalled mid-way.
 */
export abstract class PhaseTimeoutError extends PrazoError {
  abstract readonly phase: 'connect' | 'response' | 'body';
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

/** No connection within the connect timeout: treat the instance as down. */
export class ConnectTimeoutError extends PhaseTimeoutError {
  readonly phase = 'connect' as const;
  constructor(details: PhaseTimeoutDetails) {
    super(ErrorCode.CONNECT_TIMEOUT, 'connect', details);
  }
}

/** Connected and sent, but no response head within the response timeout. */
export class ResponseTimeoutError extends PhaseTimeoutError {
  readonly phase = 'response' as const;
  constructor(details: PhaseTimeoutDetails) {
    super(ErrorCode.RESPONSE_TIMEOUT, 'response', details);
  }
}

/** The response body stopped flowing for longer than the body timeout. */
export class BodyTimeoutError extends PhaseTimeoutError {
  readonly phase = 'body' as const;
  constructor(details: PhaseTimeoutDetails) {
    super(ErrorCode.BODY_TIMEOUT, 'body', details);
  }
}
