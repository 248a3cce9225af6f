import { Agent, type Dispatcher, request } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { FakeClock } from '../../../src/clock/fake.js';
import { systemClock } from '../../../src/clock/system.js';
import { createDependency, type Dependency } from '../../../src/dependency/dependency.js';
import type { DependencyEvent } from '../../../src/dependency/types.js';
import { createHttpClient, type HttpClient } from '../../../src/http/client.js';
import { interceptor } from '../../../src/http/interceptor.js';
import type { HttpClientOptions } from '../../../src/http/options.js';
import {
  faults,
  type Handler,
  startServer,
  type TestServer,
} from '../../../src/http/servers.test-helpers.js';
import { createLatencyRecorder } from '../../../src/latency/recorder.js';
import { eventually, flush, sleep, watch } from './watch.js';

/**
 * Attacks on prazo/http's lifecycle: `close()` and `destroy()` of a client (and of the dispatcher
 * under an interceptor) against calls before, between and during their attempts — a Retry-After
 * wait, a drain, a hedge, discovery — and what a closed client's calls do to the metrics a shared
 * executor keeps (SPEC C4, C5, R1, R3, X2). Real loopback servers (127.0.0.1, port 0); the fake clock
 * wherever the wait is prazo's own (a Retry-After, a hedge delay), so nothing here sleeps for it.
 *
 * A test named "Was a defect" pinned a defect found here (fixed since): its comment says what was
 * expected and what happened.
 */

const cleanup: Array<() => Promise<unknown> | unknown> = [];
afterEach(async () => {
  for (const fn of cleanup.splice(0).reverse()) await fn();
});

async function serve(handler: Handler): Promise<TestServer> {
  const server = await startServer(handler);
  cleanup.push(() => server.close());
  return server;
}

function client(origin: string, options: Partial<HttpClientOptions> = {}): HttpClient {
  const given = options.dependency === undefined ? { p99Ms: 500, ...options } : options;
  const made = createHttpClient({ name: 'inventory', origin, ...given } as HttpClientOptions);
  cleanup.push(() => made.destroy());
  return made;
}

/** What the recorder holds now (the window being filled). */
function recorded(dependency: Pick<Dependency, 'recorder'>): { count: number; errors: number } {
  const { count, errors } = dependency.recorder.currentWindow();
  return { count, errors };
}

/** The code of a rejection, or the status and body of an answer. */
async function settle(promise: Promise<Dispatcher.ResponseData>): Promise<string> {
  try {
    const res = await promise;
    return `${res.statusCode} ${await res.body.text()}`;
  } catch (error) {
    return String((error as { code?: unknown }).code ?? error);
  }
}

/** A 503 telling the client to come back in 2 s (SPEC R3). */
const retryAfter2: Handler = (_req, res) => {
  res.writeHead(503, { 'retry-after': '2' });
  res.end('busy');
};

// ── a closed client's calls and the metrics ────────────────────────────────────────────────────

