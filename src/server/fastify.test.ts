import { Readable } from 'node:stream';
import Fastify, { type FastifyInstance } from 'fastify';
import { request } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { FakeClock } from '../clock/fake.js';
import { currentDeadline } from '../deadline/ambient.js';
import { DeadlineInsufficientError } from '../errors/deadline.js';
import { isDeadlineExceeded, isInvalidOptions } from '../errors/guards.js';
import { createServerEventHub, type ServerEvent } from './events.js';
import { fastifyDeadline } from './fastify.js';
import type { ServerDeadlineOptions } from './options.js';
import { aborted, deferred } from './server.test-helpers.js';

const EPOCH = 1_700_000_000_000;
const apps: FastifyInstance[] = [];
afterEach(async () => {
  await Promise.all(apps.splice(0).map((a) => a.close()));
});

async function start(build: (app: FastifyInstance) => void, options: ServerDeadlineOptions) {
  const events: ServerEvent[] = [];
  const hub = createServerEventHub();
  hub.onServerEvent((e) => events.push(e));
  const app = Fastify();
  apps.push(app);
  await app.register(fastifyDeadline, { ...options, events: hub });
  build(app);
  const url = await app.listen({ port: 0, host: '127.0.0.1' });
  return { url, events };
}

describe('fastifyDeadline (real Fastify 5 on 127.0.0.1)', () => {
  it('answers an expired request 504 from onRequest: no body parsing, no handler (SPEC D2)', async () => {
    const clock = new FakeClock({ epoch: EPOCH });
    let handled = 0;
    let parsed = 0;
    const { url, events } = await start(
      (app) => {
        app.addHook('preValidation', async () => {
          parsed += 1;
        });
        app.post('/', async () => {
          handled += 1;
          return 'ok';
        });
      },
      { clock },
    );
    const res = await request(url, {
      method: 'POST',
      headers: { 'grpc-timeout': '0S', 'content-type': 'application/json' },
      body: '{"a":1}',
    });
    expect(res.statusCode).toBe(504);
    expect(await res.body.json()).toMatchObject({ error: 'DEADLINE_EXCEEDED', source: 'grpc-timeout' });
    expect([handled, parsed]).toEqual([0, 0]);
    expect(events).toEqual([expect.objectContaining({ type: 'rejected-expired', framework: 'fastify' })]);
  });

  it('applies to routes of child contexts and keeps the ambient deadline after body parsing (skip-override)', async () => {
    const clock = new FakeClock({ epoch: EPOCH });
    const { url } = await start(
      (app) => {
        void app.register(async (child) => {
          child.post('/child', async (req) => ({
            body: req.body,
            ambient: currentDeadline()?.remainingMs(),
            own: req.deadline.remainingMs(),
            raw: (req.raw as unknown as { deadline?: unknown }).deadline === req.deadline,
          }));
        });
      },
      { clock, defaultMs: 400, maxMs: 900 },
    );
    const res = await request(`${url}/child`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-deadline-epoch-ms': String(EPOCH + 5_000) },
      body: JSON.stringify({ n: 1 }),
    });
    expect(await res.body.json()).toEqual({ body: { n: 1 }, ambient: 900, own: 900, raw: true });
    const malformed = await request(`${url}/child`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'x-deadline-epoch-ms': 'tomorrow',
        'grpc-timeout': '5Q',
      },
      body: '{}',
    });
    expect(await malformed.body.json()).toMatchObject({ ambient: 400, own: 400 });
    async function* slowBody() {
      yield '{"n":';
      await new Promise((r) => setTimeout(r, 50));
      yield '2}';
    }
    const chunked = await request(`${url}/child`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: Readable.from(slowBody()),
    });
    expect(await chunked.body.json()).toMatchObject({ body: { n: 2 }, ambient: 400, own: 400 });
  });

  it('fires request.prazoSignal at the deadline (SPEC D7)', async () => {
    const clock = new FakeClock({ epoch: EPOCH });
    const entered = deferred<AbortSignal>();
    const { url, events } = await start(
      (app) => {
        app.get('/', async (req) => {
          entered.resolve(req.prazoSignal);
          const reason = await aborted(req.prazoSignal);
          return { deadline: isDeadlineExceeded(reason) };
        });
      },
      { clock },
    );
    const pending = request(url, { headers: { 'x-envoy-expected-rq-timeout-ms': '120' } });
    const signal = await entered.promise;
    await clock.advanceAsync(119);
    expect(signal.aborted).toBe(false);
    await clock.advanceAsync(1);
    expect(await (await pending).body.json()).toEqual({ deadline: true });
    expect(clock.pendingTimers()).toBe(0);
    expect(events.map((e) => e.type)).toEqual(['cancelled', 'finished']);
  });

  it('answers 504 when a route fails with a deadline error, and leaves other errors to Fastify (SPEC D6)', async () => {
    const { url } = await start((app) => {
      app.get('/late', async () => {
        throw new DeadlineInsufficientError({ dependency: 'supplier', remainingMs: 10, neededMs: 250 });
      });
      app.get('/bad', async () => {
        throw Object.assign(new Error('nope'), { statusCode: 409 });
      });
      app.get('/boom', async () => {
        throw new Error('boom');
      });
    }, {});
    const late = await request(`${url}/late`);
    expect(late.statusCode).toBe(504);
    expect(late.headers['cache-control']).toBe('no-store');
    expect(await late.body.json()).toMatchObject({ statusCode: 504, code: 'DEADLINE_INSUFFICIENT' });
    const bad = await request(`${url}/bad`);
    expect(bad.statusCode).toBe(409);
    expect(await bad.body.json()).toMatchObject({ message: 'nope' });
    const boom = await request(`${url}/boom`);
    expect(boom.statusCode).toBe(500);
    await boom.body.dump();
  });

  it('takes no error handler: registers after the app set its own, even with allowErrorHandlerOverride: false (#14)', async () => {
    const app = Fastify({ allowErrorHandlerOverride: false });
    apps.push(app);
    app.setErrorHandler((error, _req, reply) => {
      void reply.send({ mine: true, message: (error as Error).message });
    });
    // Before: FST_ERR_ERROR_HANDLER_ALREADY_SET at start-up (the plugin set the root error handler).
    await app.register(fastifyDeadline, { prefix: '/ignored', logLevel: 'warn' } as never);
    app.get('/late', async () => {
      throw new DeadlineInsufficientError({ dependency: 'supplier', remainingMs: 10, neededMs: 250 });
    });
    app.get('/boom', async () => {
      throw new Error('boom');
    });
    await app.register(async (child) => {
      child.setErrorHandler((error, _req, reply) => {
        void reply.send({ child: true, code: (error as { code?: string }).code });
      });
      child.get('/child-late', async () => {
        throw new DeadlineInsufficientError({ dependency: 'x', remainingMs: 1, neededMs: 2 });
      });
    });
    const url = await app.listen({ port: 0, host: '127.0.0.1' });
    const late = await request(`${url}/late`);
    expect([late.statusCode, await late.body.json()]).toEqual([
      504,
      { mine: true, message: expect.any(String) },
    ]);
    const boom = await request(`${url}/boom`);
    expect([boom.statusCode, await boom.body.json()]).toEqual([200, { mine: true, message: 'boom' }]); // the app's own handler decides (it set no code)
    const child = await request(`${url}/child-late`);
    expect([child.statusCode, await child.body.json()]).toEqual([
      504,
      { child: true, code: 'DEADLINE_INSUFFICIENT' },
    ]);
  });

  it('refuses invalid options at register time, a misspelt one with the name it was meant to be', async () => {
    const misspelt = Fastify();
    apps.push(misspelt);
    await expect(misspelt.register(fastifyDeadline, { maxMS: 2_000 } as never)).rejects.toThrow(
      /unknown option `maxMS`; did you mean `maxMs`\?/,
    );
    const app = Fastify();
    apps.push(app);
    await expect(app.register(fastifyDeadline, { maxMs: -1, defaultMs: 0 })).rejects.toSatisfy(
      isInvalidOptions,
    );
  });
});
