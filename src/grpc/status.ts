import { Metadata, type StatusObject, status } from '@grpc/grpc-js';
import { isPrazoError, type PrazoError } from '../errors/base.js';
import type { DeadlineExceededError } from '../errors/deadline.js';
import { DependencyFailedError } from '../errors/dependency.js';
import { isConcurrencyLimited, isDeadlineError, isThrottled } from '../errors/guards.js';
import { PUSHBACK_HEADER } from '../retry/constants.js';
import {
  type DependencyFailure,
  DO_NOT_RETRY,
  dependencyFailureOf,
  readPushback,
} from '../retry/pushback.js';
import { DETAILS_PREFIX } from './constants.js';

/**
 * prazo's errors as gRPC statuses, and gRPC statuses as what they say of a dependency.
 *
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

/** The statuses that are the dependency's failure (not accepted by the throttle; recorded as errors). */
export const NOT_ACCEPTED: ReadonlySet<number> = new Set([
  status.UNAVAILABLE,
  status.DEADLINE_EXCEEDED,
  status.RESOURCE_EXHAUSTED,
  status.INTERNAL,
  status.UNKNOWN,
  status.DATA_LOSS,
]);

/**
 * The dependency's failure statuses (what HTTP calls a 5xx): a handler that fails with one of them has
 * a dependency that failed (SPEC X6), which prazo/grpc's and prazo/server's pushback read from the
 * attached `cause`.
 */
const FAILURE_CODES: ReadonlySet<number> = new Set([
  status.UNKNOWN,
  status.RESOURCE_EXHAUSTED,
  status.INTERNAL,
  status.UNAVAILABLE,
  status.DATA_LOSS,
]);

/**
 * Names what a status means as its `cause` (SPEC D6, X6): a DeadlineExceededError for
 * `DEADLINE_EXCEEDED` (when a deadline was in force: `onDeadline`), a DependencyFailedError for a
 * failure status (saying whether the dependency itself pushed back), so that a handler passing the
 * error on is answered with a pushback by prazo's servers. A status that already has a cause keeps it.
 */
export function explainStatus(
  received: StatusObject,
  dependency: string,
  onDeadline: (() => DeadlineExceededError) | undefined,
): StatusObject {
  if ('cause' in received) return received;
  if (received.code === status.DEADLINE_EXCEEDED && onDeadline !== undefined)
    return Object.assign({}, received, { cause: onDeadline() });
  if (!FAILURE_CODES.has(received.code)) return received;
  const told = readPushback(received.metadata);
  const cause = new DependencyFailedError({
    dependency,
    grpcCode: received.code,
    pushback: told !== undefined && !told.retry,
  });
  return Object.assign({}, received, { cause });
}

/**
 * The status of a call that ended with `error` before (or instead of) a channel's status:
 * `DEADLINE_EXCEEDED` for a deadline error, `UNAVAILABLE` for the throttle's and the limit's refusals
 * (the table in transport.ts), `UNKNOWN` for anything else (a channel that could not be created). The error
 * rides along as the status' `cause`: grpc-js copies it onto the error the caller gets.
 */
export function refusedStatus(error: unknown): StatusObject & { cause: unknown } {
  const code = isDeadlineError(error)
    ? status.DEADLINE_EXCEEDED
    : isThrottled(error) || isConcurrencyLimited(error)
      ? status.UNAVAILABLE
      : status.UNKNOWN;
  const message = error instanceof Error ? error.message : String(error);
  const details = isPrazoError(error) ? `${DETAILS_PREFIX}${message}` : message;
  return { code, details, metadata: new Metadata(), cause: error };
}