describe('http-lifecycle attacks: calls on a closed client', () => {
  // Was a defect (fixed): `request`/`fetch` on a closed or destroyed client went through the executor
  // and its attempt failed on the closed pool (UND_ERR_DESTROYED): recorded as the dependency's
  // error, counted as an original of the retry budget, an `attempt` and an `attempt-end` with outcome
  // `error`. On a shared executor 300 such calls read 86 % errors (the error-rate SLO, live
  // calibration's health check). Expected: refused at once, typed, nothing recorded; actual: 60 of
  // 60 calls recorded as errors.
  it('Was a defect: request() and fetch() on a closed or destroyed client are refused, typed, and recorded nowhere (SPEC C4, R1)', async () => {
    const shared = createDependency({ name: 'inventory', p99Ms: 500 });
    const events: DependencyEvent[] = [];
    shared.on((event) => events.push(event));
    for (const [end, code] of [
      ['close', 'UND_ERR_CLOSED'],
      ['destroy', 'UND_ERR_DESTROYED'],
    ] as const) {
      const c = client('http://127.0.0.1:9', { dependency: shared });
      await c[end]();
      const before = shared.budget.state().originals;
      const got: string[] = [];
      for (let i = 0; i < 30; i += 1) got.push(await settle(c.request('/')));
      for (let i = 0; i < 30; i += 1) {
        got.push(
          await c.fetch('/').then(
            (res) => String(res.status),
            (error: { code?: string }) => String(error.code),
          ),
        );
      }
      expect(new Set(got), end).toEqual(new Set([code]));
      expect(recorded(shared), end).toEqual({ count: 0, errors: 0 });
      expect(shared.budget.state().originals, end).toBe(before);
    }
    expect(events).toEqual([]);
  });

  // Was a defect (fixed): under an interceptor, a call to a managed origin after its Agent was
  // destroyed failed UND_ERR_DESTROYED in its attempt, and the executor recorded that as the
  // dependency's error (the dispatcher is the caller's: prazo cannot refuse the call before it).
  // Expected: nothing recorded, the attempt's end `cancelled`; actual: one error per call.
  it('Was a defect: under an interceptor, a call on a destroyed Agent is not recorded as the dependency failing (SPEC C4)', async () => {
    const server = await serve((_req, res) => res.end('ok'));
    const shared = createDependency({ name: 'inventory', p99Ms: 500 });
    const ends: string[] = [];
    shared.on((event) => {
      if (event.type === 'attempt-end') ends.push(event.outcome);
    });
    const agent = new Agent().compose(
      interceptor({ dependencies: { [server.origin]: { name: 'inventory', dependency: shared } } }),
    );
    expect(await settle(request(server.origin, { dispatcher: agent }))).toBe('200 ok');
    await agent.destroy();
    for (let i = 0; i < 20; i += 1)
      expect(await settle(request(server.origin, { dispatcher: agent }))).toBe('UND_ERR_DESTROYED');
    expect(recorded(shared)).toEqual({ count: 1, errors: 0 });
    expect(new Set(ends)).toEqual(new Set(['success', 'cancelled']));
  });
});

describe('http-lifecycle attacks: close() and destroy() called again', () => {
  // Was a defect (fixed): a second `close()` after the first had resolved, or a `close()` after
  // `destroy()`, rejected with UND_ERR_DESTROYED (undici's pool, closed, reports itself destroyed):
  // a shutdown hook and a test's cleanup closing the same client made the second one throw.
  // Expected: each resolves; actual: rejected UND_ERR_DESTROYED.
  it('Was a defect: close() twice in sequence, close() after destroy(), destroy() twice: each resolves', async () => {
    const server = await serve((_req, res) => res.end('ok'));
    const ends = (c: HttpClient, order: ReadonlyArray<'close' | 'destroy'>) =>
      order.reduce<Promise<string>>(
        (previous, end) =>
          previous.then((text) =>
            c[end]().then(
              () => `${text} ${end}:ok`,
              (error: { code?: string }) => `${text} ${end}:${error.code}`,
            ),
          ),
        Promise.resolve(''),
      );
    const used = client(server.origin);
    expect(await settle(used.request('/'))).toBe('200 ok');
    expect(await ends(used, ['close', 'close', 'destroy', 'close'])).toBe(
      ' close:ok close:ok destroy:ok close:ok',
    );
    expect(await ends(client(server.origin), ['destroy', 'close', 'destroy'])).toBe(
      ' destroy:ok close:ok destroy:ok',
    );
  });
});

