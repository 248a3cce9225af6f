import type { IncomingHttpHeaders, ServerResponse } from 'node:http';
import { createRequire } from 'node:module';
import {
  Agent,
  DecoratorHandler,
  Dispatcher,
  getGlobalDispatcher,
  interceptors,
  MockAgent,
  request,
  setGlobalDispatcher,
} from 'undici';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { systemClock } from '../clock/system.js';
import { runWithDeadline } from '../deadline/ambient.js';
import { Deadline } from '../deadline/deadline.js';
import type { DependencyEvent } from '../dependency/types.js';
import { HttpAttempt, LegacyFace } from './attempt.js';
import { createHttpClient, type HttpClient, interceptor, type PrazoInterceptor } from './index.js';
import type { HttpDependencyOptions } from './options.js';
import { faults, type Handler, startServer, type TestServer } from './servers.test-helpers.js';

/**
 * undici 7's core reached directly (commits d1b2802, 0d7b65e): after the first attempt sent with a
 * dispatch, prazo knows that dispatch is an Agent/Pool/Client's own and sends the later attempts as
 * their `LegacyFace` (legacy callbacks only, and the attempt's controller), which undici passes
 * through without its `UnwrapHandler`; the head stays raw and is parsed only when read (a failed
 * status's Retry-After / pushback, a current-API caller). Real undici 7, real node:http servers on
 * 127.0.0.1. One stack where what prazo learns is wrong is pinned as KNOWN LIMITATION (`it.fails`):
 * fixed, it fails, and becomes a plain test.
 *
 * Which handler reaches the core is seen at undici's own seam: `DispatcherBase.dispatch` hands every
 * handler to `UnwrapHandler.unwrap`, which wraps it (and so parses each head) when it has
 * `onRequestStart`. The spy below records each distinct handler given to it: a test that expects a
 * face fails when an attempt reaches the core wrapped.
 */

const UNDICI_MAJOR = Number(
  (createRequire(import.meta.url)('undici/package.json') as { version: string }).version.split('.')[0],
);

interface UnwrapModule {
  unwrap(handler: object): object;
}
const Unwrap = createRequire(import.meta.url)('undici/lib/handler/unwrap-handler.js') as UnwrapModule;
const originalUnwrap = Unwrap.unwrap;

/** Every distinct handler undici 7's core was handed, in order, and whether it wrapped it. */
const reached: Array<{ handler: object; wrapped: boolean }> = [];

const cleanup: Array<() => Promise<void>> = [];
beforeEach(() => {
  reached.length = 0;
  Unwrap.unwrap = function spy(this: unknown, handler: object): object {
    const out = originalUnwrap.call(this, handler);
    if (!reached.some((r) => r.handler === handler)) reached.push({ handler, wrapped: out !== handler });
    return out;
  };
});
const globalDispatcher = getGlobalDispatcher();
afterEach(async () => {
  Unwrap.unwrap = originalUnwrap;
  setGlobalDispatcher(globalDispatcher);
  for (const fn of cleanup.splice(0).reverse()) await fn();
});

/** How prazo's attempts reached the core, in order: 'attempt' (wrapped, heads parsed) or 'face'. */
function attemptsAtCore(): string[] {
  const out: string[] = [];
  for (const { handler, wrapped } of reached) {
    if (handler instanceof HttpAttempt) out.push(wrapped ? 'attempt' : 'attempt unwrapped?');
    else if (handler instanceof LegacyFace) out.push(wrapped ? 'face wrapped?' : 'face');
  }
  return out;
}

/** How many heads undici's UnwrapHandler parsed for anything (every wrapped handler). */
const wrappedAtCore = (): number => reached.filter((r) => r.wrapped).length;

async function serve(handler: Handler): Promise<TestServer> {
  const server = await startServer(handler);
  cleanup.push(() => server.close());
  return server;
}

/** A full answer: mixed-case and repeated headers, a chunked body, a trailer. */
function rich(status = 200, extra: Record<string, string> = {}): Handler {
  return (req, res: ServerResponse) => {
    res.writeHead(status, {
      'X-Custom-Case': 'v',
      'Set-Cookie': ['a=1', 'b=2'],
      'Content-Type': 'text/plain',
      Trailer: 'X-Checksum',
      'X-Path': req.url ?? '',
      ...extra,
    });
    res.write('hello ');
    res.addTrailers({ 'X-Checksum': 'abc' });
    res.end(`world ${req.url}`);
  };
}

interface Seen {
  status: number;
  headers: Record<string, unknown>;
  body: string;
  trailers: Record<string, unknown>;
}

