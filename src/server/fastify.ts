import type { FastifyInstance, FastifyPluginCallback, FastifyReply, FastifyRequest } from 'fastify';
import { runWithDeadline } from '../deadline/ambient.js';
import type { Deadline } from '../deadline/deadline.js';
import type { DeadlineSource } from '../deadline/headers.js';
import { EXPIRED_STATUS_CODE } from './constants.js';
import { attachFields, type DeadlineFields } from './fields.js';
import { type ResolvedServerOptions, resolveServerOptions, type ServerDeadlineOptions } from './options.js';
import { admitRequest } from './request.js';
import { errorAnswer, expiredBody, isDeadlineError, notifyPushback } from './respond.js';

/** Keys of Fastify's own register options, which reach the plugin's options too. */
const REGISTER_OPTIONS = ['prefix', 'logLevel', 'logSerializers'] as const;

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by prazo's `fastifyDeadline` plugin (SPEC D2). */
    deadline: Deadline;
    /** Set by prazo's `fastifyDeadline` plugin: aborts at the deadline or on client disconnect (SPEC D7). */
    prazoSignal: AbortSignal;
  }
}

type Done = (error?: Error) => void;

/** Which header decided a request's deadline, kept on the raw request for the pushback event. */
const SOURCE = Symbol('prazo.source');

function onRequest(resolved: ResolvedServerOptions) {
  return (request: FastifyRequest, reply: FastifyReply, done: Done): void => {
    const admitted = admitRequest(resolved, request.raw, reply.raw, (source) => {
      void reply
        .code(EXPIRED_STATUS_CODE)
        .header('cache-control', 'no-store')
        .type('application/json; charset=utf-8')
        .send(expiredBody(source));
    });
    if (admitted === undefined) return; // answered; `done` is not called, so no handler runs
    attachFields(request as FastifyRequest & DeadlineFields, admitted);
    attachFields(request.raw, admitted);
    (request.raw as { [SOURCE]?: DeadlineSource })[SOURCE] = admitted.incoming.source;
    runWithDeadline(admitted.deadline, done);
  };
}

const plugin: FastifyPluginCallback<ServerDeadlineOptions> = (
  instance: FastifyInstance,
  options: ServerDeadlineOptions,
  done: Done,
) => {
  let resolved: ResolvedServerOptions;
  try {
    // Fastify hands a plugin its register options too (`prefix`, `logLevel`...): not ours to judge.
    const {
      prefix: _p,
      logLevel: _l,
      logSerializers: _s,
      ...own
    } = options as ServerDeadlineOptions & Record<(typeof REGISTER_OPTIONS)[number], unknown>;
    resolved = resolveServerOptions('fastifyDeadline', 'fastify', own);
  } catch (error) {
    done(error as Error);
    return;
  }
  instance.decorateRequest('deadline', null as unknown as Deadline);
  instance.decorateRequest('prazoSignal', null as unknown as AbortSignal);
  instance.addHook('onRequest', onRequest(resolved));
  // A route failing with a deadline error is answered 504 (SPEC D6) without taking the error handler:
  // `onError` runs before whichever handler applies (the app's own, in any encapsulation context, or
  // Fastify's default), and a status set there is the one that handler answers with. Setting the root
  // error handler instead broke apps with `allowErrorHandlerOverride: false` (FST_ERR_ERROR_HANDLER_
  // ALREADY_SET) and was silently replaced by any handler set after it.
  // A route failing because one of its dependencies did gets the pushback's status and headers the
  // same way (SPEC X6): 503 or 504, `grpc-retry-pushback-ms: -1`, `Retry-After`.
  instance.addHook('onError', (request, reply, error, next) => {
    if (!reply.sent) {
      const answer = errorAnswer(error, resolved.pushback, request.deadline ?? undefined);
      if (answer.pushback !== undefined) {
        void reply.code(answer.status).headers(answer.headers);
        const source = (request.raw as { [SOURCE]?: DeadlineSource })[SOURCE] ?? 'default';
        notifyPushback(resolved, request.method, source, answer);
      } else if (isDeadlineError(error)) {
        void reply.code(EXPIRED_STATUS_CODE).header('cache-control', 'no-store');
      }
    }
    next();
  });
  done();
};

/**
 * Fastify 5 plugin (SPEC D2, D3, D7): `app.register(fastifyDeadline, { defaultMs, maxMs })`.
 * It applies to the whole instance it is registered on (like fastify-plugin's `skip-override`,
 * without depending on it), so register it before the routes. Every request gets `request.deadline`
 * and `request.prazoSignal` and runs inside the ambient deadline; an already expired request is
 * answered 504 from the `onRequest` hook, before body parsing and without running the handler. A
 * route failing because one of its dependencies did is answered with a pushback (SPEC X6: 503 or 504,
 * `grpc-retry-pushback-ms: -1`, `Retry-After`; option `pushback`), any other deadline error 504
 * instead of 500, in the format of whichever error handler applies (Fastify's default: `{ statusCode:
 * 504, code: 'DEADLINE_EXCEEDED', error: 'Gateway Timeout', message }`). It sets no error handler of
 * its own.
 */
export const fastifyDeadline: FastifyPluginCallback<ServerDeadlineOptions> = Object.assign(plugin, {
  [Symbol.for('skip-override')]: true,
  [Symbol.for('fastify.display-name')]: 'prazo-deadline',
});
