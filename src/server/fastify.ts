import type { FastifyInstance, FastifyPluginCallback, FastifyReply, FastifyRequest } from 'fastify';
import { runWithDeadline } from '../deadline/ambient.js';
import type { Deadline } from '../deadline/deadline.js';
import { EXPIRED_STATUS_CODE } from './constants.js';
import { attachFields, type DeadlineFields } from './fields.js';
import { type ResolvedServerOptions, resolveServerOptions, type ServerDeadlineOptions } from './options.js';
import { admitRequest } from './request.js';
import { errorAnswer, expiredBody, isDeadlineError } from './respond.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by prazo's `fastifyDeadline` plugin (SPEC D2). */
    deadline: Deadline;
    /** Set by prazo's `fastifyDeadline` plugin: aborts at the deadline or on client disconnect (SPEC D7). */
    prazoSignal: AbortSignal;
  }
}

type Done = (error?: Error) => void;

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
    resolved = resolveServerOptions('fastifyDeadline', 'fastify', options);
  } catch (error) {
    done(error as Error);
    return;
  }
  instance.decorateRequest('deadline', null as unknown as Deadline);
  instance.decorateRequest('prazoSignal', null as unknown as AbortSignal);
  instance.addHook('onRequest', onRequest(resolved));
  // Deadline errors thrown by routes become 504 with the same small body (SPEC D6); anything else is
  // sent on to Fastify's own handler unchanged. A handler the user sets later replaces this one.
  instance.setErrorHandler((error, _request, reply) => {
    if (!isDeadlineError(error)) {
      void reply.send(error);
      return;
    }
    const { status, body } = errorAnswer(error);
    void reply.code(status).header('cache-control', 'no-store').send(body);
  });
  done();
};

/**
 * Fastify 5 plugin (SPEC D2, D3, D7): `app.register(fastifyDeadline, { defaultMs, maxMs })`.
 * It applies to the whole instance it is registered on (like fastify-plugin's `skip-override`,
 * without depending on it), so register it before the routes. Every request gets `request.deadline`
 * and `request.prazoSignal` and runs inside the ambient deadline; an already expired request is
 * answered 504 from the `onRequest` hook, before body parsing and without running the handler, and a
 * route failing with a deadline error (exceeded or insufficient) is answered 504 instead of 500.
 */
export const fastifyDeadline: FastifyPluginCallback<ServerDeadlineOptions> = Object.assign(plugin, {
  [Symbol.for('skip-override')]: true,
  [Symbol.for('fastify.display-name')]: 'prazo-deadline',
});
