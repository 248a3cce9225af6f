import { brotliCompressSync, deflateSync, gzipSync } from 'node:zlib';
import { Agent } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { runWithDeadline } from '../deadline/ambient.js';
import { Deadline } from '../deadline/deadline.js';
import { createLatencyRecorder } from '../latency/recorder.js';
import { createHttpClient, type HttpClient } from './client.js';
import type { HttpClientOptions } from './options.js';
import { faults, type Handler, startServer } from './servers.test-helpers.js';

/**
 * The client against real loopback servers (SPEC C2, D4, D5, D6). Timing assertions keep margins of
 * 100 ms and more: two shared cores.
 */

const cleanup: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const fn of cleanup.splice(0).reverse()) await fn();
});

async function setup(handler: Handler, options: Partial<HttpClientOptions> = {}) {
  const server = await startServer(handler);
  const client = createHttpClient({ name: 'inventory', origin: server.origin, p99Ms: 100, ...options });
  cleanup.push(
    () => server.close(),
    () => client.destroy(),
  );
  return { server, client };
}

const rejection = async (promise: Promise<unknown>): Promise<Record<string, unknown>> => {
  try {
    await promise;
  } catch (error) {
    return error as Record<string, unknown>;
  }
  throw new Error('expected a rejection');
};

const timed = async <T>(fn: () => Promise<T>): Promise<[T, number]> => {
  const start = performance.now();
  const value = await fn();
  return [value, performance.now() - start];
};

