import { afterEach, describe, expect, it } from 'vitest';
import { FakeClock } from '../clock/fake.js';
import { createLatencyRecorder } from '../latency/recorder.js';
import { createHttpClient } from './client.js';
import type { HttpClientOptions } from './options.js';
import { faults, type Handler, startServer } from './servers.test-helpers.js';

/**
 * Retries, Retry-After, idempotency and hedging through the executor, against real loopback servers
 * that count what reaches them (SPEC R2-R5, H1-H3).
 */

const cleanup: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const fn of cleanup.splice(0).reverse()) await fn();
});

async function setup(handler: Handler, options: Partial<HttpClientOptions> = {}) {
  const server = await startServer(handler);
  const client = createHttpClient({ name: 'supplier', origin: server.origin, p99Ms: 100, ...options });
  cleanup.push(
    () => server.close(),
    () => client.destroy(),
  );
  return { server, client };
}

const settle = async (promise: Promise<{ statusCode: number; body: { text(): Promise<string> } }>) => {
  try {
    const response = await promise;
    return { status: response.statusCode, text: await response.body.text() };
  } catch (error) {
    return { code: (error as { code?: string }).code };
  }
};

describe('retryable answers (SPEC R2, R3)', () => {
  it('503 + Retry-After: waits what the server says, then retries', async () => {
    const { server, client } = await setup(
      faults.sequence(faults.status(503, { 'retry-after': '1' }), faults.ok('recovered')),
    );
    const start = performance.now();
    const result = await settle(client.request('/', { deadline: 3_000 }));
    const elapsed = performance.now() - start;
    expect(result).toEqual({ status: 200, text: 'recovered' });
    expect(server.seen).toHaveLength(2);
    expect(elapsed).toBeGreaterThanOrEqual(950); // the server's 1 s, not the client's 25 ms backoff
    expect(elapsed).toBeLessThan(1_500);
  });

  it('a Retry-After that does not fit the deadline: the server’s answer, at once', async () => {
    const { server, client } = await setup(faults.status(503, { 'retry-after': '10' }));
    const start = performance.now();
    const result = await settle(client.request('/', { deadline: 2_000 }));
    expect(result).toEqual({ status: 503, text: '503' });
    expect(performance.now() - start).toBeLessThan(300);
    expect(server.seen).toHaveLength(1);
  });

  it('429 with Retry-After: 0 is retried; 500 then 200 is retried; 404 is not', async () => {
    const a = await setup(faults.sequence(faults.status(429, { 'retry-after': '0' }), faults.ok('a')));
    expect(await settle(a.client.request('/'))).toEqual({ status: 200, text: 'a' });
    expect(a.server.seen).toHaveLength(2);
    const b = await setup(faults.sequence(faults.status(500), faults.ok('b')));
    expect(await settle(b.client.request('/'))).toEqual({ status: 200, text: 'b' });
    expect(b.server.seen).toHaveLength(2);
    const c = await setup(faults.status(404));
    expect(await settle(c.client.request('/'))).toEqual({ status: 404, text: '404' });
    expect(c.server.seen).toHaveLength(1);
  });

  it('a reset before any response byte is retried', async () => {
    const { server, client } = await setup(faults.sequence(faults.resetBeforeResponse(), faults.ok('again')));
    expect(await settle(client.request('/'))).toEqual({ status: 200, text: 'again' });
    expect(server.seen).toHaveLength(2);
  });
});

