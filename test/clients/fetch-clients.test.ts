import { once } from 'node:events';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import axios, { AxiosError } from 'axios';
import ky, { HTTPError } from 'ky';
import { Agent, getGlobalDispatcher, request, setGlobalDispatcher } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { runWithDeadline } from '../../src/deadline/ambient.js';
import { Deadline } from '../../src/deadline/deadline.js';
import { isDeadlineInsufficient } from '../../src/errors/guards.js';
import { interceptor } from '../../src/http/interceptor.js';
import type { HttpDependencyOptions } from '../../src/http/options.js';

/**
 * axios and ky go through prazo/http when they use fetch (#26 item 5): Node's global `fetch` sends
 * through the global dispatcher, so `setGlobalDispatcher(new Agent().compose(interceptor(...)))`
 * reaches axios with `adapter: 'fetch'` and ky (fetch-based) without either knowing prazo. Shown per
 * library against a real loopback server that counts what reaches it: the deadline header sent, D4
 * (nothing sent with less than the p99 left), the retry budget under a 503 storm. And the HTTP QUERY
 * method is retried like GET.
 */

interface Seen {
  readonly method: string;
  readonly headers: IncomingHttpHeaders;
  readonly body: string;
}

const cleanup: Array<() => Promise<void> | void> = [];
const original = getGlobalDispatcher();
afterEach(async () => {
  setGlobalDispatcher(original);
  for (const fn of cleanup.splice(0).reverse()) await fn();
});

/** A loopback server answering `status(n)` for the n-th request (1-based), recording each. */
async function serve(status: (n: number) => number): Promise<{ origin: string; seen: Seen[] }> {
  const seen: Seen[] = [];
  const server: Server = createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => {
      body += chunk;
    });
    req.on('end', () => {
      seen.push({ method: req.method ?? '', headers: req.headers, body });
      const code = status(seen.length);
      res.writeHead(code, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ n: seen.length }));
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  cleanup.push(() => {
    server.closeAllConnections();
    return new Promise<void>((resolve) => server.close(() => resolve()));
  });
  return { origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen };
}

/** prazo/http as the global dispatcher, managing `origin`. */
function install(origin: string, entry: Partial<HttpDependencyOptions> = {}): void {
  const prazo = interceptor({
    dependencies: { [origin]: { name: 'inventory', p99Ms: 100, ...entry } as HttpDependencyOptions },
  });
  const agent = new Agent();
  setGlobalDispatcher(agent.compose(prazo));
  cleanup.push(() => agent.destroy());
}

/** The prazo error behind a fetch-based client's failure (`TypeError: fetch failed` → cause). */
function causeChain(error: unknown): unknown[] {
  const chain: unknown[] = [];
  for (let e = error, i = 0; e !== undefined && e !== null && i < 5; i += 1) {
    chain.push(e);
    e = (e as { cause?: unknown }).cause;
  }
  return chain;
}

interface Client {
  readonly name: string;
  /** GETs `url`: the status, or throws the library's own error. */
  get(url: string): Promise<number>;
}

const CLIENTS: readonly Client[] = [
  {
    name: 'axios (adapter: fetch)',
    async get(url) {
      try {
        return (await axios.get(url, { adapter: 'fetch' })).status;
      } catch (error) {
        if (error instanceof AxiosError && error.response !== undefined) return error.response.status;
        throw error;
      }
    },
  },
  {
    name: 'ky (retry: 0, prazo retries)',
    async get(url) {
      try {
        return (await ky.get(url, { retry: 0 })).status;
      } catch (error) {
        if (error instanceof HTTPError) return error.response.status;
        throw error;
      }
    },
  },
];

for (const client of CLIENTS) {
  describe(`${client.name} through the global dispatcher (#26 item 5)`, () => {
    it('sends the deadline header, never later than the caller’s (SPEC D1, D5)', async () => {
      const { origin, seen } = await serve(() => 200);
      install(origin);
      const deadline = Deadline.after(800);
      const callerEpoch = deadline.epochMs();
      expect(await runWithDeadline(deadline, () => client.get(`${origin}/stock/42`))).toBe(200);
      expect(seen).toHaveLength(1);
      const sent = Number(seen[0]!.headers['x-deadline-epoch-ms']);
      expect(sent).toBeLessThanOrEqual(callerEpoch + 1);
      // The attempt's own limit (ceil(100 × 1.4) = 140 ms) is what the next hop is told.
      expect(callerEpoch - sent).toBeGreaterThan(500);
    });

    it('D4: with less than the p99 left it fails with DEADLINE_INSUFFICIENT and sends nothing', async () => {
      const { origin, seen } = await serve(() => 200);
      install(origin, { p99Ms: 300 });
      const error = await runWithDeadline(Deadline.after(100), () => client.get(`${origin}/stock/42`)).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(causeChain(error).some(isDeadlineInsufficient)).toBe(true);
      expect(seen).toHaveLength(0);
    });

    it('a 503 storm: the retry budget keeps the load at most 1.1× the calls (3 attempts each: 3×)', async () => {
      const { origin, seen } = await serve(() => 503);
      // p99 400 ms: attempts of 560 ms, so a busy machine does not turn the storm into timeouts.
      install(origin, { p99Ms: 400, attempts: 3, throttle: false, retryBudget: { minPerSecond: 0 } });
      const calls = 100;
      for (let i = 0; i < calls; i += 25) {
        const statuses = await Promise.all(
          Array.from({ length: 25 }, (_, j) => client.get(`${origin}/stock/${i + j}`)),
        );
        expect(new Set(statuses)).toEqual(new Set([503]));
      }
      expect(seen.length).toBeGreaterThanOrEqual(calls);
      expect(seen.length).toBeLessThanOrEqual(calls * 1.1);
    });
  });
}

describe('ky with its own retry on (its default) above prazo', () => {
  it('multiplies: ky repeats each call prazo already retried (why the docs say retry: 0)', async () => {
    const { origin, seen } = await serve(() => 503);
    install(origin, { attempts: 2, throttle: false, backoff: { baseMs: 1 } });
    const status = await ky
      .get(`${origin}/stock`, { retry: { limit: 1, backoffLimit: 1 } })
      .then((r) => r.status)
      .catch((e: unknown) => (e instanceof HTTPError ? e.response.status : e));
    expect(status).toBe(503);
    // prazo's 2 attempts per ky attempt, 2 ky attempts: 4 requests for one call.
    expect(seen).toHaveLength(4);
  });
});

describe('the HTTP QUERY method (#26 item 5)', () => {
  it('is retried like GET through prazo/http (safe and idempotent), its body sent again', async () => {
    const { origin, seen } = await serve((n) => (n === 1 ? 503 : 200));
    install(origin, { attempts: 2, backoff: { baseMs: 1 } });
    // Before: QUERY was not idempotent, sent once: the caller got the 503.
    const res = await request(`${origin}/search`, {
      method: 'QUERY',
      body: '{"sku":42}',
      headers: { 'content-type': 'application/json' },
    });
    await res.body.text();
    expect(res.statusCode).toBe(200);
    expect(seen.map((s) => [s.method, s.body])).toEqual([
      ['QUERY', '{"sku":42}'],
      ['QUERY', '{"sku":42}'],
    ]);
  });
});
