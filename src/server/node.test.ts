import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { request } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { sleep } from '../clock/clock.js';
import { FakeClock } from '../clock/fake.js';
import { systemClock } from '../clock/system.js';
import { currentDeadline } from '../deadline/ambient.js';
import { callWithDeadline } from '../deadline/call.js';
import { DeadlineInsufficientError } from '../errors/deadline.js';
import { isDeadlineExceeded, isInvalidOptions } from '../errors/guards.js';
import { createServerEventHub, type ServerEvent } from './events.js';
import { withIncomingDeadline } from './node.js';
import type { ServerDeadlineOptions } from './options.js';
import { aborted, close, deferred, listen } from './server.test-helpers.js';

const EPOCH = 1_700_000_000_000;
const servers: ReturnType<typeof createServer>[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map(close));
});

type Handler = Parameters<typeof withIncomingDeadline>[0];

async function start(handler: Handler, options: ServerDeadlineOptions = {}) {
  const events: ServerEvent[] = [];
  const hub = createServerEventHub();
  hub.onServerEvent((e) => events.push(e));
  const server = createServer(withIncomingDeadline(handler, { events: hub, ...options }));
  servers.push(server);
  return { url: await listen(server), events };
}

describe('withIncomingDeadline (node:http, real sockets on 127.0.0.1)', () => {
  it('answers an already expired request 504 with a JSON body and never calls the handler (SPEC D2)', async () => {
    const clock = new FakeClock({ epoch: EPOCH });
    let calls = 0;
    const { url, events } = await start(
      (_req, res) => {
        calls += 1;
        res.end('handled');
      },
      { clock },
    );
    for (const headers of [{ 'x-deadline-epoch-ms': String(EPOCH - 5) }, { 'grpc-timeout': '0m' }]) {
      const res = await request(url, { headers });
      expect(res.statusCode).toBe(504);
      expect(res.headers['content-type']).toMatch(/^application\/json/);
      expect(await res.body.json()).toMatchObject({ error: 'DEADLINE_EXCEEDED' });
    }
    expect(calls).toBe(0);
    expect(events.map((e) => e.type)).toEqual(['rejected-expired', 'rejected-expired']);
    expect(events[0]).toMatchObject({ framework: 'node', method: 'GET', source: 'x-deadline-epoch-ms' });
  });

  it('exposes the capped deadline as req.deadline and as the ambient deadline, across awaits (SPEC D2)', async () => {
    const clock = new FakeClock({ epoch: EPOCH });
    const { url } = await start(
      async (req, res) => {
        await new Promise((r) => setImmediate(r));
        const ambient = currentDeadline();
        res.end(JSON.stringify({ same: ambient?.at === req.deadline.at, left: req.deadline.remainingMs() }));
      },
      { clock, defaultMs: 300, maxMs: 1_000 },
    );
    const ask = async (headers: Record<string, string>) => (await request(url, { headers })).body.json();
    expect(await ask({ 'x-deadline-epoch-ms': String(EPOCH + 700) })).toEqual({ same: true, left: 700 });
    expect(await ask({ 'x-deadline-epoch-ms': String(EPOCH + 60_000) })).toEqual({ same: true, left: 1_000 });
    expect(await ask({ 'x-envoy-expected-rq-timeout-ms': '450' })).toEqual({ same: true, left: 450 });
    expect(await ask({})).toEqual({ same: true, left: 300 });
  });

  it('fires req.prazoSignal exactly at the deadline with DeadlineExceededError, then clears its timer (SPEC D7)', async () => {
    const clock = new FakeClock({ epoch: EPOCH });
    const entered = deferred<AbortSignal>();
    const { url, events } = await start(
      async (req, res) => {
        entered.resolve(req.prazoSignal);
        const reason = await aborted(req.prazoSignal);
        res.end(JSON.stringify({ code: (reason as { code?: string }).code }));
      },
      { clock, maxMs: 1_000 },
    );
    const pending = request(url, { headers: { 'grpc-timeout': '250m' } });
    const signal = await entered.promise;
    expect(clock.pendingTimers()).toBe(1);
    await clock.advanceAsync(249);
    expect(signal.aborted).toBe(false);
    await clock.advanceAsync(1);
    expect(signal.aborted).toBe(true);
    expect(isDeadlineExceeded(signal.reason)).toBe(true);
    expect(await (await pending).body.json()).toEqual({ code: 'DEADLINE_EXCEEDED' });
    expect(clock.pendingTimers()).toBe(0);
    expect(events.map((e) => e.type)).toEqual(['cancelled', 'finished']);
    expect(events[0]).toMatchObject({ reason: 'deadline', elapsedMs: 250 });
  });

  it('counts a response finished after its deadline as wasted work, with its overrun (SPEC D7)', async () => {
    const clock = new FakeClock({ epoch: EPOCH });
    const entered = deferred();
    const { url, events } = await start(
      async (_req, res) => {
        entered.resolve();
        await sleep(clock, 400);
        res.end('late');
      },
      { clock },
    );
    const pending = request(url, { headers: { 'x-envoy-expected-rq-timeout-ms': '250' } });
    await entered.promise;
    await clock.advanceAsync(400);
    expect(await (await pending).body.text()).toBe('late');
    await new Promise((r) => setImmediate(r));
    const finished = events.find((e) => e.type === 'finished');
    expect(finished).toMatchObject({ statusCode: 200, elapsedMs: 400, budgetMs: 250, overrunMs: 150 });
    expect(events.filter((e) => e.type === 'wasted-work')).toEqual([
      expect.objectContaining({ overrunMs: 150, elapsedMs: 400, source: 'x-envoy-expected-rq-timeout-ms' }),
    ]);
  });

  it('a response in time is not wasted work and leaves no timer nor listener behind', async () => {
    const clock = new FakeClock({ epoch: EPOCH });
    const counts: number[][] = [];
    const record = (res: ServerResponse) =>
      res.once('close', () =>
        setImmediate(() => counts.push([res.listenerCount('finish'), res.listenerCount('close')])),
      );
    const plain = createServer((_req, res) => {
      record(res);
      res.end('ok');
    });
    servers.push(plain);
    const { url, events } = await start(
      (_req, res) => {
        record(res as ServerResponse);
        res.end('ok');
      },
      { clock },
    );
    for (let i = 0; i < 20; i += 1) await (await request(url)).body.text();
    await (await request(await listen(plain))).body.text();
    await new Promise((r) => setTimeout(r, 20));
    expect(clock.pendingTimers()).toBe(0);
    expect(events.filter((e) => e.type === 'wasted-work')).toHaveLength(0);
    expect(events.filter((e) => e.type === 'finished')).toHaveLength(20);
    const baseline = counts.at(-1);
    for (const wrapped of counts.slice(0, 20)) expect(wrapped).toEqual(baseline);
  });

  it('a client that disconnects aborts the handler downstream call (SPEC D7)', async () => {
    const downstreamClosed = deferred<number>();
    const downstreamGot = deferred();
    const downstream = createServer((req: IncomingMessage, res: ServerResponse) => {
      downstreamGot.resolve();
      const at = performance.now();
      res.on('close', () => downstreamClosed.resolve(performance.now() - at));
      req.resume(); // never answers
    });
    servers.push(downstream);
    const downUrl = await listen(downstream);
    const outcome = deferred<unknown>();
    const { url, events } = await start(
      async (req, res) => {
        try {
          await callWithDeadline(req.deadline, {
            name: 'downstream',
            p99Ms: 10,
            signal: req.prazoSignal,
            execute: ({ signal, headers }) => request(downUrl, { signal, headers }),
          });
          outcome.resolve('completed');
        } catch (error) {
          outcome.resolve(error);
        }
        res.end();
      },
      { defaultMs: 10_000, maxMs: 10_000 },
    );
    const client = new AbortController();
    const call = request(url, { signal: client.signal }).catch((e: unknown) => e);
    await downstreamGot.promise;
    client.abort();
    const error = (await outcome.promise) as DOMException;
    expect(error.name).toBe('AbortError');
    expect(error.message).toMatch(/client closed the connection/);
    expect(await downstreamClosed.promise).toBeLessThan(2_000);
    await call;
    expect(events).toContainEqual(
      expect.objectContaining({ type: 'cancelled', reason: 'client-disconnect' }),
    );
    expect(events.some((e) => e.type === 'finished')).toBe(false);
  });

  it('answers 504 when the handler fails with a deadline error, 500 otherwise, and reports it', async () => {
    const { url, events } = await start(async (req) => {
      if (req.url === '/insufficient') {
        throw new DeadlineInsufficientError({ dependency: 'db', remainingMs: 5, neededMs: 80 });
      }
      throw new Error('boom');
    });
    const a = await request(`${url}/insufficient`);
    expect(a.statusCode).toBe(504);
    expect(await a.body.json()).toMatchObject({ error: 'DEADLINE_INSUFFICIENT' });
    const b = await request(`${url}/other`);
    expect(b.statusCode).toBe(500);
    await b.body.text();
    const errors = events.filter((e) => e.type === 'handler-error');
    expect(errors.map((e) => e.statusCode)).toEqual([504, 500]);
  });

  it('the error answer drops headers the failed handler had set for its own answer', async () => {
    const { url } = await start(async (_req, res) => {
      res.setHeader('content-encoding', 'gzip');
      res.setHeader('set-cookie', 'session=1');
      res.setHeader('content-length', '999');
      throw new DeadlineInsufficientError({ dependency: 'db', remainingMs: 5, neededMs: 80 });
    });
    const res = await request(url);
    expect(res.statusCode).toBe(504);
    expect(res.headers['content-encoding']).toBeUndefined();
    expect(res.headers['set-cookie']).toBeUndefined();
    expect(await res.body.json()).toMatchObject({ error: 'DEADLINE_INSUFFICIENT' });
  });

  it('a handler that fails after its response ended: the response is delivered, not cut', async () => {
    const big = 'x'.repeat(4 * 1024 * 1024); // more than a socket takes at once
    const { url, events } = await start(async (req, res) => {
      if (req.url === '/sync') {
        res.end('sent');
        throw new Error('after the answer (sync)');
      }
      res.end(big);
      throw new Error('after the answer (async)');
    });
    const a = await request(`${url}/sync`);
    expect([a.statusCode, await a.body.text()]).toEqual([200, 'sent']);
    const b = await request(`${url}/async`);
    expect(b.statusCode).toBe(200);
    expect((await b.body.text()).length).toBe(big.length);
    // The server reports a response when its side is done, which can be just after the client read it.
    for (let i = 0; i < 100 && events.filter((e) => e.type === 'finished').length < 2; i += 1) {
      await new Promise((resolve) => setImmediate(resolve));
      if (i > 50) await sleep(systemClock, 10);
    }
    const errors = events.filter((e) => e.type === 'handler-error');
    expect(errors.map((e) => e.statusCode)).toEqual([0, 0]);
    expect(events.filter((e) => e.type === 'finished')).toHaveLength(2);
  });

  it('validates its options once, reporting every problem together', () => {
    const build = () =>
      withIncomingDeadline(() => undefined, {
        defaultMs: 5_000,
        maxMs: 1_000,
        clockSkewMs: Number.NaN,
        onEvent: 'nope' as never,
        clock: {} as never,
      });
    expect(build).toThrow(expect.objectContaining({ code: 'INVALID_OPTIONS' }));
    try {
      build();
    } catch (error) {
      expect(isInvalidOptions(error)).toBe(true);
      const problems = (error as { problems: string[] }).problems.join('\n');
      for (const word of ['clock', 'onEvent', 'defaultMs', 'clockSkewMs']) expect(problems).toContain(word);
      expect((error as Error).message).toContain('withIncomingDeadline');
    }
  });
});
