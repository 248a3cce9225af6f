import { Agent, type Dispatcher } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { FakeClock } from '../../../src/clock/fake.js';
import { createHttpClient, type HttpClient } from '../../../src/http/client.js';
import type { HttpClientOptions } from '../../../src/http/options.js';
import { type Handler, startServer, type TestServer } from '../../../src/http/servers.test-helpers.js';
import { createLatencyRecorder } from '../../../src/latency/recorder.js';

/**
 * Attacks on prazo/http end to end with its features COMBINED, as a real service meets them: hedging
 * across several instances with a 503 and its Retry-After, instances all failing, DNS discovery that
 * fails, finds nothing or finds one server under several spellings, the caller's body paused while a
 * hedge decides, the caller aborting at every phase (the open connections counted at the server),
 * undici's own interceptors above and below prazo's, 1xx and a 101 upgrade on a managed origin, a
 * loser's body over the drain limit, an executor `update()` while calls run, a client used after
 * `close()`, and malformed Retry-After / pushback headers on a hedged, balanced call. The single
 * features are attacked in http-api.test.ts and executor-api.test.ts; this file does not repeat them.
 *
 * Real node:http servers on 127.0.0.1 (port 0), which count what reaches them and the connections
 * they hold. No assertion is tight in real time: the machine is shared.
 *
 * A test named "Was a defect" pinned a defect found here (fixed since): its comment says what was
 * expected and what happened.
 */

const cleanup: Array<() => Promise<unknown> | unknown> = [];
afterEach(async () => {
  for (const fn of cleanup.splice(0).reverse()) await fn();
});

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Whether `check` holds within `ms` (polled): a close event on its way is not a leak. */
async function eventually(check: () => boolean, ms = 2_000): Promise<boolean> {
  const until = performance.now() + ms;
  while (!check()) {
    if (performance.now() > until) return false;
    await sleep(10);
  }
  return true;
}

async function serve(handler: Handler, host = '127.0.0.1', port = 0): Promise<TestServer> {
  const server = await startServer(handler, host, port);
  cleanup.push(() => server.close());
  return server;
}

function client(options: Partial<HttpClientOptions> & Record<string, unknown>): HttpClient {
  const made = createHttpClient({ name: 'inventory', p99Ms: 500, ...options } as HttpClientOptions);
  cleanup.push(() => made.destroy());
  return made;
}

function _agentWith(...stack: Dispatcher.DispatcherComposeInterceptor[]): Dispatcher {
  const agent = new Agent().compose(...stack);
  cleanup.push(() => agent.destroy());
  return agent;
}

/** A call's outcome as text: `status body`, or the error's code. Never throws. */
async function outcome(promise: Promise<Dispatcher.ResponseData>): Promise<string> {
  try {
    const res = await promise;
    return `${res.statusCode} ${await res.body.text()}`;
  } catch (error) {
    return String((error as { code?: unknown }).code ?? error);
  }
}

/** A recorder whose live p95 stays 5 ms (its clock never moves): every hedge is due at `minDelayMs`. */
function _fixedRecorder() {
  const stopped = new FakeClock();
  const recorder = createLatencyRecorder({ clock: stopped, windowMs: 500, minSamples: 20 });
  for (let i = 0; i < 20; i += 1) recorder.record(5, 'success');
  stopped.advance(500);
  return recorder;
}

/** A custom `lookup` answering `addresses` on the next turn. */
const lookupOf = (addresses: readonly { address: string; family: number }[]) =>
  ((_host: string, _options: unknown, callback: (...args: unknown[]) => void) =>
    setImmediate(() => callback(null, addresses))) as never;

/** Exceptions nobody caught while `fn` ran (a throw out of a timer or a lookup callback). */
async function uncaughtDuring(fn: () => Promise<void>): Promise<unknown[]> {
  const caught: unknown[] = [];
  const listener = (error: unknown) => caught.push(error);
  // vitest's own listener would fail the run: this test counts them instead.
  const theirs = process.listeners('uncaughtException');
  process.removeAllListeners('uncaughtException');
  process.on('uncaughtException', listener);
  try {
    await fn();
  } finally {
    process.off('uncaughtException', listener);
    for (const l of theirs) process.on('uncaughtException', l);
  }
  return caught;
}

// ── discovery (SPEC X5) ─────────────────────────────────────────────────────────────────────────