describe('http-lifecycle attacks: closing instances and discovery', () => {
  /** A lookup that answers 127.0.0.1 when the test says so (`answer()`), or at once. */
  function lookupOf(atOnce: boolean): { lookup: never; answer: () => void } {
    const pending: Array<() => void> = [];
    const lookup = ((_host: string, _options: unknown, callback: (...args: unknown[]) => void) => {
      const answer = () => callback(null, [{ address: '127.0.0.1', family: 4 }]);
      if (atOnce) setImmediate(answer);
      else pending.push(answer);
    }) as never;
    const answer = (): void => {
      for (const one of pending.splice(0)) one();
    };
    return { lookup, answer };
  }

  // Was a defect (fixed): `interceptor.close()` stops discovery and empties each dependency's
  // instances; every later call to such an origin failed NO_INSTANCE ("the dependency has no
  // instance"), recorded as the dependency's error. Expected: UND_ERR_CLOSED, nothing recorded;
  // actual: NO_INSTANCE, 5 errors of 6 in the window.
  it('Was a defect: after interceptor.close(), a call to a discovered origin is UND_ERR_CLOSED, not an outage recorded as NO_INSTANCE (SPEC X5, C4)', async () => {
    const server = await serve((_req, res) => res.end('ok'));
    const origin = `http://inventory.test:${server.port}`;
    const prazo = interceptor({
      dependencies: {
        [origin]: { name: 'inventory', p99Ms: 300, discovery: { lookup: lookupOf(true).lookup } },
      },
    });
    const agent = new Agent().compose(prazo);
    cleanup.push(() => agent.destroy());
    expect(await settle(request(origin, { dispatcher: agent }))).toBe('200 ok');
    await prazo.close();
    for (let i = 0; i < 5; i += 1)
      expect(await settle(request(origin, { dispatcher: agent }))).toBe('UND_ERR_CLOSED');
    expect(recorded(prazo.dependency(origin)!)).toEqual({ count: 1, errors: 0 });
  });

  // Was a defect (fixed): an origin met after `interceptor.close()` (its `dependencies` a function)
  // started a discovery of its own: its name was looked up every interval for the life of the
  // process, after a close meant to stop exactly that. Expected: no lookup after the first, the
  // call UND_ERR_CLOSED as for the origins met before; actual: a lookup every 100 ms, for good.
  it('Was a defect: an origin met after interceptor.close() starts no discovery of its own', async () => {
    const server = await serve((_req, res) => res.end('ok'));
    let lookups = 0;
    const lookup = ((_host: string, _options: unknown, callback: (...args: unknown[]) => void) => {
      lookups += 1;
      setImmediate(() => callback(null, [{ address: '127.0.0.1', family: 4 }]));
    }) as never;
    const prazo = interceptor({
      dependencies: (origin) =>
        origin.includes('.test')
          ? { name: 'late', p99Ms: 300, discovery: { lookup, intervalMs: 100 } }
          : undefined,
    });
    const agent = new Agent().compose(prazo);
    cleanup.push(() => agent.destroy());
    await prazo.close();
    expect(await settle(request(`http://late.test:${server.port}`, { dispatcher: agent }))).toBe(
      'UND_ERR_CLOSED',
    );
    await sleep(250); // two and a half intervals
    expect(lookups).toBeLessThanOrEqual(1);
    expect(server.seen).toHaveLength(0);
  });

  // Was a defect (fixed): the same inside a client: a call waiting for the first lookup when
  // `close()` came ended NO_INSTANCE, recorded as an error. Expected: UND_ERR_CLOSED (nothing was
  // sent: a graceful close sends nothing new), nothing recorded.
  it('Was a defect: close() while a call waits for discovery: UND_ERR_CLOSED at once, nothing recorded; destroy(): UND_ERR_DESTROYED', async () => {
    const server = await serve((_req, res) => res.end('ok'));
    for (const [end, code] of [
      ['close', 'UND_ERR_CLOSED'],
      ['destroy', 'UND_ERR_DESTROYED'],
    ] as const) {
      const { lookup, answer } = lookupOf(false);
      const c = client(`http://inventory.test:${server.port}`, { discovery: { lookup } } as never);
      const call = watch(c.request('/'));
      await flush();
      expect(call.state).toBe('pending');
      const ended = watch(c[end]());
      await flush();
      answer();
      await flush();
      expect([end, call.state, (call.error as { code?: unknown } | undefined)?.code]).toEqual([
        end,
        'err',
        code,
      ]);
      expect(ended.state).toBe('ok');
      expect(recorded(c.dependency)).toEqual({ count: 0, errors: 0 });
    }
    expect(server.seen).toHaveLength(0);
  });
});

// ── close() and destroy() between attempts ──────────────────────────────────────────────────────