/** What undici's `request()` (or the client's, which resolves with the same) answered. */
async function seenOf(res: Dispatcher.ResponseData): Promise<Seen> {
  const body = await res.body.text();
  return {
    status: res.statusCode,
    headers: res.headers as Record<string, unknown>,
    body,
    trailers: res.trailers,
  };
}

/** What a legacy caller (undici.request) got. */
async function viaRequest(url: string, dispatcher: Dispatcher): Promise<Seen> {
  return seenOf(await request(url, { dispatcher }));
}

async function viaClient(client: HttpClient, path: string): Promise<Seen> {
  return seenOf(await client.request(path, { deadline: 2_000 }));
}

/** What a current-API caller handler, dispatched by hand above the stack, was given. */
function viaCurrentApi(
  dispatcher: Dispatcher,
  origin: string,
  path: string,
): Promise<Seen & { starts: number; headerObjects: number }> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    const seen = { status: 0, headers: {}, body: '', trailers: {}, starts: 0, headerObjects: 0 };
    dispatcher.dispatch(
      { origin, path, method: 'GET' },
      {
        onRequestStart: () => {
          seen.starts += 1;
        },
        onResponseStart: (_controller, status, headers) => {
          seen.status = status;
          seen.headers = headers;
          if (headers !== null && typeof headers === 'object' && !Array.isArray(headers))
            seen.headerObjects += 1;
        },
        onResponseData: (_controller, chunk) => {
          chunks.push(chunk);
        },
        onResponseEnd: (_controller, trailers) => {
          seen.body = Buffer.concat(chunks).toString();
          seen.trailers = trailers;
          resolve(seen);
        },
        onResponseError: (_controller, error) => reject(error),
      },
    );
  });
}

/** The raw header list a legacy `dispatch` handler was given (names as they came, values as strings). */
function viaLegacyDispatch(
  dispatcher: Dispatcher,
  origin: string,
  path: string,
): Promise<{ status: number; raw: string[]; body: string; trailers: string[] }> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let status = 0;
    let raw: string[] = [];
    dispatcher.dispatch({ origin, path, method: 'GET' }, {
      onConnect() {},
      onHeaders(statusCode: number, headers: Buffer[]) {
        status = statusCode;
        raw = headers.map((h) => (Array.isArray(h) ? `[${h.map(String).join('|')}]` : String(h)));
        return true;
      },
      onData(chunk: Buffer) {
        chunks.push(chunk);
        return true;
      },
      onComplete(trailers: Buffer[] | null) {
        resolve({
          status,
          raw,
          body: Buffer.concat(chunks).toString(),
          trailers: (trailers ?? []).map(String),
        });
      },
      onError: reject,
    } as never);
  });
}

function managed(origin: string, entry: Partial<HttpDependencyOptions> = {}): PrazoInterceptor {
  return interceptor({
    dependencies: { [origin]: { name: 'inventory', p99Ms: 200, ...entry } as HttpDependencyOptions },
  });
}

function agentWith(...chain: Dispatcher.DispatcherComposeInterceptor[]): Dispatcher {
  const agent = new Agent();
  cleanup.push(() => agent.destroy());
  return agent.compose(chain);
}

function listen(prazo: PrazoInterceptor | HttpClient): DependencyEvent[] {
  const events: DependencyEvent[] = [];
  prazo.on((event) => events.push(event));
  return events;
}

const kinds = (events: readonly DependencyEvent[]): string[] =>
  events.filter((e) => e.type === 'attempt').map((e) => (e.type === 'attempt' ? e.kind : ''));

async function waitFor(check: () => boolean, ms = 3_000): Promise<void> {
  const until = systemClock.now() + ms;
  while (!check()) {
    if (systemClock.now() > until) throw new Error('condition not met in time');
    await new Promise((resolve) => systemClock.setTimer(() => resolve(undefined), 5));
  }
}

/** The response every test expects of `rich()` at `path`, as undici.request reports it. */
function expectRich(seen: Seen, path: string, status = 200): void {
  expect(seen.status).toBe(status);
  expect(seen.headers['x-custom-case']).toBe('v');
  expect(seen.headers['set-cookie']).toEqual(['a=1', 'b=2']);
  expect(seen.headers['content-type']).toBe('text/plain');
  expect(seen.headers['x-path']).toBe(path);
  expect(seen.body).toBe(`hello world ${path}`);
  expect(seen.trailers).toEqual({ 'x-checksum': 'abc' });
}

type Interceptor = Dispatcher.DispatcherComposeInterceptor;

/** Answers `first` to the first request (the probe), then `later` to each one after. */
const probeThen =
  (first: Handler, later: Handler): Handler =>
  (req, res, index) =>
    (index === 0 ? first : later)(req, res, index);

