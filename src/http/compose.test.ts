import { createRequire } from 'node:module';
import { Agent, type Dispatcher, interceptors, request } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { systemClock } from '../clock/system.js';
import { runWithDeadline } from '../deadline/ambient.js';
import { Deadline } from '../deadline/deadline.js';
import type { DependencyEvent } from '../dependency/types.js';
import { interceptor, type PrazoInterceptor } from './interceptor.js';
import type { HttpDependencyOptions } from './options.js';
import { faults, type Handler, startServer, type TestServer } from './servers.test-helpers.js';

/**
 * prazo/http composed with undici's own interceptors (issue 24, items 1-3), on real undici and real
 * loopback servers. `agent.compose(a, b)` wraps the Agent in `a`, then `a` in `b`: the LAST one is
 * outermost, it sees the caller's dispatch first. So `compose(prazo, retry())` puts undici's retry
 * ABOVE prazo (it re-dispatches through prazo), `compose(retry(), prazo)` puts it BELOW (it repeats
 * each of prazo's attempts). Each test is one row of docs/http.md's composition table; where undici
 * behaves the same without prazo, the test says so and runs the bare Agent too.
 */

const cleanup: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const fn of cleanup.splice(0).reverse()) await fn();
});

type Interceptor = Dispatcher.DispatcherComposeInterceptor;

async function serve(handler: Handler): Promise<TestServer> {
  const server = await startServer(handler);
  cleanup.push(() => server.close());
  return server;
}

/** An Agent composed with `order` (innermost first); `'prazo'` marks where prazo sits. */
function stack(
  prazo: PrazoInterceptor,
  order: ReadonlyArray<Interceptor | 'prazo'>,
): { dispatcher: Dispatcher; events: DependencyEvent[] } {
  const agent = new Agent();
  cleanup.push(() => agent.destroy());
  const events: DependencyEvent[] = [];
  prazo.on((event) => events.push(event));
  const dispatcher = agent.compose(order.map((i) => (i === 'prazo' ? prazo : i)));
  return { dispatcher, events };
}

function managed(origin: string, entry: Partial<HttpDependencyOptions> = {}): PrazoInterceptor {
  return interceptor({
    dependencies: { [origin]: { name: 'inventory', p99Ms: 100, ...entry } as HttpDependencyOptions },
  });
}

const attempts = (events: readonly DependencyEvent[]): number =>
  events.filter((e) => e.type === 'attempt').length;

/** What a request ends with: its status and body, or its error's code (prazo's, else undici's). */
async function outcome(url: string, dispatcher: Dispatcher, extra: object = {}): Promise<string> {
  try {
    const res = await request(url, { dispatcher, ...extra } as never);
    return `${res.statusCode} ${await res.body.text()}`;
  } catch (error) {
    const e = error as { code?: string; statusCode?: number; name?: string; message?: string };
    return e.code === undefined
      ? `${e.name}: ${e.message}`
      : `${e.code}${e.statusCode ? ` ${e.statusCode}` : ''}`;
  }
}

/** `promise`'s value, or 'pending' when it has not settled `ms` from now. */
const within = (ms: number, promise: Promise<string>): Promise<string> =>
  Promise.race([
    promise,
    new Promise<string>((resolve) => systemClock.setTimer(() => resolve('pending'), ms)),
  ]);

const elapsedOf = async <T>(fn: () => Promise<T>): Promise<{ value: T; ms: number }> => {
  const start = systemClock.now();
  const value = await fn();
  return { value, ms: systemClock.now() - start };
};

