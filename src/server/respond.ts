import type { ServerResponse } from 'node:http';
import type { Deadline } from '../deadline/deadline.js';
import type { DeadlineSource } from '../deadline/headers.js';
import { ErrorCode } from '../errors/codes.js';
import { isDeadlineError } from '../errors/guards.js';

export { isDeadlineError } from '../errors/guards.js';
export type { DeadlineErrorBody } from './constants.js';

import { type DeadlineErrorBody, EXPIRED_STATUS_CODE, HANDLER_ERROR_STATUS_CODE } from './constants.js';
import type { PushbackEvent } from './events.js';
import type { ResolvedServerOptions } from './options.js';
import { type PushbackSettings, pushbackAnswer } from './pushback.js';

/** Writes `body` as JSON with `status` (and `headers`), unless the response is already under way. */
export function writeJson(
  res: ServerResponse,
  status: number,
  body: DeadlineErrorBody,
  headers: Readonly<Record<string, string>> = {},
): void {
  if (res.headersSent || res.writableEnded || res.destroyed) return;
  // Headers a failed handler had set (content-encoding, set-cookie, content-length...) describe the
  // answer it never sent, not this one.
  for (const name of res.getHeaderNames()) res.removeHeader(name);
  const payload = JSON.stringify(body);
  res.writeHead(status, {
    ...headers,
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

/** What a server answers for a handler's error. */
export interface ErrorAnswer {
  readonly status: number;
  readonly body: DeadlineErrorBody;
  readonly headers: Readonly<Record<string, string>>;
  /** Set when the answer is a pushback (SPEC X6): the prazo code recognised. */
  readonly pushback?: string;
}

const NO_HEADERS: Readonly<Record<string, string>> = Object.freeze({});

/**
 * Status, headers and body for an error a handler failed with: a pushback (503/504, SPEC X6) when it
 * is a dependency's failure and pushback is on; else 504 for deadline errors, else 500.
 */
export function errorAnswer(error: unknown, pushback?: PushbackSettings, deadline?: Deadline): ErrorAnswer {
  try {
    const pushed = pushback === undefined ? undefined : pushbackAnswer(error, { ...pushback, deadline });
    if (pushed !== undefined) {
      const { status, body, headers } = pushed;
      return { status, body, headers, pushback: pushed.failure.error.code };
    }
    if (isDeadlineError(error)) {
      const code = (error as { code: string }).code;
      return {
        status: EXPIRED_STATUS_CODE,
        body: { error: code, message: String((error as Error).message) },
        headers: NO_HEADERS,
      };
    }
  } catch {
    // A hostile error (a getter that throws, a revoked Proxy): what it is cannot be read, so it is
    // the handler's failure, answered 500 like any other; never an unanswered request.
  }
  return {
    status: HANDLER_ERROR_STATUS_CODE,
    body: { error: 'INTERNAL', message: 'the handler failed' },
    headers: NO_HEADERS,
  };
}

/** Reports a pushback answer (SPEC X6) to the integration's listeners. */
export function notifyPushback(
  options: ResolvedServerOptions,
  method: string,
  source: DeadlineSource,
  answer: ErrorAnswer,
): void {
  if (answer.pushback === undefined || (options.onEvent === undefined && !options.events.active)) return;
  const event: PushbackEvent = {
    type: 'pushback',
    framework: options.framework,
    method,
    source,
    statusCode: answer.status,
    code: answer.pushback,
  };
  options.onEvent?.(event);
  if (options.events.active) options.events.emit(event);
}