/** Head and 10 of 100 bytes, then nothing: a body the caller gives up on. */
const stalling: Handler = (_req, res) => {
  res.writeHead(200, { 'content-length': '100', 'set-cookie': ['a=1', 'b=2'] });
  res.write('0123456789');
};

describe.skipIf(UNDICI_MAJOR >= 8)(
  'later attempts reach undici 7’s core as a LegacyFace, responses intact',
  () => {
    it('createHttpClient: the first attempt probes, every later one is a LegacyFace undici does not wrap', async () => {
      const server = await serve(rich());
      const client = createHttpClient({ name: 'inventory', origin: server.origin, p99Ms: 200 });
      cleanup.push(() => client.destroy());
      for (let i = 0; i < 4; i += 1) expectRich(await viaClient(client, `/c${i}`), `/c${i}`);
      expect(attemptsAtCore()).toEqual(['attempt', 'face', 'face', 'face']);
      expect(wrappedAtCore()).toBe(1); // undici parsed one head for prazo: the probe's
      expect(server.seen.map((r) => r.url)).toEqual(['/c0', '/c1', '/c2', '/c3']);
    });

    it('interceptor on new Agent().compose(prazo): undici.request, and a legacy dispatch gets the raw buffers as read', async () => {
      const server = await serve(rich());
      const dispatcher = agentWith(managed(server.origin));
      for (let i = 0; i < 3; i += 1)
        expectRich(await viaRequest(`${server.origin}/r${i}`, dispatcher), `/r${i}`);
      const legacy = await viaLegacyDispatch(dispatcher, server.origin, '/raw');
      expect(legacy.status).toBe(200);
      // The names as the server sent them, each Set-Cookie its own pair: undici's buffers, not a rebuild.
      expect(legacy.raw.filter((_, i) => i % 2 === 0)).toEqual(
        expect.arrayContaining(['X-Custom-Case', 'Set-Cookie', 'Content-Type', 'X-Path']),
      );
      expect(legacy.raw.filter((h) => h === 'Set-Cookie')).toHaveLength(2);
      expect(legacy.raw).toEqual(expect.arrayContaining(['a=1', 'b=2']));
      expect(legacy.body).toBe('hello world /raw');
      expect(legacy.trailers).toEqual(['X-Checksum', 'abc']);
      expect(attemptsAtCore()).toEqual(['attempt', 'face', 'face', 'face']);
    });

    it('calls in flight together while the dispatch is still being probed all end right; later ones use the face', async () => {
      const server = await serve(rich());
      const dispatcher = agentWith(managed(server.origin));
      const first = await Promise.all(
        [0, 1, 2, 3].map((i) => viaRequest(`${server.origin}/p${i}`, dispatcher)),
      );
      for (const [i, seen] of first.entries()) expectRich(seen, `/p${i}`);
      const probes = attemptsAtCore().length;
      expect(attemptsAtCore()).toEqual(Array(probes).fill('attempt'));
      for (let i = 0; i < 2; i += 1)
        expectRich(await viaRequest(`${server.origin}/q${i}`, dispatcher), `/q${i}`);
      expect(attemptsAtCore().slice(probes)).toEqual(['face', 'face']);
    });

    it('a large body on the face path is read with back-pressure: undici stops reading while the caller does not', async () => {
      const big = Buffer.alloc(16 * 1024 * 1024, 'a');
      const server = await serve((req, res) => res.end(req.url === '/probe' ? 'ok' : big));
      const dispatcher = agentWith(managed(server.origin, { bodyTimeoutMs: 5_000 }));
      await (await request(`${server.origin}/probe`, { dispatcher })).body.dump();
      const res = await request(`${server.origin}/big`, { dispatcher });
      await new Promise((resolve) => systemClock.setTimer(() => resolve(undefined), 300)); // nothing read yet
      // What undici read meanwhile sits in the body's buffer: about its highWaterMark (64 kB) when the
      // pause reached undici, megabytes when it kept reading the socket.
      expect(res.body.readableLength).toBeLessThan(512 * 1024);
      let total = 0;
      for await (const chunk of res.body) total += (chunk as Buffer).length;
      expect(total).toBe(big.length);
      expect(attemptsAtCore()).toEqual(['attempt', 'face']);
    });
  },
);

