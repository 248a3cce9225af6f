import { createServer } from 'node:http';
import express from 'express';
import { request } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { FakeClock } from '../clock/fake.js';
import { currentDeadline } from '../deadline/ambient.js';
import { callWithDeadline } from '../deadline/call.js';
import { isDeadlineExceeded } from '../errors/guards.js';
import { createServerEventHub, type ServerEvent } from './events.js';
import { deadlineErrorHandler, deadlineMiddleware } from './express.js';
import type { DeadlineFields } from './fields.js';
import { aborted, close, deferred, listen } from './server.test-helpers.js';

const EPOCH = 1_700_000_000_000;
const servers: ReturnType<typeof createServer>[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map(close));
});

async function app(build: (a: express.Express) => void, clock: FakeClock) {
  const events: ServerEvent[] = [];
  const hub = createServerEventHub();
  hub.onServerEvent((e) => events.push(e));
  const a = express();
  a.use(deadlineMiddleware({ clock, defaultMs: 500, maxMs: 2_000, events: hub }));
  build(a);
  a.use(deadlineErrorHandler());
  const server = createServer(a);
  servers.push(server);
  return { url: await listen(server), events };
}

describe('deadlineMiddleware (real Express 5 on 127.0.0.1)', () => {
  it('answers an expired request 504 before any route runs (SPEC D2)', async () => {
    const clock = new FakeClock({ epoch: EPOCH });
    let routeCalls = 0;
    const { url, events } = await app((a) => {
      a.use((_req, _res, next) => {
        routeCalls += 1;
        next();
      });
      a.get('/', (_req, res) => res.send('ok'));
    }, clock);
    const res = await request(url, { headers: { 'x-deadline-epoch-ms': String(EPOCH - 1) } });
    expect(res.statusCode).toBe(504);
    expect(await res.body.json()).toMatchObject({
      error: 'DEADLINE_EXCEEDED',
      source: 'x-deadline-epoch-ms',
    });
    expect(routeCalls).toBe(0);
    expect(events).toEqual([expect.objectContaining({ type: 'rejected-expired', framework: 'express' })]);
  });

  it('keeps the ambient deadline through express.json() body parsing and async routes', async () => {
    const clock = new FakeClock({ epoch: EPOCH });
    const { url } = await app((a) => {
      a.post('/orders', express.json(), async (req, res) => {
        await Promise.resolve();
        const fields = req as unknown as DeadlineFields;
        res.json({
          body: req.body,
          ambient: currentDeadline()?.remainingMs(),
          own: fields.deadline.remainingMs(),
        });
      });
    }, clock);
    const res = await request(`${url}/orders`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'grpc-timeout': '1500m' },
      body: JSON.stringify({ id: 7 }),
    });
    expect(await res.body.json()).toEqual({ body: { id: 7 }, ambient: 1_500, own: 1_500 });
  });

  it('malformed deadline headers get the default deadline, never a crash (SPEC D3)', async () => {
    const clock = new FakeClock({ epoch: EPOCH });
    const { url } = await app((a) => {
      a.get('/', (req, res) => res.json({ left: (req as unknown as DeadlineFields).deadline.remainingMs() }));
    }, clock);
    for (const value of ['soon', '-1', '1e3', '99999999999999999999', '12.5', '0x20']) {
      const res = await request(url, {
        headers: {
          'x-deadline-epoch-ms': value,
          'grpc-timeout': `${value}x`,
          'x-envoy-expected-rq-timeout-ms': value,
        },
      });
      expect(res.statusCode, value).toBe(200);
      expect(await res.body.json(), value).toEqual({ left: 500 });
    }
  });

  it('fires req.prazoSignal at the deadline and maps a route deadline error to 504 (SPEC D5, D7)', async () => {
    const clock = new FakeClock({ epoch: EPOCH });
    const entered = deferred<AbortSignal>();
    const { url, events } = await app((a) => {
      a.get('/', async (req) => {
        const { deadline, prazoSignal } = req as unknown as DeadlineFields;
        entered.resolve(prazoSignal);
        await callWithDeadline(deadline, {
          name: 'slow',
          p99Ms: 10,
          signal: prazoSignal,
          execute: ({ signal }) => aborted(signal).then(() => 'never'),
        });
      });
    }, clock);
    const pending = request(url, { headers: { 'grpc-timeout': '300m' } });
    const signal = await entered.promise;
    await clock.advanceAsync(299);
    expect(signal.aborted).toBe(false);
    await clock.advanceAsync(1);
    expect(isDeadlineExceeded(signal.reason)).toBe(true);
    const res = await pending;
    expect(res.statusCode).toBe(504);
    expect(res.headers['grpc-retry-pushback-ms']).toBe('-1'); // out of time: do not retry (SPEC X6)
    expect(await res.body.json()).toMatchObject({ error: 'DEADLINE_EXCEEDED' });
    expect(clock.pendingTimers()).toBe(0);
    expect(events.map((e) => e.type)).toEqual(['cancelled', 'pushback', 'finished']);
  });
});
