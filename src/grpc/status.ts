import { Metadata, type StatusObject, status } from '@grpc/grpc-js';
import { isPrazoError, type PrazoError } from '../errors/base.js';
import { isDeadlineError } from '../errors/guards.js';
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
 * What a server handler should answer for `error`: a deadline error becomes `DEADLINE_EXCEEDED`
 * (grpc-js would otherwise report prazo's string `code` as UNKNOWN); anything else is returned as is.
 */
export function toGrpcError<E>(error: E): E | PrazoStatusObject {
  return isDeadlineError(error) ? deadlineStatus(error) : error;
}

/** The prazo error behind a gRPC error the caller received, when there is one. */
export function prazoErrorOf(error: unknown): PrazoError | undefined {
  if (isPrazoError(error)) return error;
  const cause =
    error !== null && typeof error === 'object' ? (error as { cause?: unknown }).cause : undefined;
  return isPrazoError(cause) ? cause : undefined;
}