describe.skipIf(UNDICI_MAJOR >= 8)('a held answer on the face path is paused, then drained', () => {
  it('a retried 503 is drained so that its one connection serves the retry (Agent with connections: 1)', async () => {
    const server = await serve((_req, res, index) => {
      if (index !== 1) return res.end('ok');
      res.writeHead(503);
      res.end('b'.repeat(64 * 1024)); // a body to drain, under the drain limit
    });
    const agent = new Agent({ connections: 1 });
    cleanup.push(() => agent.destroy());
    const prazo = managed(server.origin, { p99Ms: 1_000, attempts: 2, throttle: false });
    const events = listen(prazo);
    const dispatcher = agent.compose(prazo);
    await (await request(`${server.origin}/probe`, { dispatcher })).body.dump();
    const started = systemClock.now();
    const res = await request(`${server.origin}/r`, { dispatcher });
    expect([res.statusCode, await res.body.text()]).toEqual([200, 'ok']);
    expect(systemClock.now() - started).toBeLessThan(700); // not the 1,400 ms attempt timeout
    expect(server.connections).toBe(1);
    expect(kinds(events)).toEqual(['original', 'original', 'retry']);
    expect(attemptsAtCore()).toEqual(['attempt', 'face', 'face']);
  });
});

describe.skipIf(UNDICI_MAJOR >= 8)(
  'a failed status on the face path: its raw head is read (SPEC R3, X6)',
  () => {
    async function client(later: Handler, entry: object = {}) {
      const server = await serve(probeThen(faults.ok(), later));
      const http = createHttpClient({
        name: 'inventory',
        origin: server.origin,
        p99Ms: 200,
        attempts: 3,
        throttle: false,
        ...entry,
      });
      cleanup.push(() => http.destroy());
      const events = listen(http);
      await (await http.request('/probe', { deadline: 2_000 })).body.dump(); // the probe: learnt
      return { server, http, events };
    }

    it.each([
      { status: 503, header: { 'Retry-After': '1' }, waitMs: 1_000, atLeastMs: 950, spec: 'SPEC R3' },
      {
        status: 429,
        header: { 'grpc-retry-pushback-ms': '300' },
        waitMs: 300,
        atLeastMs: 290,
        spec: 'SPEC X6',
      },
    ])(
      '$status with $header on a later call: retried after the $waitMs ms the server asked for ($spec)',
      async ({ status, header, waitMs, atLeastMs }) => {
        let n = 0;
        const { server, http, events } = await client((_req, res) => {
          n += 1;
          if (n === 1) {
            res.writeHead(status, header);
            res.end('not now');
          } else res.end('fresh');
        });
        const started = systemClock.now();
        const res = await http.request('/r', { deadline: 3_000 });
        expect([res.statusCode, await res.body.text()]).toEqual([200, 'fresh']);
        expect(systemClock.now() - started).toBeGreaterThanOrEqual(atLeastMs);
        expect(events.filter((e) => e.type === 'retry-after')).toEqual([
          { type: 'retry-after', dependency: 'inventory', waitMs, honoured: true },
        ]);
        expect(server.seen).toHaveLength(3);
        expect(attemptsAtCore()).toEqual(['attempt', 'face', 'face']); // the failed head itself came in raw
      },
    );

    it('503 with a Retry-After past the deadline: not retried, the 503 is the answer (SPEC R3)', async () => {
      const { server, http } = await client(faults.status(503, { 'Retry-After': '30' }));
      const res = await http.request('/r', { deadline: 2_000 });
      expect(res.statusCode).toBe(503);
      expect(res.headers['retry-after']).toBe('30');
      await res.body.dump();
      expect(server.seen).toHaveLength(2); // the probe, then one attempt: a retry would come 30 s too late
      expect(attemptsAtCore()).toEqual(['attempt', 'face']);
    });

    it('503 with grpc-retry-pushback-ms: -1 on a later call, through the interceptor: not retried (SPEC X6)', async () => {
      const server = await serve(
        probeThen(faults.ok(), faults.status(503, { 'grpc-retry-pushback-ms': '-1', 'Set-Cookie': 'c=3' })),
      );
      const prazo = managed(server.origin, { attempts: 3, throttle: false });
      const events = listen(prazo);
      const dispatcher = agentWith(prazo);
      await (await request(`${server.origin}/probe`, { dispatcher })).body.dump();
      for (let i = 0; i < 2; i += 1) {
        const res = await request(`${server.origin}/x`, { dispatcher });
        expect(res.statusCode).toBe(503);
        expect(res.headers['grpc-retry-pushback-ms']).toBe('-1');
        await res.body.dump();
      }
      expect(server.seen).toHaveLength(3);
      expect(events.filter((e) => e.type === 'pushback')).toHaveLength(2);
      expect(attemptsAtCore()).toEqual(['attempt', 'face', 'face']);
    });
  },
);

