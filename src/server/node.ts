import type { IncomingMessage, ServerResponse } from 'node:http';
import { runWithDeadline } from '../deadline/ambient.js';
import { attachFields, type DeadlineFields } from './fields.js';
import { resolveServerOptions, type ServerDeadlineOptions } from './options.js';
import { admitRequest } from './request.js';
import { errorAnswer, notifyPushback, writeJson } from './respond.js';

/** A `node:http` request handler that receives the deadline fields. */
export type DeadlineHandler<Req extends IncomingMessage, Res extends ServerResponse> = (
  req: Req & DeadlineFields,
  res: Res,
) => unknown;

/**
 * Wraps a plain `node:http` request listener (SPEC D2, D3, D7): the incoming deadline is read and
 * capped, an already expired request is answered 504 without calling `handler`, and `handler` runs
 * inside the ambient deadline (`currentDeadline()`) with `req.deadline` and `req.prazoSignal`.
 *
 * A handler that throws or rejects is answered here (nobody else would), with a JSON body: a pushback
 * when it failed because a dependency did (503 or 504 + `grpc-retry-pushback-ms: -1` + `Retry-After`,
 * SPEC X6; option `pushback`), else 504 for deadline errors, 500 otherwise; a `handler-error` event
 * carries the error (and a `pushback` event the pushback).
 *
 * @example
 * http.createServer(withIncomingDeadline(async (req, res) => { ... }, { defaultMs: 1500, maxMs: 5000 }))
 */
export function withIncomingDeadline<
  Req extends IncomingMessage = IncomingMessage,
  Res extends ServerResponse = ServerResponse,
>(handler: DeadlineHandler<Req, Res>, options: ServerDeadlineOptions = {}): (req: Req, res: Res) => void {
  const resolved = resolveServerOptions('withIncomingDeadline', 'node', options);
  if (typeof handler !== 'function') {
    throw new TypeError(`withIncomingDeadline(handler): handler must be a function, got ${typeof handler}`);
  }
  return (req, res) => {
    const admitted = admitRequest(resolved, req, res);
    if (admitted === undefined) return;
    const onError = (error: unknown): void => {
      const answer = errorAnswer(error, resolved.pushback, admitted.deadline);
      const { status, body } = answer;
      const answered = !res.headersSent && !res.writableEnded;
      if (answered) {
        writeJson(res, status, body, answer.headers);
        notifyPushback(resolved, req.method ?? 'GET', admitted.incoming.source, answer);
      }
      // Cut mid-way: destroying tells the client the answer is not whole. An ended response is whole
      // (and may still be flushing): destroying it would lose or truncate what the handler sent.
      else if (!res.writableEnded) res.destroy();
      const event = {
        type: 'handler-error' as const,
        framework: 'node' as const,
        method: req.method ?? 'GET',
        source: admitted.incoming.source,
        error,
        statusCode: answered ? status : 0,
      };
      resolved.onEvent?.(event);
      if (resolved.events.active) resolved.events.emit(event);
    };
    runWithDeadline(admitted.deadline, () => {
      try {
        const result = handler(attachFields(req, admitted), res);
        if (isThenable(result)) result.then(undefined, onError);
      } catch (error) {
        onError(error);
      }
    });
  };
}

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return (
    value !== null &&
    (typeof value === 'object' || typeof value === 'function') &&
    typeof (value as { then?: unknown }).then === 'function'
  );
}
