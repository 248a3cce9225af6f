import { Metadata, type StatusObject, status } from '@grpc/grpc-js';
import { isPrazoError, type PrazoError } from '../errors/base.js';
import { isDeadlineError } from '../errors/guards.js';
import { PUSHBACK_HEADER } from '../retry/constants.js';
import { type DependencyFailure, DO_NOT_RETRY, dependencyFailureOf } from '../retry/pushback.js';
import { DETAILS_PREFIX } from './constants.js';

/**
 * How prazo's deadline errors travel in gRPC (SPEC D1, D6). Both "exceeded" and "insufficient" are
 * reported as `DEADLINE_EXCEEDED`, the code gRPC itself uses when a deadline cannot be met, so any
 * gRPC client and dashboard reads them right. The prazo error rides along as the status' `cause`:
 * grpc-js copies a status' own properties onto the error the caller receives, so `error.cause` is
 * the original `DeadlineInsufficientError` / `DeadlineExceededError` (see {@link prazoErrorOf}).
 */

/** A status object carrying the prazo error that produced it. */
export type PrazoStatusObject = StatusObject & { readonly cause: PrazoError };

/** The `DEADLINE_EXCEEDED` status for a prazo deadline error. */
export function deadlineStatus(error: PrazoError): PrazoStatusObject {
  return {
    code: status.DEADLINE_EXCEEDED,
    details: `${DETAILS_PREFIX}${error.message}`,
    metadata: new Metadata(),
    cause: error,
  };
}

/**
 * The pushback status for a handler that failed because one of its dependencies did (SPEC X6):
 * `DEADLINE_EXCEEDED` when time ran out, `UNAVAILABLE` when the dependency is down or failing, with the
 * trailer `grpc-retry-pushback-ms: -1`, gRPC's own "do not retry" (proposal A6), which grpc-js's
 * retries and hedges honour and so do prazo's. The trailers are these alone: the dependency's own
 * metadata (its error's) is not passed on.
 */
export function pushbackStatus(failure: DependencyFailure): PrazoStatusObject {
  const metadata = new Metadata();
  metadata.set(PUSHBACK_HEADER, DO_NOT_RETRY);
  return {
    code: failure.kind === 'timeout' ? status.DEADLINE_EXCEEDED : status.UNAVAILABLE,
    details: `${DETAILS_PREFIX}${failure.error.message}`,
    metadata,
    cause: failure.error,
  };
}

/**
 * What a server handler should answer for `error`: a dependency's failure becomes the pushback
 * status (SPEC X6; unless `pushback` is false); any other deadline error `DEADLINE_EXCEEDED` (grpc-js
 * would otherwise report prazo's string `code` as UNKNOWN); anything else is returned as is.
 */
export function toGrpcError<E>(error: E, pushback = true): E | PrazoStatusObject {
  if (pushback) {
    const failure = dependencyFailureOf(error);
    if (failure !== undefined) return pushbackStatus(failure);
  }
  return isDeadlineError(error) ? deadlineStatus(error) : error;
}

/** The prazo error behind a gRPC error the caller received, when there is one. */
export function prazoErrorOf(error: unknown): PrazoError | undefined {
  if (isPrazoError(error)) return error;
  const cause =
    error !== null && typeof error === 'object' ? (error as { cause?: unknown }).cause : undefined;
  return isPrazoError(cause) ? cause : undefined;
}