describe.skipIf(UNDICI_MAJOR >= 8)(
  'the caller above gets the head in its own API, on calls after the first',
  () => {
    it('a current-API handler dispatched by hand gets a parsed object: lowercase names, repeats as arrays', async () => {
      const server = await serve(rich());
      const dispatcher = agentWith(managed(server.origin));
      for (let i = 0; i < 3; i += 1) {
        const seen = await viaCurrentApi(dispatcher, server.origin, `/h${i}`);
        expect([seen.starts, seen.headerObjects]).toEqual([1, 1]);
        expectRich(seen, `/h${i}`);
        for (const name of Object.keys(seen.headers)) expect(name).toBe(name.toLowerCase());
      }
      expect(attemptsAtCore()).toEqual(['attempt', 'face', 'face']);
    });

    it('a current-API handler gets the winner’s head after a retried 503 on the face path, once', async () => {
      let n = 0;
      const server = await serve((req, res, index) => {
        if (index === 0) return rich()(req, res, index);
        n += 1;
        if (n === 1) {
          res.writeHead(503, { 'set-cookie': ['stale=1', 'stale=2'] });
          return res.end('busy');
        }
        return rich()(req, res, index);
      });
      const dispatcher = agentWith(managed(server.origin, { attempts: 2, throttle: false }));
      await viaCurrentApi(dispatcher, server.origin, '/probe');
      const seen = await viaCurrentApi(dispatcher, server.origin, '/again');
      expect([seen.starts, seen.headerObjects]).toEqual([1, 1]);
      expectRich(seen, '/again');
      expect(server.seen).toHaveLength(3);
      expect(attemptsAtCore()).toEqual(['attempt', 'face', 'face']);
    });

    it('Node’s global fetch (a legacy handler) through setGlobalDispatcher: Set-Cookie stays two values', async () => {
      const server = await serve(rich());
      setGlobalDispatcher(agentWith(managed(server.origin)));
      for (let i = 0; i < 3; i += 1) {
        const res = await fetch(`${server.origin}/f${i}`);
        expect(res.status).toBe(200);
        expect(res.headers.getSetCookie()).toEqual(['a=1', 'b=2']);
        expect(res.headers.get('x-custom-case')).toBe('v');
        expect(await res.text()).toBe(`hello world /f${i}`);
      }
      expect(attemptsAtCore()).toEqual(['attempt', 'face', 'face']);
    });
  },
);

/** A pass-through interceptor whose handler is undici's DecoratorHandler: it records each head it saw. */
function tap(heads: Array<Record<string, unknown>>): Interceptor {
  // undici's types declare none of DecoratorHandler's methods: its prototype has them all.
  const decorated = DecoratorHandler.prototype as unknown as Required<Dispatcher.DispatchHandler>;
  class Tap extends DecoratorHandler {
    onResponseStart(
      controller: Dispatcher.DispatchController,
      status: number,
      headers: IncomingHttpHeaders,
      message?: string,
    ): void {
      heads.push(headers);
      decorated.onResponseStart.call(this, controller, status, headers, message);
    }
  }
  return (dispatch) => (opts, handler) => dispatch(opts, new Tap(handler));
}

/** 503 to the second request (a retried attempt of the second call), else `rich()`. */
const busyOnce: Handler = (req, res, index) => {
  if (index === 1) {
    res.writeHead(503, { 'content-type': 'text/plain' });
    res.end('busy');
  } else rich()(req, res, index);
};

