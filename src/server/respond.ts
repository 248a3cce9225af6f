import type { ServerResponse } from 'node:http';
import type { DeadlineSource } from '../deadline/headers.js';
import { ErrorCode } from '../errors/codes.js';
import { isDeadlineError } from '../errors/guards.js';

export { isDeadlineError } from '../errors/guards.js';

import { EXPIRED_STATUS_CODE, HANDLER_ERROR_STATUS_CODE } from './constants.js';

/** The small JSON body of a deadline answer: a machine-readable code and a line for humans. */
export interface DeadlineErrorBody {
  readonly error: string;
  readonly message: string;
  readonly source?: DeadlineSource;
}

/** Writes `body` as JSON with `status`, unless the response is already under way. */
export function writeJson(res: ServerResponse, status: number, body: DeadlineErrorBody): void {
  if (res.headersSent || res.writableEnded || res.destroyed) return;
  // Headers a failed handler had set (content-encoding, set-cookie, content-length...) describe the
  // answer it never sent, not this one.
  for (const name of res.getHeaderNames()) res.removeHeader(name);
  const payload = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(payload),
    'cache-control': 'no-store',
  });
  res.end(payload);
}

/** The body answered to a request that arrived already expired. */
export function expiredBody(source: DeadlineSource): DeadlineErrorBody {
  return {
    error: ErrorCode.DEADLINE_EXCEEDED,
    message: 'the request arrived after its deadline; it was not processed',
    source,
  };
}

/** Answers 504 to a request that arrived with its deadline gone (SPEC D2): no handler work. */
export function writeExpired(res: ServerResponse, source: DeadlineSource): void {
  writeJson(res, EXPIRED_STATUS_CODE, expiredBody(source));
}

/** Status and body for an error a handler failed with: 504 for deadline errors, else 500. */
export function errorAnswer(error: unknown): { status: number; body: DeadlineErrorBody } {
  if (isDeadlineError(error)) {
    const code = (error as { code: string }).code;
    return { status: EXPIRED_STATUS_CODE, body: { error: code, message: (error as Error).message } };
  }
  return {
    status: HANDLER_ERROR_STATUS_CODE,
    body: { error: 'INTERNAL', message: 'the handler failed' },
  };
}