describe('http-lifecycle attacks: close() and destroy() during a Retry-After wait', () => {
  /** A client on the fake clock whose call got a 503 `Retry-After: 2` and now waits to retry. */
  async function waitingCall(): Promise<{
    c: HttpClient;
    server: TestServer;
    call: ReturnType<typeof watch<Dispatcher.ResponseData>>;
  }> {
    const server = await serve(retryAfter2);
    const clock = new FakeClock();
    const c = client(server.origin, { clock, attempts: 2, p99Ms: 100 });
    let waiting = false;
    c.on((event) => {
      if (event.type === 'retry-after') waiting = true;
    });
    const call = watch(c.request('/', { deadline: 10_000 }));
    expect(await eventually(() => waiting)).toBe(true);
    return { c, server, call };
  }

  // Was a defect (fixed): `destroy()` left a call waiting out its Retry-After (2 s, bounded only by
  // its deadline), after which its retry met the destroyed pool. Expected: the call ends at once with
  // UND_ERR_DESTROYED, no retry sent; actual: still pending (on the fake clock, until time moves).
  it('Was a defect: destroy() during a Retry-After wait ends the call at once, UND_ERR_DESTROYED, no retry sent (SPEC R3)', async () => {
    const { c, server, call } = await waitingCall();
    await c.destroy();
    await flush();
    expect(call.state).toBe('err');
    expect((call.error as { code?: unknown }).code).toBe('UND_ERR_DESTROYED');
    expect(server.seen).toHaveLength(1);
    expect(await eventually(() => server.open === 0)).toBe(true);
  });

  // Was a defect (fixed): `close()` let the call sleep out its Retry-After, then its retry failed on
  // the closed pool (UND_ERR_CLOSED), and `close()` itself waited for that. A graceful close lets
  // what is on the wire finish and sends nothing new: the call ends at once with the 503 it holds,
  // as when the budget refuses its retry. Expected: 503 and its body now, close() done; actual: both
  // pending.
  it('Was a defect: close() during a Retry-After wait ends the call at once with the 503 it holds; close() finishes (SPEC R3)', async () => {
    const { c, server, call } = await waitingCall();
    const closed = watch(c.close());
    await flush();
    expect(call.state).toBe('ok');
    expect(call.value!.statusCode).toBe(503);
    expect(await call.value!.body.text()).toBe('busy');
    expect(await eventually(() => closed.state === 'ok')).toBe(true);
    expect(server.seen).toHaveLength(1);
  });

  // Was a defect (fixed): the same, the 503 arriving after close(): its retry was planned, slept out
  // and failed on the closed pool. Expected: the 503 delivered; actual: UND_ERR_CLOSED after 2 s.
  it('Was a defect: close() while the attempt is in flight: it finishes; its 503 is the answer, no retry after it (SPEC R3)', async () => {
    let answer: (() => void) | undefined;
    const server = await serve((req, res) => {
      answer = () => retryAfter2(req, res, 0);
    });
    const c = client(server.origin, { clock: new FakeClock(), attempts: 3, p99Ms: 100 });
    const call = watch(c.request('/', { deadline: 10_000 }));
    expect(await eventually(() => answer !== undefined)).toBe(true);
    const closed = watch(c.close());
    await flush();
    expect([call.state, closed.state]).toEqual(['pending', 'pending']);
    answer!();
    expect(await eventually(() => call.state !== 'pending')).toBe(true);
    expect(call.value?.statusCode).toBe(503);
    await call.value!.body.text();
    expect(await eventually(() => closed.state === 'ok')).toBe(true);
    expect(server.seen).toHaveLength(1);
  });
});

