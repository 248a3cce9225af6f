import type { IncomingMessage, ServerResponse } from 'node:http';
import { runWithDeadline } from '../deadline/ambient.js';
import type { Deadline } from '../deadline/deadline.js';
import type { DeadlineSource } from '../deadline/headers.js';
import { attachFields } from './fields.js';
import { type ResolvedServerOptions, resolveServerOptions, type ServerDeadlineOptions } from './options.js';
import { admitRequest } from './request.js';
import { errorAnswer, isDeadlineError, notifyPushback, writeJson } from './respond.js';

/**
 * `req.deadline` and `req.prazoSignal` on Express's `Request`, the way passport, express-session and
 * multer type what their middleware adds: through the global `Express.Request` interface that
 * `@types/express` merges into every route's request, params or not (#26: the documented cast
 * `req as Request & DeadlineFields` was refused, TS2352, on a route with params). Declaring a global
 * interface needs no import of express: a project without it compiles as before.
 *
 * Set on every request that passed `deadlineMiddleware` (mount it first: a route before it would see
 * them unset).
 */
declare global {
  namespace Express {
    interface Request {
      /** The request's deadline, capped by the local maximum (SPEC D2). Set by prazo's `deadlineMiddleware`. */
      deadline: Deadline;
      /** Aborts at the deadline or when the client disconnects (SPEC D7). Set by prazo's `deadlineMiddleware`. */
      prazoSignal: AbortSignal;
    }
  }
}

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
 * app.use(deadlineErrorHandler()); // a dependency's failure: a pushback (503/504); deadline errors: 504
 */
export function deadlineMiddleware(options: ServerDeadlineOptions = {}): ConnectMiddleware {
  const resolved = resolveServerOptions('deadlineMiddleware', 'express', options);
  return (req, res, next) => {
    const admitted = admitRequest(resolved, req, res);
    if (admitted === undefined) return;
    attachFields(req, admitted);
    (req as Admitted)[ADMITTED] = { resolved, source: admitted.incoming.source };
    runWithDeadline(admitted.deadline, () => next());
  };
}

/** What `deadlineErrorHandler` needs from the middleware that admitted the request. */
const ADMITTED = Symbol('prazo.admitted');
type Admitted = IncomingMessage & {
  [ADMITTED]?: { readonly resolved: ResolvedServerOptions; readonly source: DeadlineSource };
  deadline?: Deadline;
};

/**
 * Error middleware, mounted after the routes. A route that failed because one of its dependencies did
 * (SPEC X6) is answered with a pushback: 503 or 504 with `grpc-retry-pushback-ms: -1`, `Retry-After`
 * and a small JSON body, as `deadlineMiddleware`'s `pushback` option says (default on). Any other
 * deadline error (exceeded or insufficient, SPEC D6) is answered 504; every other error goes on to the
 * next error handler.
 */
export function deadlineErrorHandler(): ConnectErrorMiddleware {
  return (error, req, res, next) => {
    const admitted = (req as Admitted)[ADMITTED];
    const answer = res.headersSent
      ? undefined
      : errorAnswer(
          error,
          admitted === undefined ? {} : admitted.resolved.pushback,
          (req as Admitted).deadline,
        );
    if (answer === undefined || (answer.pushback === undefined && !isDeadlineError(error))) {
      next(error);
      return;
    }
    writeJson(res, answer.status, answer.body, answer.headers);
    if (admitted !== undefined)
      notifyPushback(admitted.resolved, req.method ?? 'GET', admitted.source, answer);
  };
}