describe('undici retry ABOVE prazo: compose(prazo, interceptors.retry())', () => {
  it('a managed origin answering 503: every call ends, within its deadline, with the answer prazo gave up on', async () => {
    const server = await serve(faults.status(503));
    const prazo = managed(server.origin, { attempts: 2 });
    const { dispatcher, events } = stack(prazo, ['prazo', interceptors.retry()]);
    const deadline = Deadline.after(1_000);
    const { value, ms } = await elapsedOf(() =>
      runWithDeadline(deadline, () =>
        Promise.all([1, 2, 3].map(() => within(3_000, outcome(`${server.origin}/stock`, dispatcher)))),
      ),
    );
    // Before: ['pending' × 3] (the retry's own error, thrown in its onResponseEnd, was swallowed);
    // with that error heard but the call not aborted, undici's retry slept 500 then 1,000 ms and
    // the calls ended at ~1,650 ms, DEADLINE_INSUFFICIENT.
    expect(value).toEqual(['UND_ERR_REQ_RETRY 503', 'UND_ERR_REQ_RETRY 503', 'UND_ERR_REQ_RETRY 503']);
    expect(ms).toBeLessThan(1_000);
    // prazo's plan is the only retry of a managed origin: 2 attempts a call, nothing more.
    expect(server.seen).toHaveLength(6);
    expect(attempts(events)).toBe(6);
  });

  it('an origin prazo does not manage: undici retries it as it does without prazo (503 then 200 → 200)', async () => {
    const bare = await serve(faults.sequence(faults.status(503), faults.ok('fresh')));
    const agent = new Agent();
    cleanup.push(() => agent.destroy());
    const retry = interceptors.retry({ minTimeout: 10 });
    expect(await outcome(`${bare.origin}/`, agent.compose(retry))).toBe('200 fresh');
    expect(bare.seen).toHaveLength(2);

    const server = await serve(faults.sequence(faults.status(503), faults.ok('fresh')));
    const { dispatcher, events } = stack(interceptor({}), ['prazo', interceptors.retry({ minTimeout: 10 })]);
    expect(await outcome(`${server.origin}/`, dispatcher)).toBe('200 fresh');
    expect(server.seen).toHaveLength(2);
    expect(attempts(events)).toBe(0);
  });

  it('a handler above prazo that throws in onResponseEnd hears it through onResponseError, as on a bare Agent', async () => {
    const server = await serve(faults.ok('body'));
    const heard = async (dispatcher: Dispatcher): Promise<string[]> => {
      const seen: string[] = [];
      const thrown = new Error('thrown in onResponseEnd');
      await new Promise<void>((resolve) => {
        dispatcher.dispatch(
          { origin: server.origin, path: '/', method: 'GET' },
          {
            onRequestStart: () => seen.push('start'),
            onResponseStart: (_c, status) => seen.push(`head ${status}`),
            onResponseData: () => seen.push('data'),
            onResponseEnd: () => {
              seen.push('end');
              systemClock.setTimer(resolve, 50); // anything after it is heard within a turn
              throw thrown;
            },
            onResponseError: (_c, error) => {
              seen.push(error === thrown ? 'error: the same error' : `error: ${error.message}`);
              resolve();
            },
          },
        );
      });
      return seen;
    };
    const agent = new Agent();
    cleanup.push(() => agent.destroy());
    const bare = await heard(agent);
    expect(bare).toEqual(['start', 'head 200', 'data', 'end', 'error: the same error']);
    const { dispatcher } = stack(managed(server.origin), ['prazo']);
    expect(await heard(dispatcher)).toEqual(bare); // before: [..., 'end'] and nothing else

    // A handler on undici's legacy API (what Node's bundled fetch hands an undici 8 dispatcher):
    // its onComplete's throw reaches its onError, as undici 7's own request reports it.
    const prazo = managed(server.origin);
    const legacy: string[] = [];
    const thrown = new Error('thrown in onComplete');
    await new Promise<void>((resolve) => {
      prazo(agent.dispatch.bind(agent))({ origin: server.origin, path: '/', method: 'GET' }, {
        onConnect: () => legacy.push('connect'),
        onHeaders: (status: number) => legacy.push(`head ${status}`) > 0,
        onData: () => legacy.push('data') > 0,
        onComplete: () => {
          legacy.push('complete');
          systemClock.setTimer(resolve, 50);
          throw thrown;
        },
        onError: (error: Error) => {
          legacy.push(error === thrown ? 'error: the same error' : `error: ${error.message}`);
          resolve();
        },
      } as never);
    });
    expect(legacy).toEqual(['connect', 'head 200', 'data', 'complete', 'error: the same error']);
  });
});