describe('http-lifecycle attacks: close() and destroy() against the concurrency limit and hedges', () => {
  // Was a defect (fixed): a call waiting in the concurrency limit's queue (SPEC X7) when `close()`
  // came kept waiting for a slot (its retry until its deadline: 100 s here), then met the closed
  // pool. Expected: both end at once with UND_ERR_CLOSED (nothing of them is on the wire; the 503 the
  // retry was for was let go to free its slot), the slot in flight finishes, the limit's count is
  // back to 0; actual: pending.
  it('Was a defect: close() while an original and a retry wait for a slot of the concurrency limit: both UND_ERR_CLOSED at once (SPEC X7)', async () => {
    const server = await serve((req, res) => {
      if (req.url === '/slow') setTimeout(() => res.end('slow'), 100);
      else retryAfter2(req, res, 0);
    });
    const clock = new FakeClock();
    const c = client(server.origin, {
      clock,
      attempts: 2,
      p99Ms: 1_000,
      concurrencyLimit: { maxInFlight: 1, maxQueue: 5 },
      retryBudget: { minPerSecond: 100 },
    });
    const retried = watch(c.request('/busy', { deadline: 100_000 }));
    expect(await eventually(() => server.seen.length === 1)).toBe(true);
    await flush();
    const slow = watch(c.request('/slow', { deadline: 100_000 })); // the slot's next holder
    await flush();
    await clock.advanceAsync(2_000); // the Retry-After: the retry now waits for the slot
    expect(await eventually(() => server.seen.length === 2)).toBe(true);
    const queued = watch(c.request('/queued', { deadline: 100_000 }));
    await flush();
    expect(c.dependency.concurrency()).toMatchObject({ inFlight: 1, queued: 2 });
    const closed = watch(c.close());
    await flush();
    for (const call of [retried, queued]) {
      expect(call.state).toBe('err');
      expect((call.error as { code?: unknown }).code).toBe('UND_ERR_CLOSED');
    }
    expect(await eventually(() => slow.state !== 'pending')).toBe(true);
    expect(await slow.value!.body.text()).toBe('slow');
    expect(await eventually(() => closed.state === 'ok')).toBe(true);
    expect(c.dependency.concurrency()).toMatchObject({ inFlight: 0, queued: 0 });
    expect(server.seen.map((seen) => seen.url)).toEqual(['/busy', '/slow']);
  });

  /** A client hedging at 20 ms (a recorder on a clock that never moves keeps one full window). */
  function hedging(origin: string, minDelayMs: number): HttpClient {
    const stopped = new FakeClock();
    const recorder = createLatencyRecorder({ clock: stopped, windowMs: 500, minSamples: 20 });
    for (let i = 0; i < 20; i += 1) recorder.record(5, 'success');
    stopped.advance(500);
    return client(origin, { p99Ms: 1_000, hedge: { minDelayMs, maxDelayMs: 200 }, recorder });
  }

  it('destroy() with a hedge and its original in flight: UND_ERR_DESTROYED at once, both sockets closed, nothing recorded (SPEC H1)', async () => {
    const server = await serve(() => {}); // never answers
    const c = hedging(server.origin, 20);
    const ends: string[] = [];
    c.on((event) => {
      if (event.type === 'attempt-end') ends.push(event.outcome);
    });
    const call = watch(c.request('/', { deadline: 5_000 }));
    expect(await eventually(() => server.seen.length === 2)).toBe(true);
    await c.destroy();
    await flush();
    expect([call.state, (call.error as { code?: unknown }).code]).toEqual(['err', 'UND_ERR_DESTROYED']);
    expect(ends).toEqual(['cancelled', 'cancelled']);
    expect(await eventually(() => server.open === 0)).toBe(true);
  });

  it('close() with a hedge not sent yet: it is never sent; the original answers', async () => {
    let answer: (() => void) | undefined;
    const server = await serve((_req, res) => {
      answer = () => res.end('late');
    });
    const c = hedging(server.origin, 60);
    const call = watch(c.request('/', { deadline: 5_000 }));
    expect(await eventually(() => answer !== undefined)).toBe(true);
    const closed = watch(c.close());
    await sleep(150); // past the hedge's 60 ms
    expect(server.seen).toHaveLength(1);
    answer!();
    expect(await eventually(() => call.state !== 'pending')).toBe(true);
    expect(await call.value!.body.text()).toBe('late');
    expect(await eventually(() => closed.state === 'ok')).toBe(true);
  });

  it('a request started in the same tick as close() is on the wire: it answers; in the same tick as destroy(): UND_ERR_DESTROYED', async () => {
    const server = await serve((_req, res) => setTimeout(() => res.end('ok'), 20));
    const graceful = client(server.origin);
    const answered = settle(graceful.request('/'));
    const closed = graceful.close();
    expect(await answered).toBe('200 ok');
    await closed;
    const cut = client(server.origin);
    const calls = [settle(cut.request('/')), settle(cut.request('/'))];
    await cut.destroy();
    expect(await Promise.all(calls)).toEqual(['UND_ERR_DESTROYED', 'UND_ERR_DESTROYED']);
  });
});

describe('http-lifecycle attacks: an answer outliving its client or its signal', () => {
  /** Writes `a`, then `b` 50 ms later. */
  const twoParts: Handler = (_req, res) => {
    res.write('a');
    setTimeout(() => res.end('b'), 50);
  };

  it('`for await` of a body: after close() it reads to the end (close() waits for it); after destroy() it fails UND_ERR_DESTROYED, never hangs', async () => {
    const server = await serve(twoParts);
    const read = async (body: AsyncIterable<unknown>): Promise<string> => {
      let text = '';
      try {
        for await (const chunk of body) text += String(chunk);
        return text;
      } catch (error) {
        return String((error as { code?: unknown }).code);
      }
    };
    const graceful = client(server.origin);
    const kept = await graceful.request('/');
    const closed = watch(graceful.close());
    expect(await read(kept.body)).toBe('ab');
    expect(await eventually(() => closed.state === 'ok')).toBe(true);
    const cut = client(server.origin);
    const lost = await cut.request('/');
    await cut.destroy();
    expect(await read(lost.body)).toBe('UND_ERR_DESTROYED');
    const fetched = await client(server.origin).fetch('/');
    const destroyed = client(server.origin);
    const cutFetch = await destroyed.fetch('/');
    await destroyed.destroy();
    expect(await fetched.text()).toBe('ab');
    await expect(cutFetch.text()).rejects.toMatchObject({ code: 'UND_ERR_DESTROYED' });
  });

  it('an AbortSignal aborted after the answer: mid-body it ends the body with its reason; after the end nothing happens, nothing recorded as an error', async () => {
    const server = await serve(twoParts);
    const c = client(server.origin);
    const early = new AbortController();
    const res = await c.request('/', { signal: early.signal });
    early.abort(new Error('gone'));
    await expect(res.body.text()).rejects.toThrow('gone');
    const late = new AbortController();
    const done = await c.request('/', { signal: late.signal });
    expect(await done.body.text()).toBe('ab');
    late.abort(new Error('too late'));
    await flush();
    expect(recorded(c.dependency)).toEqual({ count: 2, errors: 0 });
  });
});