describe.skipIf(UNDICI_MAJOR >= 8)('prazo above another interceptor: correct whatever prazo learns', () => {
  it('compose(interceptors.dump(), prazo): statuses, headers, (dumped) bodies and a retried 503 for both kinds of caller', async () => {
    // dump reads each body and hands the caller none, as on a bare Agent: what it gives is the same.
    const bare = await serve(rich());
    const alone = await viaRequest(`${bare.origin}/a`, agentWith(interceptors.dump({ maxSize: 1024 })));
    expect(alone.body).toBe('');
    const dumped = (seen: Seen, path: string): void =>
      expectRich({ ...seen, body: `hello world ${path}` }, path);
    const server = await serve(busyOnce);
    const prazo = managed(server.origin, { attempts: 2, throttle: false });
    const events = listen(prazo);
    const dispatcher = agentWith(interceptors.dump({ maxSize: 1024 }), prazo);
    for (const path of ['/a', '/b']) {
      const seen = await viaRequest(`${server.origin}${path}`, dispatcher); // /b: 503, then retried
      expect(seen.body).toBe(alone.body);
      dumped(seen, path);
    }
    for (let i = 0; i < 2; i += 1) {
      const seen = await viaCurrentApi(dispatcher, server.origin, `/c${i}`);
      expect([seen.starts, seen.headerObjects, seen.body]).toEqual([1, 1, '']);
      dumped(seen, `/c${i}`);
    }
    expect(server.seen.map((r) => r.url)).toEqual(['/a', '/b', '/b', '/c0', '/c1']);
    expect(kinds(events)).toEqual(['original', 'original', 'retry', 'original', 'original']);
  });

  it('compose(tap, prazo) with a DecoratorHandler in between: the same, and the tap sees parsed heads', async () => {
    const server = await serve(busyOnce);
    const heads: Array<Record<string, unknown>> = [];
    const prazo = managed(server.origin, { attempts: 2, throttle: false });
    const events = listen(prazo);
    const dispatcher = agentWith(tap(heads), prazo);
    expectRich(await viaRequest(`${server.origin}/a`, dispatcher), '/a');
    expectRich(await viaRequest(`${server.origin}/b`, dispatcher), '/b');
    for (let i = 0; i < 2; i += 1)
      expectRich(await viaCurrentApi(dispatcher, server.origin, `/c${i}`), `/c${i}`);
    expect(kinds(events)).toEqual(['original', 'original', 'retry', 'original', 'original']);
    expect(heads).toHaveLength(5); // one a request, the 503 included
    for (const head of heads.filter((_, i) => i !== 1)) expect(head['set-cookie']).toEqual(['a=1', 'b=2']);
  });

  it('createHttpClient({ dispatcher: agent.compose(tap) }): answers and a Retry-After past the deadline read on later calls', async () => {
    const server = await serve((req, res, index) => {
      if (index !== 1) return rich()(req, res, index);
      res.writeHead(503, { 'Retry-After': '30', 'Set-Cookie': ['x=1', 'y=2'] });
      res.end('busy');
    });
    const heads: Array<Record<string, unknown>> = [];
    const client = createHttpClient({
      name: 'inventory',
      origin: server.origin,
      p99Ms: 200,
      attempts: 2,
      throttle: false,
      dispatcher: agentWith(tap(heads)),
    });
    cleanup.push(() => client.destroy());
    expectRich(await viaClient(client, '/c0'), '/c0');
    const busy = await viaClient(client, '/c1');
    expect([busy.status, busy.headers['set-cookie'], busy.body]).toEqual([503, ['x=1', 'y=2'], 'busy']);
    expectRich(await viaClient(client, '/c2'), '/c2');
    expect(server.seen.map((r) => r.url)).toEqual(['/c0', '/c1', '/c2']); // the 503 was not retried
    expect(heads).toHaveLength(3);
  });

  // Found here: `agent.compose(tap).compose(prazo)` hands prazo `compose`'s own wrapper bound to the
  // first composed dispatcher: named "bound dispatch", and the probe's controller is undici's
  // UnwrapController (tap passes it through), so prazo takes it for undici's core. The next attempt
  // goes as a LegacyFace into compose's WrapHandler, which starts it with an `abort` of its own
  // (not the core's): prazo goes back to the current API (`checkCore`), and a head WrapHandler
  // rebuilt (a repeated header as an array of Buffers) is read by undici's own parser.
  it('agent.compose(tap).compose(prazo): a current-API caller gets Set-Cookie as an array on every call', async () => {
    const server = await serve(rich());
    const heads: Array<Record<string, unknown>> = [];
    const agent = new Agent();
    cleanup.push(() => agent.destroy());
    const dispatcher = agent.compose(tap(heads)).compose(managed(server.origin));
    for (let i = 0; i < 3; i += 1)
      expectRich(await viaCurrentApi(dispatcher, server.origin, `/c${i}`), `/c${i}`);
  });

  // KNOWN LIMITATION (found here): a Dispatcher of the caller's own whose `dispatch` wraps each handler
  // in a current-API-only decorator before an Agent: prazo's dispatch is its bound `dispatch` and the
  // probe sees an UnwrapController, so later attempts go as a LegacyFace, which has no current-API
  // callback: the decorator calls `onRequestStart`/`onResponseStart` on it and nothing happens (the
  // attempt fails at its timeout). Such a dispatcher cannot carry undici 7's own handlers either
  // (`request()`, `fetch` speak the legacy API): `undici.request` on it alone never answers.
  it.fails('KNOWN LIMITATION: a Dispatcher subclass with a current-API-only decorator below prazo: later calls still answer', async () => {
    const server = await serve(rich());
    const agent = new Agent();
    cleanup.push(() => agent.destroy());
    class Traced extends Dispatcher {
      override dispatch(opts: Dispatcher.DispatchOptions, handler: Dispatcher.DispatchHandler): boolean {
        return agent.dispatch(opts, {
          onRequestStart: (c, context) => handler.onRequestStart?.(c, context),
          onResponseStart: (c, status, headers, message) =>
            handler.onResponseStart?.(c, status, headers, message),
          onResponseData: (c, chunk) => handler.onResponseData?.(c, chunk),
          onResponseEnd: (c, trailers) => handler.onResponseEnd?.(c, trailers),
          onResponseError: (c, error) => handler.onResponseError?.(c, error),
        });
      }
    }
    const dispatcher = new Traced().compose(managed(server.origin, { p99Ms: 100, attempts: 1 }));
    for (let i = 0; i < 3; i += 1)
      expectRich(await viaRequest(`${server.origin}/t${i}`, dispatcher), `/t${i}`);
  });
});