describe('a request sent again from above, from inside its end, keeps its first deadline', () => {
  it('undici retry with throwOnError: false above prazo: every re-dispatch runs under the first one’s deadline', async () => {
    const server = await serve(faults.status(503));
    const prazo = managed(server.origin, { attempts: 1 });
    // It re-dispatches from inside onResponseEnd, after a backoff spent with prazo's answer paused.
    const retry = interceptors.retry({ throwOnError: false, minTimeout: 100, maxRetries: 10 });
    const { dispatcher } = stack(prazo, ['prazo', retry]);
    const { value, ms } = await elapsedOf(() =>
      outcome(`${server.origin}/`, dispatcher, { prazo: { deadline: 600 } }),
    );
    // Before: each re-dispatch started a 600 ms deadline of its own: DEADLINE_EXCEEDED at ~1,300 ms.
    expect(value).toMatch(/^DEADLINE_(EXCEEDED|INSUFFICIENT)$/);
    expect(ms).toBeLessThan(600 + 100);
  });

  it('undici redirect above prazo: the next hop keeps the caller’s deadline, not the one of whoever opened the socket', async () => {
    const to = await serve(faults.ok('target'));
    const from = await serve((req, res) => {
      if (req.url === '/r') res.writeHead(302, { location: `${to.origin}/t` });
      res.end('from');
    });
    const prazo = managed(from.origin);
    const { dispatcher } = stack(prazo, ['prazo', interceptors.redirect({ maxRedirections: 2 })]);
    // The connection to `from` is opened under a deadline that has passed by the next call: undici
    // runs the callbacks of every later request on it in that request's async context.
    await runWithDeadline(Deadline.after(150), () => outcome(`${from.origin}/ok`, dispatcher));
    await new Promise<void>((resolve) => systemClock.setTimer(resolve, 200));
    const followed = await runWithDeadline(Deadline.after(2_000), () =>
      outcome(`${from.origin}/r`, dispatcher),
    );
    expect(followed).toBe('200 target'); // before: DEADLINE_EXCEEDED (the opener's deadline, read at the hop)
    expect(to.seen).toHaveLength(1);
  });
});

describe('undici retry BELOW prazo: compose(interceptors.retry(), prazo)', () => {
  it('503 then 200 gives 200, as a bare Agent with retry does; prazo sees one attempt', async () => {
    const server = await serve(faults.sequence(faults.status(503), faults.ok('fresh')));
    const prazo = managed(server.origin, { p99Ms: 300 });
    const { dispatcher, events } = stack(prazo, [interceptors.retry({ minTimeout: 10 }), 'prazo']);
    // Before: `Error: aborted` within ~30 ms (prazo's attempt refused undici's second start).
    expect(await outcome(`${server.origin}/`, dispatcher)).toBe('200 fresh');
    expect(server.seen).toHaveLength(2);
    expect(attempts(events)).toBe(1);
  });

  it('multiplies the requests: up to (1 + maxRetries) per prazo attempt, within that attempt’s timeout', async () => {
    const server = await serve(faults.status(503));
    const prazo = managed(server.origin, { p99Ms: 300, attempts: 2 });
    const retry = interceptors.retry({ minTimeout: 5, timeoutFactor: 1, maxRetries: 2 });
    const { dispatcher, events } = stack(prazo, [retry, 'prazo']);
    // undici's retry gives up with its own error after 1 + maxRetries answers of 503; that error
    // carries the 503 status, which prazo retries (its 2 attempts): 2 × 3 requests for one call.
    expect(await outcome(`${server.origin}/`, dispatcher)).toBe('UND_ERR_REQ_RETRY 503');
    expect(attempts(events)).toBe(2);
    expect(server.seen).toHaveLength(6); // attempts × (1 + maxRetries)
  });

  it('undici’s backoff sleeps inside the prazo attempt: its timeout cuts the retry, the deadline holds', async () => {
    const server = await serve(faults.sequence(faults.status(503), faults.ok('late')));
    const prazo = managed(server.origin, { p99Ms: 100, attempts: 1 });
    // Default backoff: 500 ms before the second request, past the attempt's ceil(100 × 1.4) = 140 ms.
    const { dispatcher } = stack(prazo, [interceptors.retry(), 'prazo']);
    const { value, ms } = await elapsedOf(() => outcome(`${server.origin}/`, dispatcher));
    expect(value).toBe('RESPONSE_TIMEOUT');
    expect(ms).toBeLessThan(400);
    // undici's backoff ends after prazo gave the attempt up: the request it sends then is refused
    // before it is written (undici 8 cancels the backoff when prazo aborts).
    await new Promise<void>((resolve) => systemClock.setTimer(resolve, 600));
    expect(server.seen).toHaveLength(1);
  });
});