// ── a drain in the way of the retry ─────────────────────────────────────────────────────────────

describe('http-lifecycle attacks: the drain of a retried 503 and the connection its retry needs', () => {
  // Was a defect (fixed): with `connections: 1`, a retried 503 is drained on the only connection so
  // that it can be reused, and a body that trickles (never silent long enough for a body timeout)
  // kept it for the drain's whole bound (1 s): the retry waited for it past its own limit and the
  // call failed QUEUE_TIMEOUT — an error made by prazo's own drain. Expected: the drain gives way
  // (its socket destroyed) and the retry answers; actual: QUEUE_TIMEOUT after ~450 ms.
  it('Was a defect: connections: 1, a retried 503 whose body trickles: the retry gets a connection and answers (SPEC R2)', async () => {
    const server = await serve(faults.sequence(faults.trickling(503), faults.ok('fine')));
    const c = client(server.origin, { p99Ms: 300, attempts: 2, connections: 1 });
    const started = systemClock.now();
    expect(await settle(c.request('/', { deadline: 3_000 }))).toBe('200 fine');
    expect(systemClock.now() - started).toBeLessThan(1_000);
    expect(await eventually(() => server.seen[0]!.socketClosed)).toBe(true);
  });

  // Was a defect (fixed): the same behind the concurrency limit (SPEC X7): a drained 503 keeps its
  // slot until its last byte (what the server counts in flight), so with `maxInFlight: 1` the retry
  // waited in the limit's queue for its own 503's trickling drain (1 s) and, with a 900 ms deadline,
  // the call failed CONCURRENCY_LIMITED (queue-timeout). Expected: the drain gives way, the retry
  // answers; actual: CONCURRENCY_LIMITED after 600 ms (200 after 1.1 s with a longer deadline).
  it('Was a defect: maxInFlight: 1, a retried 503 whose body trickles: the retry gets the slot and answers (SPEC X7, R2)', async () => {
    const server = await serve(faults.sequence(faults.trickling(503), faults.ok('fine')));
    const c = client(server.origin, {
      p99Ms: 300,
      attempts: 2,
      concurrencyLimit: { maxInFlight: 1, maxQueue: 5 },
    });
    const started = systemClock.now();
    expect(await settle(c.request('/', { deadline: 900 }))).toBe('200 fine');
    expect(systemClock.now() - started).toBeLessThan(500);
  });

  // Was a defect (fixed): a retried 503 is drained for its connection's reuse; `close()` (graceful)
  // waited for that drain, prazo's own request that nobody waits for, up to its bound: a body that
  // trickles held `close()` ~1 s after the call had its answer. Expected: close() at once, the
  // drained socket closed; actual: 990 ms.
  it('Was a defect: close() gives up the drain of a retried 503 at once instead of waiting up to 1 s for it', async () => {
    const server = await serve(faults.sequence(faults.trickling(503), faults.ok('fine')));
    const c = client(server.origin, { p99Ms: 300, attempts: 2 });
    expect(await settle(c.request('/', { deadline: 3_000 }))).toBe('200 fine');
    const started = systemClock.now();
    await c.close();
    expect(systemClock.now() - started).toBeLessThan(500);
    expect(await eventually(() => server.seen[0]!.socketClosed)).toBe(true);
  });

  it('connections: 1, a retried 503 whose body is whole: drained, its connection reused by the retry', async () => {
    const server = await serve((_req, res, index) => {
      if (index === 0) {
        res.writeHead(503, { 'content-length': '4' });
        res.end('busy');
      } else res.end('fine');
    });
    const c = client(server.origin, { p99Ms: 300, attempts: 2, connections: 1 });
    expect(await settle(c.request('/', { deadline: 3_000 }))).toBe('200 fine');
    expect(server.connections).toBe(1);
  });
});