const waitFor = async (check: () => boolean, ms = 2_000): Promise<void> => {
  const until = performance.now() + ms;
  while (!check()) {
    if (performance.now() > until) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
};

const get = async (client: HttpClient, path = '/'): Promise<string> =>
  (await client.request(path)).body.text();

describe('deadlines out (SPEC D1, D5)', () => {
  it('sends the absolute deadline downstream, and the configured relative forms', async () => {
    const { server, client } = await setup(faults.ok(), {
      p99Ms: 1_200, // attempt timeout 1680 ms, past the call's deadline: the call's deadline travels
      deadlineHeaders: { grpcTimeout: true, envoy: true },
    });
    const before = Date.now();
    await // A caller's own later deadline header bounds nothing here: prazo's earlier one travels (D5).
    (
      await client.request('/a', {
        deadline: 1_500,
        headers: { 'x-deadline-epoch-ms': String(Date.now() + 3_600_000) },
      })
    ).body.text();
    const headers = server.seen[0]!.headers;
    const epoch = Number(headers['x-deadline-epoch-ms']);
    expect(epoch).toBeGreaterThanOrEqual(before + 1_400);
    expect(epoch).toBeLessThanOrEqual(Date.now() + 1_500);
    expect(headers['grpc-timeout']).toMatch(/^1[0-9]{3}m$/);
    expect(Number(headers['x-envoy-expected-rq-timeout-ms'])).toBeGreaterThan(1_300);
  });

  it('sends the attempt’s slice when the attempt timeout ends before the call deadline (SPEC R6)', async () => {
    const { server, client } = await setup(faults.ok(), { p99Ms: 100 });
    await (await client.request('/', { deadline: 1_500 })).body.text();
    const left = Number(server.seen[0]!.headers['x-deadline-epoch-ms']) - Date.now();
    expect(left).toBeLessThanOrEqual(140); // ceil(100 × 1.4): the downstream stops when we give up
    expect(left).toBeGreaterThan(0);
  });

  it('uses the ambient deadline, and a per-call one can only shorten it', async () => {
    const { server, client } = await setup(faults.ok(), { p99Ms: 1_000 });
    const remainingOf = async (deadline?: number) =>
      (await rejection(client.request('/', deadline === undefined ? {} : { deadline })))
        .remainingMs as number;
    await runWithDeadline(Deadline.after(800), async () => {
      expect(await remainingOf()).toBeLessThanOrEqual(800);
      expect(await remainingOf()).toBeGreaterThan(600);
      expect(await remainingOf(5_000)).toBeLessThanOrEqual(800); // 5000 asked, the caller's 800 wins
      expect(await remainingOf(300)).toBeLessThanOrEqual(300);
    });
    expect(server.connections).toBe(0); // DEADLINE_INSUFFICIENT every time: p99 1000 ms does not fit
  });
});

describe('fail fast before the socket (SPEC D4)', () => {
  it('refuses with DEADLINE_INSUFFICIENT when the remaining time is below p99, touching nothing', async () => {
    const { server, client } = await setup(faults.ok(), { p99Ms: 200 });
    const error = await rejection(client.request('/', { deadline: 150 }));
    expect(error).toMatchObject({ code: 'DEADLINE_INSUFFICIENT', dependency: 'inventory', neededMs: 200 });
    expect(error.remainingMs).toBeLessThanOrEqual(150.001); // (now + 150) − now in epoch ms: a rounding above 150
    expect(server.connections).toBe(0);
  });
});

describe('phase-split timeouts on real sockets (SPEC C2, D6)', () => {
  it('a server that accepts and never answers → RESPONSE_TIMEOUT at the configured time', async () => {
    const { server, client } = await setup(faults.silent(), { p99Ms: 1_000, responseTimeoutMs: 300 });
    const [error, elapsed] = await timed(() => rejection(client.request('/', { deadline: 5_000 })));
    expect(error).toMatchObject({
      code: 'RESPONSE_TIMEOUT',
      phase: 'response',
      dependency: 'inventory',
      timeoutMs: 300,
    });
    expect(elapsed).toBeGreaterThanOrEqual(295);
    expect(elapsed).toBeLessThan(450);
    // The connection that carried the request is released, not left hanging. (undici then opens a
    // spare idle one, nodejs/undici#5845: not ours to close, `client.close()` does.)
    await waitFor(() => server.seen[0]!.socketClosed);
  });

  it('a body that stalls → BODY_TIMEOUT while reading it', async () => {
    const { client } = await setup(faults.stalledBody(), { p99Ms: 1_000, bodyTimeoutMs: 250 });
    const response = await client.request('/', { deadline: 5_000 });
    expect(response.statusCode).toBe(200);
    const [error, elapsed] = await timed(() => rejection(response.body.text()));
    expect(error).toMatchObject({ code: 'BODY_TIMEOUT', phase: 'body', timeoutMs: 250 });
    expect(elapsed).toBeGreaterThanOrEqual(200);
    expect(elapsed).toBeLessThan(450);
  });

  it('the deadline bounds every phase → DEADLINE_EXCEEDED, and the connection is released', async () => {
    const { server, client } = await setup(faults.silent(), { p99Ms: 200 });
    const [error, elapsed] = await timed(() => rejection(client.request('/', { deadline: 250 })));
    expect(error).toMatchObject({ code: 'DEADLINE_EXCEEDED', phase: 'deadline', dependency: 'inventory' });
    expect(elapsed).toBeGreaterThanOrEqual(245);
    expect(elapsed).toBeLessThan(400);
    await waitFor(() => server.seen[0]!.socketClosed);
  });

  it('a reset mid-response fails the body read with the socket error', async () => {
    const { client } = await setup(faults.resetMidResponse(), { p99Ms: 1_000 });
    const response = await client.request('/');
    const error = await rejection(response.body.text());
    expect(['UND_ERR_SOCKET', 'ECONNRESET']).toContain(error.code);
  });

  it('the caller aborting rejects with its own reason', async () => {
    const { client } = await setup(faults.silent());
    const controller = new AbortController();
    setTimeout(() => controller.abort(new Error('user left')), 50);
    const error = await rejection(client.request('/', { signal: controller.signal }));
    expect(error.message).toBe('user left');
  });

  it('a call that ends while queued for a connection leaves that connection alive for the next', async () => {
    // One connection, held 600 ms: one queued call passes its deadline, another is aborted by its caller.
    const { server, client } = await setup(
      (req, res) => (req.url === '/slow' ? setTimeout(() => res.end('slow'), 600) : res.end('ok')),
      { p99Ms: 450, connections: 1 },
    );
    const slow = client.request('/slow', { deadline: 2_000 });
    const controller = new AbortController();
    setTimeout(() => controller.abort(new Error('user left')), 50);
    const queued = [
      rejection(client.request('/late', { deadline: 460 })),
      rejection(client.request('/aborted', { deadline: 2_000, signal: controller.signal })),
    ];
    expect((await Promise.all(queued)).map((e) => e.code ?? e.message)).toEqual([
      'DEADLINE_EXCEEDED',
      'user left',
    ]);
    expect(await (await slow).body.text()).toBe('slow');
    expect(await get(client, '/next')).toBe('ok');
    expect(server.seen.map((r) => r.url)).toEqual(['/slow', '/next']); // never written
    expect(server.connections).toBe(1); // the kept-alive connection carried /next
  });

  it('records latencies by outcome, in the dependency’s recorder', async () => {
    const recorder = createLatencyRecorder({ minSamples: 1, windowMs: 60_000 });
    const { client } = await setup(faults.sequence(faults.ok(), faults.status(503), faults.silent()), {
      recorder,
      attempts: 1,
    });
    await get(client);
    await get(client);
    await rejection(client.request('/'));
    const w = recorder.currentWindow();
    expect([w.successes, w.errors, w.timeouts]).toEqual([1, 1, 1]);
  });
});

describe('idempotency keys (SPEC R5)', () => {
  it('sends a per-call key, generates one on request, and keeps the caller’s own', async () => {
    const { server, client } = await setup(faults.ok(), { generateIdempotencyKey: true });
    await (await client.request('/', { method: 'POST', body: 'a', idempotencyKey: 'order-7' })).body.text();
    await (await client.request('/', { method: 'POST', body: 'b' })).body.text();
    await (await client.request('/', { method: 'POST', headers: { 'Idempotency-Key': 'mine' } })).body.text();
    await get(client);
    const keys = server.seen.map((r) => r.headers['idempotency-key']);
    expect(keys[0]).toBe('order-7');
    expect(keys[1]).toMatch(/^[0-9a-f-]{36}$/);
    expect(keys[2]).toBe('mine');
    expect(keys[3]).toBeUndefined(); // a GET needs none
  });
});

describe('fetch()', () => {
  it('returns a fetch Response, with a null body where fetch has none', async () => {
    const { client } = await setup(
      faults.sequence(faults.ok('hello'), faults.status(204), (req, res) => {
        let body = '';
        req.on('data', (c) => {
          body += c;
        });
        req.on('end', () => res.end(`${req.method} ${req.headers['content-type']} ${body}`));
      }),
    );
    const a = await client.fetch('/x');
    expect([a.status, await a.text()]).toEqual([200, 'hello']);
    const b = await client.fetch(new URL(`${client.origin}/y`));
    expect([b.status, b.body]).toEqual([204, null]);
    const c = await client.fetch('/z', { method: 'post', body: new URLSearchParams({ q: '1' }) });
    expect(await c.text()).toBe('POST application/x-www-form-urlencoded;charset=UTF-8 q=1');
  });

  it('decodes a compressed body as fetch does (gzip, deflate, br, stacked), and leaves unknown codings', async () => {
    const text = 'prazo '.repeat(1_000);
    const encoded: Record<string, Buffer> = {
      '/gzip': gzipSync(text),
      '/deflate': deflateSync(text),
      '/br': brotliCompressSync(text),
      '/gzip, br': brotliCompressSync(gzipSync(text)),
      '/x-custom': Buffer.from(text),
    };
    const { client } = await setup((req, res) => {
      const coding = decodeURIComponent(req.url!.slice(1));
      res.writeHead(200, { 'content-encoding': coding, 'content-type': 'text/plain' });
      res.end(encoded[req.url === '/x-custom' ? '/x-custom' : `/${coding}`]);
    });
    for (const coding of ['gzip', 'deflate', 'br', 'gzip, br', 'x-custom']) {
      const res = await client.fetch(`/${encodeURIComponent(coding)}`, {
        headers: { 'accept-encoding': coding },
      });
      expect([coding, res.headers.get('content-encoding'), await res.text()]).toEqual([coding, coding, text]);
    }
  });

  it('rejects with prazo’s typed errors', async () => {
    const { client } = await setup(faults.silent());
    expect(await rejection(client.fetch('/'))).toMatchObject({ code: 'RESPONSE_TIMEOUT' });
    expect(await rejection(client.fetch('http://elsewhere.invalid/'))).toMatchObject({
      code: 'INVALID_OPTIONS',
    });
  });
});

describe('your own dispatcher', () => {
  it('runs through an undici Agent you own, and leaves it open on close()', async () => {
    const agent = new Agent();
    cleanup.push(() => agent.close());
    const { server, client } = await setup(faults.ok('via agent'), { dispatcher: agent });
    expect(await get(client, '/a')).toBe('via agent');
    await client.close();
    const again = await agent.request({ origin: server.origin, path: '/b', method: 'GET' });
    expect(await again.body.text()).toBe('via agent'); // still usable: not ours to close
    expect(server.seen.map((r) => r.url)).toEqual(['/a', '/b']);
  });
});

describe('per-call input', () => {
  it('refuses bad per-call numbers with INVALID_OPTIONS, never NaN or a hang', async () => {
    const { server, client } = await setup(faults.ok());
    for (const bad of [{ deadline: Number.NaN }, { responseTimeoutMs: -1 }, { idempotencyKey: 'a\nb' }]) {
      expect(await rejection(client.request('/', bad as never))).toMatchObject({ code: 'INVALID_OPTIONS' });
    }
    expect(server.connections).toBe(0);
  });

  it('refuses a misspelt per-call option on request() and fetch() with a did-you-mean, nothing sent (#25)', async () => {
    const { server, client } = await setup(faults.ok());
    const typo = /unknown option `(prazo\.)?deadlnie`; did you mean `deadline`\?/;
    for (const sent of [
      client.request('/', { deadlnie: 100 } as never),
      client.request({ path: '/', deadlnie: 100 } as never),
      client.fetch('/', { prazo: { deadlnie: 100 } } as never),
      client.fetch('/', { deadlnie: 100 } as never),
    ]) {
      const error = await rejection(sent);
      expect(error).toMatchObject({ code: 'INVALID_OPTIONS' });
      expect(String(error.message)).toMatch(typo);
    }
    expect(await rejection(client.fetch('/', { prazo: { deadline: -1 } }))).toMatchObject({
      code: 'INVALID_OPTIONS',
    });
    expect(server.connections).toBe(0);
  });

  it("takes undici's own request options, and hands them to undici (#25)", async () => {
    const { server, client } = await setup(faults.ok());
    const infos: number[] = [];
    const opaque = { mine: true };
    const res = await client.request('/', {
      opaque,
      onInfo: (info) => infos.push(info.statusCode),
      reset: true,
      blocking: false,
      expectContinue: false,
      deadline: 1_500,
    });
    await res.body.text();
    expect(res.statusCode).toBe(200);
    expect(res.opaque).toBe(opaque);
    const viaFetch = await client.fetch('/', {
      prazo: { deadline: 1_500 },
      redirect: 'manual',
      cache: 'no-store',
    });
    expect(viaFetch.status).toBe(200);
    await viaFetch.text();
    expect(server.seen).toHaveLength(2);
  });
});
