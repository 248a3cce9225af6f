import { createServer } from 'node:http';
import express from 'express';
import Fastify from 'fastify';
import { request } from 'undici';
import { afterEach, describe, expect, expectTypeOf, it } from 'vitest';
import { checkConfigText } from '../config/load.js';
import type { Deadline } from '../deadline/deadline.js';
import { deadlineErrorHandler, deadlineMiddleware } from './express.js';
import { fastifyDeadline } from './fastify.js';
import { withIncomingDeadline } from './node.js';
import { close, listen } from './server.test-helpers.js';

/**
 * Types that guide (#26 item 3): the config's `service:` block goes to every server integration as it
 * is, and Express routes see `req.deadline` / `req.prazoSignal` typed through `Express.Request`.
 */

const CONFIG = `
service:
  name: checkout
  defaultMs: 700
  maxMs: 900
  clockSkewMs: 0
dependencies:
  - name: inventory
    p99Ms: 80
`;

function service() {
  const { config, problems } = checkConfigText(CONFIG);
  expect(problems).toEqual([]);
  expect(config?.service).toMatchObject({ name: 'checkout', defaultMs: 700, maxMs: 900 });
  return config!.service;
}

const servers: ReturnType<typeof createServer>[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map(close));
});

describe("the config's service block, as is (#26 item 3)", () => {
  it('deadlineMiddleware(config.service): built, and its maxMs and defaultMs in force', async () => {
    // Before: "deadlineMiddleware: unknown option `name`" at start.
    const app = express();
    app.use(deadlineMiddleware(service()));
    app.get('/left', (req, res) => {
      res.json({ left: req.deadline.remainingMs() });
    });
    app.use(deadlineErrorHandler());
    const server = createServer(app);
    servers.push(server);
    const url = await listen(server);
    const capped = (await (
      await request(`${url}/left`, { headers: { 'grpc-timeout': '60S' } })
    ).body.json()) as { left: number };
    expect(capped.left).toBeGreaterThan(800);
    expect(capped.left).toBeLessThanOrEqual(900);
    const byDefault = (await (await request(`${url}/left`)).body.json()) as { left: number };
    expect(byDefault.left).toBeGreaterThan(600);
    expect(byDefault.left).toBeLessThanOrEqual(700);
  });

  it('withIncomingDeadline(handler, config.service) and fastifyDeadline with it register', async () => {
    const server = createServer(
      withIncomingDeadline((req, res) => {
        res.end(String(req.deadline.remainingMs()));
      }, service()),
    );
    servers.push(server);
    const url = await listen(server);
    const left = Number(await (await request(url, { headers: { 'grpc-timeout': '60S' } })).body.text());
    expect(left).toBeGreaterThan(800);
    expect(left).toBeLessThanOrEqual(900);

    const app = Fastify();
    // Fastify's `register` refuses `undefined` options: a config without `service:` needs `?? {}`.
    await app.register(fastifyDeadline, service() ?? {});
    app.get('/', async (req) => ({ left: req.deadline.remainingMs() }));
    const answer = await app.inject({ url: '/', headers: { 'grpc-timeout': '60S' } });
    expect(answer.statusCode).toBe(200);
    expect(answer.json<{ left: number }>().left).toBeLessThanOrEqual(900);
    await app.close();
  });

  it('still refuses an unknown key with a "did you mean"', () => {
    expect(() => deadlineMiddleware({ maxMS: 5_000 } as never)).toThrow(/maxMs/);
    expect(() => deadlineMiddleware({ name: 7 } as never)).toThrow(/name/);
  });
});

describe('Express.Request carries the deadline fields (#26 item 3)', () => {
  it('types req.deadline and req.prazoSignal on a route with params, without a cast', async () => {
    const app = express();
    app.use(deadlineMiddleware({ defaultMs: 500 }));
    // Before: `req.deadline` did not exist on express's Request, and the documented cast
    // `req as Request & DeadlineFields` was refused (TS2352) on a route with params.
    app.get('/orders/:id', (req, res) => {
      expectTypeOf(req.deadline).toEqualTypeOf<Deadline>();
      expectTypeOf(req.prazoSignal).toEqualTypeOf<AbortSignal>();
      expectTypeOf(req.params.id).toEqualTypeOf<string>();
      res.json({ id: req.params.id, left: req.deadline.remainingMs(), aborted: req.prazoSignal.aborted });
    });
    const server = createServer(app);
    servers.push(server);
    const url = await listen(server);
    const body = (await (await request(`${url}/orders/42`)).body.json()) as Record<string, unknown>;
    expect(body).toMatchObject({ id: '42', aborted: false });
    expect(body.left).toBeGreaterThan(0);
  });
});
