import { Code, ConnectError } from '@connectrpc/connect';
import { isPrazoError } from '../errors/base.js';
import { isDeadlineError } from '../errors/guards.js';
import { PUSHBACK_HEADER } from '../retry/constants.js';
import { DO_NOT_RETRY, dependencyFailureOf } from '../retry/pushback.js';

/**
 * How prazo's errors travel in Connect (SPEC D6, X6). The time running out — a deadline exceeded or
 * insufficient, an attempt's response timeout — is `deadline_exceeded`, the code Connect itself gives
 * its own timeout; a refusal to protect a failing dependency (retry budget spent, throttled,
 * concurrency limit, no instance, connect failure) is `unavailable`. The prazo error rides along as
 * the ConnectError's `cause`, so `isPrazoError(error.cause)` and prazo's guards read it.
 */

/**
 * A client-side failure as a ConnectError: one already (the server's answer, the transport's) as it
 * is; prazo's own with the Connect code of its meaning and itself as `cause`; anything else as
 * Connect-ES would make it (`ConnectError.from`).
 */
export function toConnectError(error: unknown): ConnectError {
  if (error instanceof ConnectError) return error;
  if (isPrazoError(error)) {
    const failure = dependencyFailureOf(error);
    const code =
      failure === undefined
        ? Code.Internal
        : failure.kind === 'timeout'
          ? Code.DeadlineExceeded
          : Code.Unavailable;
    return new ConnectError(error.message, code, undefined, undefined, error);
  }
  return ConnectError.from(error);
}

/**
 * What a handler's failure is answered with (server side): when it failed because one of its
 * dependencies did (a prazo error on it or its `cause` chain, or a dependency's error prazo's executor
 * gave up on), a pushback — `deadline_exceeded` or `unavailable` with `grpc-retry-pushback-ms: -1`,
 * gRPC's "do not retry" that prazo and grpc-js honour (SPEC X6) — so its callers do not retry what
 * this hop already retried; a prazo deadline error otherwise `deadline_exceeded`; anything else as it
 * is. `pushback: false` leaves dependency failures to the handler's own words.
 */
export function toConnectServerError(error: unknown, pushback = true): unknown {
  if (pushback) {
    const failure = dependencyFailureOf(error);
    if (failure !== undefined) {
      const code = failure.kind === 'timeout' ? Code.DeadlineExceeded : Code.Unavailable;
      return new ConnectError(
        failure.error.message,
        code,
        { [PUSHBACK_HEADER]: DO_NOT_RETRY },
        undefined,
        error,
      );
    }
  }
  if (isDeadlineError(error))
    return new ConnectError(error.message, Code.DeadlineExceeded, undefined, undefined, error);
  return error;
}