describe.skipIf(UNDICI_MAJOR >= 8)('the caller aborting mid-body on the face path', () => {
  async function aborted(res: Dispatcher.ResponseData, abort: () => void): Promise<unknown> {
    const first = await new Promise<Buffer>((resolve) => res.body.once('data', resolve));
    expect(String(first)).toBe('0123456789');
    const failed = new Promise((resolve) => {
      res.body.once('error', resolve);
      systemClock.setTimer(() => resolve('no error within 1 s'), 1_000);
    });
    abort();
    return failed;
  }

  it('undici.request with a signal: the body fails with the reason, the server sees its socket closed', async () => {
    const server = await serve(probeThen(faults.ok(), stalling));
    const dispatcher = agentWith(managed(server.origin, { p99Ms: 1_000 }));
    await (await request(`${server.origin}/probe`, { dispatcher })).body.dump();
    const controller = new AbortController();
    const res = await request(`${server.origin}/s`, { dispatcher, signal: controller.signal });
    expect(res.headers['set-cookie']).toEqual(['a=1', 'b=2']);
    const started = systemClock.now();
    const error = await aborted(res, () => controller.abort(new Error('caller left')));
    expect(String(error)).toContain('caller left');
    await waitFor(() => server.seen[1]!.socketClosed, 1_000);
    expect(systemClock.now() - started).toBeLessThan(500);
    expect(attemptsAtCore()).toEqual(['attempt', 'face']);
  });

  it('createHttpClient with a signal: the same', async () => {
    const server = await serve(probeThen(faults.ok(), stalling));
    const client = createHttpClient({ name: 'inventory', origin: server.origin, p99Ms: 1_000 });
    cleanup.push(() => client.destroy());
    await (await client.request('/probe')).body.dump();
    const controller = new AbortController();
    const res = await client.request('/s', { signal: controller.signal });
    const error = await aborted(res, () => controller.abort(new Error('caller left')));
    expect(String(error)).toContain('caller left');
    await waitFor(() => server.seen[1]!.socketClosed, 1_000);
    expect(attemptsAtCore()).toEqual(['attempt', 'face']);
  });

  it('a current-API caller’s controller.abort() in onResponseData: onResponseError, the socket closed', async () => {
    const server = await serve(probeThen(faults.ok(), stalling));
    const dispatcher = agentWith(managed(server.origin, { p99Ms: 1_000 }));
    await (await request(`${server.origin}/probe`, { dispatcher })).body.dump();
    const reason = new Error('caller left');
    const heard = await new Promise<string[]>((resolve) => {
      const seen: string[] = [];
      systemClock.setTimer(() => resolve([...seen, 'timeout']), 1_000);
      dispatcher.dispatch(
        { origin: server.origin, path: '/s', method: 'GET' },
        {
          onRequestStart: () => seen.push('start'),
          onResponseStart: (_c, status) => seen.push(`head ${status}`),
          onResponseData: (controller, chunk) => {
            seen.push(`data ${chunk.length}`);
            controller.abort(reason);
          },
          onResponseEnd: () => resolve([...seen, 'end']),
          onResponseError: (_c, error) =>
            resolve([...seen, error === reason ? 'error: reason' : String(error)]),
        },
      );
    });
    expect(heard).toEqual(['start', 'head 200', 'data 10', 'error: reason']);
    await waitFor(() => server.seen[1]!.socketClosed, 1_000);
    expect(attemptsAtCore()).toEqual(['attempt', 'face']);
  });
});

