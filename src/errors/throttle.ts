import { PrazoError } from './base.js';
import { ErrorCode } from './codes.js';

export interface ThrottledDetails {
  readonly dependency: string;
  /** Attempts counted in the throttle's window when the call was refused (refused calls included). */
  readonly requests: number;
  /** Of those, the ones the dependency answered with something other than its own failure. */
  readonly accepts: number;
  /** The probability a call was refused with at that instant, in [0, 1). */
  readonly probability: number;
  /** The window the counts cover, in ms. */
  readonly windowMs: number;
}

/**
 * The dependency's adaptive throttle refused the call locally (client-side admission control): most of
 * the recent attempts to it were not accepted, so this call was refused with `probability` instead of
 * joining them. Nothing was sent: no socket, no slot, no retry budget spent, no latency recorded, and
 * the call is not retried (another attempt now meets the same odds). It is the fast failure that
 * keeps a failing dependency from holding the caller's connections, and its share falls on its own
 * as the dependency's answers come back.
 */
export class ThrottledError extends PrazoError {
  protected static override readonly prazoCodes = [ErrorCode.THROTTLED];
  readonly dependency: string;
  readonly requests: number;
  readonly accepts: number;
  readonly probability: number;
  readonly windowMs: number;

  constructor(details: ThrottledDetails) {
    super(
      ErrorCode.THROTTLED,
      `${details.dependency} is throttled: ${details.accepts} of ${details.requests} attempt(s) accepted in ` +
        `the last ${details.windowMs} ms, calls refused with probability ${details.probability.toFixed(2)}`,
    );
    this.dependency = details.dependency;
    this.requests = details.requests;
    this.accepts = details.accepts;
    this.probability = details.probability;
    this.windowMs = details.windowMs;
  }
}
