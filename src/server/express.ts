import type { IncomingMessage, ServerResponse } from 'node:http';
import { runWithDeadline } from '../deadline/ambient.js';
import { attachFields } from './fields.js';
import { resolveServerOptions, type ServerDeadlineOptions } from './options.js';
import { admitRequest } from './request.js';
import { errorAnswer, isDeadlineError, writeJson } from './respond.js';

/** A Connect-style middleware; Express 5 accepts it as is (typed on `node:http`, no express import). */
export type ConnectMiddleware = (
  req: IncomingMessage,
  res: ServerResponse,
  next: (error?: unknown) => void,
) => void;

/** A Connect-style error middleware (four parameters: Express recognises it by its arity). */
export type ConnectErrorMiddleware = (
  error: unknown,
  req: IncomingMessage,
  res: ServerResponse,
  next: (error?: unknown) => void,
) => void;

/**
 * Express 5 / Connect middleware (SPEC D2, D3, D7). Mount it first: everything after it runs inside
 * the request's ambient deadline and sees `req.deadline` and `req.prazoSignal`; a request that
 * arrives already expired gets 504 and never reaches the routes.
 *
 * @example
 * app.use(deadlineMiddleware({ defaultMs: 1500, maxMs: 5000 }));
 * app.get('/orders', async (req, res) => { ... callWithDeadline(currentDeadline(), { signal: req.prazoSignal, ... }) });
 * app.use(deadlineErrorHandler()); // deadline errors from routes become 504
 */
export function deadlineMiddleware(options: ServerDeadlineOptions = {}): ConnectMiddleware {
  const resolved = resolveServerOptions('deadlineMiddleware', 'express', options);
  return (req, res, next) => {
    const admitted = admitRequest(resolved, req, res);
    if (admitted === undefined) return;
    attachFields(req, admitted);
    runWithDeadline(admitted.deadline, () => next());
  };
}

/**
 * Error middleware answering 504 with a small JSON body when a route failed with a deadline error
 * (exceeded or insufficient, SPEC D6); any other error goes on to the next error handler.
 */
export function deadlineErrorHandler(): ConnectErrorMiddleware {
  return (error, _req, res, next) => {
    if (!isDeadlineError(error) || res.headersSent) {
      next(error);
      return;
    }
    const { status, body } = errorAnswer(error);
    writeJson(res, status, body);
  };
}