describe.skipIf(UNDICI_MAJOR >= 8)(
  'the server failing on the face path: undici’s error reaches the attempt',
  () => {
    it('a reset before the head: the attempt ends in error at once (not its timeout) and is retried', async () => {
      const server = await serve((req, res, index) =>
        (index === 1 ? faults.resetBeforeResponse() : faults.ok())(req, res, index),
      );
      const prazo = managed(server.origin, { p99Ms: 1_000, attempts: 2, throttle: false });
      const events = listen(prazo);
      const dispatcher = agentWith(prazo);
      await (await request(`${server.origin}/probe`, { dispatcher })).body.dump();
      const started = systemClock.now();
      const res = await request(`${server.origin}/r`, { dispatcher });
      expect([res.statusCode, await res.body.text()]).toEqual([200, 'ok']);
      expect(systemClock.now() - started).toBeLessThan(700); // the attempt timeout is 1,400 ms
      const ends = events.flatMap((e) => (e.type === 'attempt-end' ? [`${e.kind} ${e.outcome}`] : []));
      expect(ends).toEqual(['original success', 'original error', 'retry success']);
      expect(attemptsAtCore()).toEqual(['attempt', 'face', 'face']);
    });

    it('a reset mid-body: the caller’s body fails with the socket’s error, promptly', async () => {
      const server = await serve((req, res, index) =>
        (index === 1 ? faults.resetMidResponse() : faults.ok())(req, res, index),
      );
      const dispatcher = agentWith(managed(server.origin, { p99Ms: 1_000, bodyTimeoutMs: 3_000 }));
      await (await request(`${server.origin}/probe`, { dispatcher })).body.dump();
      const res = await request(`${server.origin}/r`, { dispatcher });
      expect(res.statusCode).toBe(200);
      const error = await Promise.race([
        res.body.text().then(
          () => ({ code: 'read to the end' }),
          (e: { code?: string }) => e,
        ),
        new Promise<{ code: string }>((resolve) =>
          systemClock.setTimer(() => resolve({ code: 'nothing within 1 s' }), 1_000),
        ),
      ]);
      expect(['UND_ERR_SOCKET', 'ECONNRESET']).toContain(error.code);
      expect(attemptsAtCore()).toEqual(['attempt', 'face']);
    });
  },
);

describe.skipIf(UNDICI_MAJOR >= 8)(
  'an origin the interceptor does not manage, called again and again',
  () => {
    it('passes through untouched without a deadline; under an ambient one its later attempts use the face', async () => {
      const managedServer = await serve(faults.ok());
      const server = await serve(rich(503, { 'Retry-After': '0' }));
      const prazo = managed(managedServer.origin, { attempts: 3 });
      const events = listen(prazo);
      const dispatcher = agentWith(prazo);
      for (let i = 0; i < 2; i += 1)
        expectRich(await viaRequest(`${server.origin}/u${i}`, dispatcher), `/u${i}`, 503);
      expect(attemptsAtCore()).toEqual([]); // not prazo's call: the caller's own handler reached undici
      for (let i = 0; i < 3; i += 1) {
        const seen = await runWithDeadline(Deadline.after(2_000), () =>
          viaRequest(`${server.origin}/d${i}`, dispatcher),
        );
        expectRich(seen, `/d${i}`, 503); // a status is an unmanaged origin's answer: not retried
        expect(Number(server.seen.at(-1)!.headers['x-deadline-epoch-ms'])).toBeGreaterThan(Date.now());
      }
      for (let i = 0; i < 2; i += 1) {
        const seen = await runWithDeadline(Deadline.after(2_000), () =>
          viaCurrentApi(dispatcher, server.origin, `/e${i}`),
        );
        expectRich(seen, `/e${i}`, 503);
      }
      expect(server.seen).toHaveLength(7);
      expect(attemptsAtCore()).toEqual(['attempt', 'face', 'face', 'face', 'face']);
      expect(events).toEqual([]);
      expect(managedServer.seen).toHaveLength(0);
    });
  },
);

describe.skipIf(UNDICI_MAJOR >= 8)('undici’s MockAgent below prazo (what a service’s tests use)', () => {
  it('compose(prazo) on a MockAgent: every call answered, a later 503 with Retry-After retried (SPEC R3)', async () => {
    const origin = 'http://inventory.test:8080';
    const mock = new MockAgent();
    mock.disableNetConnect();
    cleanup.push(() => mock.close());
    const pool = mock.get(origin);
    for (let i = 0; i < 3; i += 1)
      pool
        .intercept({ path: `/m${i}` })
        .reply(200, `m${i}`, { headers: { 'set-cookie': ['a=1', 'b=2'], 'x-n': String(i) } });
    pool.intercept({ path: '/busy' }).reply(503, 'busy', { headers: { 'retry-after': '0' } });
    pool.intercept({ path: '/busy' }).reply(200, 'free');
    const prazo = managed(origin, { attempts: 2 });
    const events = listen(prazo);
    const dispatcher = mock.compose(prazo);
    for (let i = 0; i < 3; i += 1) {
      const res = await request(`${origin}/m${i}`, { dispatcher });
      expect([res.statusCode, res.headers['x-n'], res.headers['set-cookie'], await res.body.text()]).toEqual([
        200,
        String(i),
        ['a=1', 'b=2'],
        `m${i}`,
      ]);
    }
    const res = await request(`${origin}/busy`, { dispatcher });
    expect([res.statusCode, await res.body.text()]).toEqual([200, 'free']);
    expect(kinds(events).filter((k) => k === 'retry')).toHaveLength(1);
    mock.assertNoPendingInterceptors();
  });
});
