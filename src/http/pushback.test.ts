import { Agent, getGlobalDispatcher, setGlobalDispatcher } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import type { DependencyEvent } from '../dependency/types.js';
import type { LatencySource } from '../latency/types.js';
import { createHttpClient } from './client.js';
import { interceptor } from './interceptor.js';
import type { HttpClientOptions, HttpDependencyOptions } from './options.js';
import { faults, type Handler, startServer } from './servers.test-helpers.js';

/**
 * prazo clients honour a server's pushback (SPEC X6): a failed answer with `grpc-retry-pushback-ms:
 * -1` reaches the dependency once, whatever `attempts`, hedging and the budget would allow, through
 * `createHttpClient` and through the interceptor under Node's global `fetch`. Real loopback servers
 * count what reaches them.
 */

const cleanup: Array<() => Promise<void>> = [];
const original = getGlobalDispatcher();
afterEach(async () => {
  setGlobalDispatcher(original);
  for (const fn of cleanup.splice(0).reverse()) await fn();
});

const PUSHBACK = { 'grpc-retry-pushback-ms': '-1', 'retry-after': '1' };

/** A latency source whose p95 is 20 ms from the start, so the hedge is armed on the first call. */
const warmRecorder = (): LatencySource => ({
  record: () => {},
  quantile: (q) => (q === 0.95 ? 20 : undefined),
  lastWindow: () => undefined,
  currentWindow: () => {
    throw new Error('unused');
  },
});

async function client(handler: Handler, options: Partial<HttpClientOptions> = {}) {
  const server = await startServer(handler);
  const http = createHttpClient({
    name: 'orders',
    origin: server.origin,
    p99Ms: 300, // margin for a loaded machine: nothing here waits for the timeout
    attempts: 3,
    retryBudget: { minPerSecond: 100 }, // the budget would allow every retry and hedge
    ...options,
  });
  const events: DependencyEvent[] = [];
  http.on((e) => events.push(e));
  cleanup.push(
    () => server.close(),
    () => http.destroy(),
  );
  return { server, http, events };
}

describe('createHttpClient honours pushback (SPEC X6)', () => {
  it('503 + pushback: one request reaches the server, the 503 is the answer, nothing spent', async () => {
    const { server, http, events } = await client(faults.status(503, PUSHBACK));
    for (let i = 0; i < 20; i += 1) {
      const res = await http.request('/stock', { deadline: 1_500 });
      expect(res.statusCode).toBe(503);
      expect(res.headers['grpc-retry-pushback-ms']).toBe('-1');
      await res.body.dump();
    }
    expect(server.seen).toHaveLength(20);
    expect(http.dependency.budget.state().extras).toBe(0);
    expect(events.filter((e) => e.type === 'pushback')).toHaveLength(20);
  });

  it('without the header the same 503 is retried (3 attempts each): the test can fail', async () => {
    // Every attempt fails: the adaptive throttle (issue 23) would refuse calls; retries are the subject.
    const { server, http } = await client(faults.status(503), { throttle: false });
    for (let i = 0; i < 5; i += 1) await (await http.request('/stock', { deadline: 1_500 })).body.dump();
    expect(server.seen).toHaveLength(15);
  });

  it('`pushback: false` ignores the header: retried like any 503', async () => {
    const { server, http } = await client(faults.status(503, { 'grpc-retry-pushback-ms': '-1' }), {
      pushback: false,
      throttle: false,
    });
    for (let i = 0; i < 5; i += 1) await (await http.request('/stock', { deadline: 1_500 })).body.dump();
    expect(server.seen).toHaveLength(15);
  });

  it('no hedge after a pushback: a slow pushed-back answer is never hedged, and a raced hedge is cancelled', async () => {
    // The first request answers 503 + pushback after 60 ms (past the hedge delay): a hedge goes out
    // at the p95 (20 ms), then the pushback ends the call and the hedge is cancelled.
    const arrivals: number[] = [];
    const t0 = performance.now();
    const handler: Handler = (_req, res, index) => {
      arrivals.push(performance.now() - t0);
      if (index === 0) {
        setTimeout(() => {
          res.writeHead(503, PUSHBACK);
          res.end('pushed back');
        }, 60);
      } else {
        setTimeout(() => {
          if (!res.writableEnded && !res.destroyed) res.end('hedge ok');
        }, 400);
      }
    };
    const { server, http, events } = await client(handler, {
      hedge: { minDelayMs: 10 },
      recorder: warmRecorder(),
    });
    const start = performance.now();
    const res = await http.request('/stock', { deadline: 1_500 });
    expect(res.statusCode).toBe(503);
    expect(await res.body.text()).toBe('pushed back');
    expect(performance.now() - start).toBeLessThan(300); // not the hedge's 400 ms
    expect(server.seen).toHaveLength(2); // the original and the hedge sent before the pushback
    expect(events.some((e) => e.type === 'hedge-won')).toBe(false);
    const hedgeEnd = events.find((e) => e.type === 'attempt-end' && e.kind === 'hedge');
    expect(hedgeEnd).toMatchObject({ outcome: 'cancelled' });
    await new Promise((r) => setTimeout(r, 100));
    expect(server.seen[1]!.socketClosed).toBe(true); // the hedge's request was torn down
  });

  it('a non-negative pushback is the wait before the retry (ahead of Retry-After)', async () => {
    const { server, http } = await client(
      faults.sequence(
        faults.status(503, { 'grpc-retry-pushback-ms': '300', 'retry-after': '5' }),
        faults.ok('later'),
      ),
    );
    const start = performance.now();
    const res = await http.request('/stock', { deadline: 2_000 });
    expect(await res.body.text()).toBe('later');
    const elapsed = performance.now() - start;
    expect(elapsed).toBeGreaterThanOrEqual(290);
    expect(elapsed).toBeLessThan(1_500); // not Retry-After's 5 s (which would not even fit)
    expect(server.seen).toHaveLength(2);
  });
});

describe('the interceptor under global fetch honours pushback (SPEC X4, X6)', () => {
  it('GET and an idempotent PUT: one request each reaches the server, the 503 reaches the caller', async () => {
    const server = await startServer(faults.status(503, PUSHBACK));
    const prazo = interceptor({
      dependencies: {
        [server.origin]: {
          name: 'orders',
          p99Ms: 100,
          attempts: 3,
          hedge: { minDelayMs: 10 },
          recorder: warmRecorder(),
          retryBudget: { minPerSecond: 100 },
        } as HttpDependencyOptions,
      },
    });
    const agent = new Agent();
    setGlobalDispatcher(agent.compose(prazo));
    cleanup.push(
      () => server.close(),
      () => agent.destroy(),
    );
    const events: DependencyEvent[] = [];
    prazo.on((e) => events.push(e));
    for (const method of ['GET', 'PUT']) {
      const res = await fetch(`${server.origin}/stock`, {
        method,
        ...(method === 'PUT' ? { body: 'x' } : {}),
      });
      expect(res.status).toBe(503);
      expect(res.headers.get('retry-after')).toBe('1');
      await res.arrayBuffer();
    }
    expect(server.seen.map((s) => s.method)).toEqual(['GET', 'PUT']);
    expect(events.filter((e) => e.type === 'pushback')).toHaveLength(2);
  });
});