describe('undici redirect: compose(prazo, redirect()) and compose(redirect(), prazo)', () => {
  async function redirecting(): Promise<{ from: TestServer; to: TestServer }> {
    const to = await serve(faults.ok('target'));
    const from = await serve(faults.status(302, { location: `${to.origin}/t` }));
    return { from, to };
  }

  it('below prazo: the 302 is followed inside the attempt, as a bare Agent with redirect does', async () => {
    const bare = await redirecting();
    const agent = new Agent();
    cleanup.push(() => agent.destroy());
    const redirect = interceptors.redirect({ maxRedirections: 2 });
    expect(await outcome(`${bare.from.origin}/r`, agent.compose(redirect))).toBe('200 target');

    const { from, to } = await redirecting();
    const prazo = managed(from.origin);
    const { dispatcher, events } = stack(prazo, [interceptors.redirect({ maxRedirections: 2 }), 'prazo']);
    // Before: `Error: aborted`, and the target saw 0 requests.
    expect(await outcome(`${from.origin}/r`, dispatcher)).toBe('200 target');
    expect([from.seen.length, to.seen.length, attempts(events)]).toEqual([1, 1, 1]);
  });

  it('above prazo: each hop is a call of its own origin (the target managed too: one attempt each)', async () => {
    const { from, to } = await redirecting();
    const prazo = interceptor({
      dependencies: {
        [from.origin]: { name: 'from', p99Ms: 100 },
        [to.origin]: { name: 'to', p99Ms: 100 },
      },
    });
    const { dispatcher, events } = stack(prazo, ['prazo', interceptors.redirect({ maxRedirections: 2 })]);
    expect(await outcome(`${from.origin}/r`, dispatcher)).toBe('200 target');
    expect([from.seen.length, to.seen.length, attempts(events)]).toEqual([1, 1, 2]);
  });
});

describe('undici dns: compose(prazo, dns()) and compose(dns(), prazo)', () => {
  /** undici's dns interceptor with a fixed answer (no resolver): `inventory.test` is 127.0.0.1. */
  const dns = (): Interceptor =>
    interceptors.dns({
      dualStack: false,
      affinity: 4,
      lookup: (_origin, _options, callback) =>
        callback(null, [{ address: '127.0.0.1', family: 4, ttl: 60_000 }]),
    });

  it('above prazo: the origin is rewritten to its address, prazo knows it by the Host it carries', async () => {
    const server = await serve(faults.ok());
    const named = `http://inventory.test:${server.port}`;
    const { dispatcher, events } = stack(managed(named), ['prazo', dns()]);
    expect(await outcome(`${named}/stock`, dispatcher)).toBe('200 ok');
    expect(server.seen[0]!.headers.host).toBe(`inventory.test:${server.port}`);
    expect(attempts(events)).toBe(1); // before: 0 (the address was an origin nobody configured)
    expect(server.seen[0]!.headers['x-deadline-epoch-ms']).toBeDefined();
  });

  it('below prazo: prazo sees the name, each attempt is resolved below it', async () => {
    const server = await serve(faults.sequence(faults.status(503), faults.ok()));
    const named = `http://inventory.test:${server.port}`;
    const { dispatcher, events } = stack(managed(named), [dns(), 'prazo']);
    expect(await outcome(`${named}/stock`, dispatcher)).toBe('200 ok');
    expect(attempts(events)).toBe(2);
    expect(server.seen.map((s) => s.headers.host)).toEqual([
      `inventory.test:${server.port}`,
      `inventory.test:${server.port}`,
    ]);
  });
});

describe('undici cache and dump, either side of prazo', () => {
  const cacheable: Handler = (_req, res) => {
    res.setHeader('cache-control', 'max-age=60');
    res.end('fresh');
  };

  it('cache above prazo: a cached answer never reaches prazo (no attempt, nothing recorded)', async () => {
    const server = await serve(cacheable);
    const { dispatcher, events } = stack(managed(server.origin), ['prazo', interceptors.cache()]);
    expect(await outcome(`${server.origin}/a`, dispatcher)).toBe('200 fresh');
    expect(await outcome(`${server.origin}/a`, dispatcher)).toBe('200 fresh');
    expect([server.seen.length, attempts(events)]).toEqual([1, 1]);
  });

  it('cache below prazo: every call is a prazo attempt, answered from the cache without a request', async () => {
    const server = await serve(cacheable);
    const { dispatcher, events } = stack(managed(server.origin), [interceptors.cache(), 'prazo']);
    expect(await outcome(`${server.origin}/a`, dispatcher)).toBe('200 fresh');
    expect(await outcome(`${server.origin}/a`, dispatcher)).toBe('200 fresh');
    expect([server.seen.length, attempts(events)]).toEqual([1, 2]);
  });

  it('dump, above or below: a body over its maxSize fails as on a bare Agent with dump', async () => {
    const big: Handler = (_req, res) => res.end('x'.repeat(100));
    const results: string[] = [];
    for (const where of ['bare', 'above', 'below'] as const) {
      const server = await serve(big);
      const dump = interceptors.dump({ maxSize: 10 });
      const prazo = managed(server.origin);
      const agent = new Agent();
      cleanup.push(() => agent.destroy());
      const dispatcher =
        where === 'bare'
          ? agent.compose(dump)
          : agent.compose(where === 'above' ? [prazo, dump] : [dump, prazo]);
      results.push(`${await outcome(`${server.origin}/`, dispatcher)} seen ${server.seen.length}`);
    }
    expect(new Set(results).size).toBe(1);
    expect(results[0]).toMatch(/^(UND_ERR_ABORTED|AbortError).* seen 1$/); // undici's abort, one request
  });
});