describe('a POST is sent exactly once without a key, retried with one (SPEC R5)', () => {
  const cases: Array<[string, () => Handler]> = [
    ['500', () => faults.status(500)],
    ['503 + Retry-After', () => faults.status(503, { 'retry-after': '0' })],
    ['429 + Retry-After', () => faults.status(429, { 'retry-after': '0' })],
    ['reset before the response', () => faults.resetBeforeResponse()],
    ['reset mid-response', () => faults.resetMidResponse()],
    ['no answer (response timeout)', () => faults.silent()],
    ['stalled body', () => faults.stalledBody()],
  ];

  for (const [name, fault] of cases) {
    it(`${name}: received once`, async () => {
      const { server, client } = await setup(fault(), { attempts: 3, retryResponseTimeout: true });
      await settle(client.request('/orders', { method: 'POST', body: '{"sku":7}', deadline: 1_500 }));
      await new Promise((resolve) => setTimeout(resolve, 50)); // a stray retry would have arrived
      expect(server.seen.map((r) => r.method)).toEqual(['POST']);
    });
  }

  it('with a key, retries carry the same key', async () => {
    const { server, client } = await setup(
      faults.sequence(faults.status(503, { 'retry-after': '0' }), faults.resetBeforeResponse(), faults.ok()),
      { attempts: 3 },
    );
    const result = await settle(
      client.request('/orders', { method: 'POST', body: 'x', idempotencyKey: 'order-42' }),
    );
    expect(result).toEqual({ status: 200, text: 'ok' });
    expect(server.seen.map((r) => r.headers['idempotency-key'])).toEqual([
      'order-42',
      'order-42',
      'order-42',
    ]);
  });

  it('a generated key is generated once per call, not per attempt', async () => {
    const { server, client } = await setup(faults.sequence(faults.status(500), faults.ok()), {
      generateIdempotencyKey: true,
    });
    expect(await settle(client.request('/orders', { method: 'POST', body: 'x' }))).toEqual({
      status: 200,
      text: 'ok',
    });
    const [first, second] = server.seen.map((r) => r.headers['idempotency-key']);
    expect(first).toMatch(/^[0-9a-f-]{36}$/);
    expect(second).toBe(first);
  });
});

describe('hedging (SPEC H1-H3)', () => {
  it('sends a second copy after the live p95; the first answer wins, the other is cancelled', async () => {
    // The recorder's windows run on a fake clock so the test decides when its window is full.
    const windows = new FakeClock();
    const recorder = createLatencyRecorder({ clock: windows, windowMs: 1_000, minSamples: 10 });
    let slow = -1;
    const { server, client } = await setup(
      (req, res, index) => {
        if (index === slow) setTimeout(() => res.end('slow'), 2_000);
        else res.end(req.url === '/warm' ? 'warm' : 'fast');
      },
      { p99Ms: 1_500, hedge: { minDelayMs: 30 }, recorder },
    );
    for (let i = 0; i < 20; i += 1) await settle(client.request('/warm'));
    windows.advance(1_000); // the warm-up window is now the last full one: a live p95 exists
    const hedges: string[] = [];
    client.dependency.on((e) => {
      if (e.type === 'attempt' || e.type === 'hedge-won')
        hedges.push(`${e.type} ${'kind' in e ? e.kind : ''}`);
    });
    slow = 20;
    const start = performance.now();
    const result = await settle(client.request('/read'));
    const elapsed = performance.now() - start;
    expect(result).toEqual({ status: 200, text: 'fast' });
    expect(elapsed).toBeLessThan(500); // not the 2 s of the slow copy
    expect(hedges).toEqual(['attempt original', 'attempt hedge', 'hedge-won ']);
    expect(server.seen.slice(20).map((r) => r.url)).toEqual(['/read', '/read']);
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(server.seen[20]!.socketClosed).toBe(true); // the losing copy's request was torn down
    expect(client.dependency.budget.state().extras).toBe(1); // paid from the retry budget (H3)
  });

  it('never hedges a POST without a key', async () => {
    const windows = new FakeClock();
    const recorder = createLatencyRecorder({ clock: windows, windowMs: 1_000, minSamples: 10 });
    const { server, client } = await setup(
      (_req, res, index) => (index === 20 ? setTimeout(() => res.end('slow'), 300) : res.end('fast')),
      { p99Ms: 1_500, hedge: { minDelayMs: 30 }, recorder },
    );
    for (let i = 0; i < 20; i += 1) await settle(client.request('/warm'));
    windows.advance(1_000);
    expect(await settle(client.request('/pay', { method: 'POST', body: 'x' }))).toEqual({
      status: 200,
      text: 'slow',
    });
    expect(server.seen).toHaveLength(21);
  });
});