describe('http-combos attacks: DNS discovery that fails, finds nothing, or finds odd addresses (SPEC X5)', () => {
  it('a lookup that fails, answers empty, throws or answers garbage: NO_INSTANCE at once on request() and fetch(), saying why', async () => {
    const server = await serve((_req, res) => res.end('ok'));
    const lookups: Record<string, unknown> = {
      failed: (_h: string, _o: unknown, cb: (...a: unknown[]) => void) =>
        setImmediate(() => cb(Object.assign(new Error('boom'), { code: 'ESERVFAIL' }))),
      empty: lookupOf([]),
      throws: () => {
        throw new Error('sync throw');
      },
      garbage: (_h: string, _o: unknown, cb: (...a: unknown[]) => void) =>
        setImmediate(() => cb(null, 'zzz', 4)),
    };
    for (const [name, lookup] of Object.entries(lookups)) {
      const c = client({
        origin: `http://inventory.test:${server.port}`,
        discovery: { lookup: lookup as never },
      });
      const started = performance.now();
      const error = await c.request('/').catch((e: unknown) => e);
      expect([name, (error as { code?: unknown }).code]).toEqual([name, 'NO_INSTANCE']);
      expect((error as Error).message).toContain('inventory.test');
      expect(performance.now() - started).toBeLessThan(1_000); // not a queue or attempt timeout
      await expect(c.fetch('/')).rejects.toMatchObject({ code: 'NO_INSTANCE' });
    }
    expect(server.seen).toHaveLength(0);
  });

  it('a call waiting for the first lookup when close() comes fails typed; the lookup answering after close() makes no pool', async () => {
    const server = await serve((_req, res) => res.end('ok'));
    let answer: ((...args: unknown[]) => void) | undefined;
    const late = ((_h: string, _o: unknown, cb: (...a: unknown[]) => void) => {
      answer = cb;
    }) as never;
    const c = client({ origin: `http://inventory.test:${server.port}`, discovery: { lookup: late } });
    const pending = outcome(c.request('/'));
    await sleep(20);
    await c.close();
    expect(await pending).toBe('NO_INSTANCE');
    answer!(null, [{ address: '127.0.0.1', family: 4 }]);
    await sleep(20);
    expect(c.instances()).toEqual([]);
    expect(await outcome(c.request('/'))).toBe('NO_INSTANCE');
    expect(server.connections).toBe(0);
  });

  // Was a defect (fixed): a `lookup` of the caller's (the documented `discovery.lookup`, any resolver
  // library) may answer an entry that is not an IP address. Each address became `http://<address>:port`
  // and a pool was made for it: undici's Pool constructor threw `TypeError: Invalid URL` out of the
  // lookup's callback (an uncaught exception: the process dies), the good addresses of the same
  // answer were never taken, and the call waited for an instance until its QUEUE_TIMEOUT. Expected:
  // what is not an IP address is not an instance, the call answers from the others, nothing uncaught.
  it('Was a defect: a lookup answer holding something that is not an IP address throws nothing; its IP addresses are the instances', async () => {
    const server = await serve((_req, res) => res.end('ok'));
    const origin = `http://127.0.0.1:${server.port}`;
    const answers: string[] = [];
    const caught = await uncaughtDuring(async () => {
      for (const bad of ['not an ip', '127.0.0.1:80', 'user@host', 'fe80::1%eth0', 'a\r\nb', '']) {
        const c = client({
          origin: `http://inventory.test:${server.port}`,
          discovery: {
            lookup: lookupOf([
              { address: bad, family: 4 },
              { address: '127.0.0.1', family: 4 },
            ]),
          },
        });
        answers.push(await outcome(c.request('/', { deadline: 1_500 })));
        expect(c.instances().map((i) => i.instance)).toEqual([origin]);
        await c.destroy();
      }
      // Nothing usable at all: the lookup found no instance, said as such.
      const none = client({
        origin: `http://inventory.test:${server.port}`,
        discovery: { lookup: lookupOf([{ address: 'not an ip', family: 4 }]) },
      });
      answers.push(await outcome(none.request('/', { deadline: 1_500 })));
    });
    expect(caught).toEqual([]);
    expect(answers).toEqual([...Array(6).fill('200 ok'), 'NO_INSTANCE']);
  });

  // Was a defect (fixed): the addresses of one answer were told apart by their text, so one server
  // answered under several spellings (IPv6 `0:0:0:0:0:0:0:1`, `::0001`, `::1`; IPv4-mapped
  // `::ffff:127.0.0.1`, which a resolver asked for V4MAPPED answers) became several instances: the
  // picker, the ejection share and "a retry or a hedge goes to another instance" (SPEC X5) counted
  // one server as three, and a retry went back to the server that had just failed. Expected: one
  // instance per address, in one spelling.
  it('Was a defect: one address under several spellings is one instance, and a retry goes to the other server', async () => {
    const c6 = client({
      origin: 'http://inventory.test:8080',
      discovery: {
        lookup: lookupOf([
          { address: '0:0:0:0:0:0:0:1', family: 6 },
          { address: '::0001', family: 6 },
          { address: '::1', family: 6 },
        ]),
      },
    });
    await eventually(() => c6.instances().length > 0); // no request: nothing connects to ::1
    expect(c6.instances().map((i) => i.instance)).toEqual(['http://[::1]:8080']);

    // 127.0.0.1 fails every request with a 503; 127.0.0.2 answers. Three spellings of the first.
    const failing = await serve((_req, res) => {
      res.writeHead(503);
      res.end('busy');
    });
    const healthy = await serve((_req, res) => res.end('ok'), '127.0.0.2', failing.port);
    const c = client({
      origin: `http://inventory.test:${failing.port}`,
      attempts: 2,
      retryBudget: { minPerSecond: 1_000 },
      throttle: false,
      discovery: {
        lookup: lookupOf([
          { address: '127.0.0.1', family: 4 },
          { address: '::ffff:127.0.0.1', family: 6 },
          { address: '::FFFF:127.0.0.1', family: 6 },
          { address: '127.0.0.2', family: 4 },
        ]),
      },
    });
    const got: string[] = [];
    for (let i = 0; i < 12; i += 1) got.push(await outcome(c.request('/')));
    expect(
      c
        .instances()
        .map((i) => i.instance)
        .sort(),
    ).toEqual([`http://127.0.0.1:${failing.port}`, `http://127.0.0.2:${failing.port}`]);
    // Each call that met the 503 was retried on the other server: every call answered.
    expect(got).toEqual(Array(12).fill('200 ok'));
    expect(healthy.seen).toHaveLength(12);
  });
});