describe('the stack docs/http.md recommends', () => {
  it('compose(dns(), prazo, redirect(), cache()): names for prazo, hops under one deadline, hits without a call', async () => {
    const to = await serve((_req, res) => {
      res.setHeader('cache-control', 'max-age=60');
      res.end('target');
    });
    const from = await serve(faults.status(302, { location: `http://pricing.test:${to.port}/t` }));
    const prazo = interceptor({
      dependencies: {
        [`http://inventory.test:${from.port}`]: { name: 'inventory', p99Ms: 100 },
        [`http://pricing.test:${to.port}`]: { name: 'pricing', p99Ms: 100 },
      },
    });
    const dns = interceptors.dns({
      dualStack: false,
      affinity: 4,
      lookup: (_origin, _options, callback) =>
        callback(null, [{ address: '127.0.0.1', family: 4, ttl: 60_000 }]),
    });
    const { dispatcher, events } = stack(prazo, [
      dns,
      'prazo',
      interceptors.redirect({ maxRedirections: 2 }),
      interceptors.cache(),
    ]);
    const url = `http://inventory.test:${from.port}/r`;
    expect(await runWithDeadline(Deadline.after(1_000), () => outcome(url, dispatcher))).toBe('200 target');
    expect([from.seen.length, to.seen.length, attempts(events)]).toEqual([1, 1, 2]);
    expect(to.seen[0]!.headers.host).toBe(`pricing.test:${to.port}`);
    expect(Number(to.seen[0]!.headers['x-deadline-epoch-ms'])).toBeGreaterThan(0);
  });
});

/** undici's major: 8 dispatches no legacy handler at all (its Request asserts `onRequestStart`). */
const UNDICI_MAJOR = Number(
  (createRequire(import.meta.url)('undici/package.json') as { version: string }).version.split('.')[0],
);

describe.skipIf(UNDICI_MAJOR >= 8)(
  'a legacy handler above prazo (undici.request, stream, fetch): compose wraps it in its WrapHandler (undici 7; undici 8 refuses a legacy handler on a bare Agent too)',
  () => {
    /** The raw header names a legacy `dispatch` handler is given by `dispatcher`. */
    function rawNames(origin: string, dispatcher: Dispatcher): Promise<string[]> {
      return new Promise((resolve, reject) => {
        let names: string[] = [];
        dispatcher.dispatch({ origin, path: '/', method: 'GET' }, {
          onConnect() {},
          onHeaders(_status: number, raw: Buffer[]) {
            names = raw.filter((_, i) => i % 2 === 0).map(String);
            return true;
          },
          onData: () => true,
          onComplete: () => resolve(names),
          onError: reject,
        } as never);
      });
    }

    it('gets the raw header buffers undici read, as on a bare Agent (not rebuilt, lowercased, from the parsed object)', async () => {
      const server = await serve((_req, res) => {
        res.writeHead(200, { 'X-Custom-Case': 'v', 'Content-Length': '2' });
        res.end('ok');
      });
      const bare = new Agent();
      cleanup.push(() => bare.destroy());
      const expected = await rawNames(server.origin, bare);
      expect(expected).toContain('X-Custom-Case');
      const { dispatcher, events } = stack(managed(server.origin), ['prazo']);
      expect(await rawNames(server.origin, dispatcher)).toEqual(expected);
      expect(attempts(events)).toBe(1);
    });
  },
);
