import type { DeadlineSource } from '../deadline/headers.js';

/**
 * Fixed parts of the server integrations (SPEC D2, D3, D7, X6), in one place: the statuses they
 * answer with and the JSON body every such answer carries (an expired request's, a deadline error's,
 * a pushback's), the request's field names, the client-disconnect message.
 */

/** The small JSON body of a deadline answer: a machine-readable code and a line for humans. */
export interface DeadlineErrorBody {
  readonly error: string;
  readonly message: string;
  readonly source?: DeadlineSource;
}

/** Status answered to a request that arrives with its deadline already gone (the gateway-timeout class). */
export const EXPIRED_STATUS_CODE = 504;

/**
 * Statuses of a pushback (SPEC X6): the handler failed because time ran out (the gateway-timeout
 * class) or because a dependency is down or failing (service unavailable).
 */
export const PUSHBACK_STATUS = Object.freeze({ timeout: 504, unavailable: 503 } as const);

/** Status answered when a wrapped `node:http` handler fails with something other than a deadline error. */
export const HANDLER_ERROR_STATUS_CODE = 500;

/** Property names under which the request's deadline and signal are exposed. */
export const RequestFields = Object.freeze({
  deadline: 'deadline',
  signal: 'prazoSignal',
} as const);

/** Message of the abort reason when the client goes away before the response is sent. */
export const CLIENT_DISCONNECT_MESSAGE = 'the client closed the connection before the response was sent';
