import { getEventListeners } from 'node:events';
import http from 'node:http';
import net from 'node:net';
import { Readable } from 'node:stream';
import v8 from 'node:v8';
import vm from 'node:vm';
import {
  Agent,
  type Dispatcher,
  interceptors,
  request,
  FormData as UndiciFormData,
  Headers as UndiciHeaders,
  connect as undiciConnect,
  upgrade as undiciUpgrade,
} from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { FakeClock } from '../../../src/clock/fake.js';
import { Deadline } from '../../../src/deadline/deadline.js';
import { isPrazoError } from '../../../src/errors/base.js';
import { InvalidOptionsError } from '../../../src/errors/options.js';
import { createHttpClient, type HttpClient } from '../../../src/http/client.js';
import { interceptor } from '../../../src/http/interceptor.js';
import type { HttpClientOptions } from '../../../src/http/options.js';
import {
  faults,
  type Handler,
  startServer,
  type TestServer,
} from '../../../src/http/servers.test-helpers.js';
import { eventually, sleep } from './watch.js';

/**
 * Attacks on prazo/http's public API (createHttpClient's `request`/`fetch`, the interceptor under
 * `undici.request`), as a hostile or careless caller and a hostile server would make them: headers in
 * every shape undici takes and some it refuses, deadlines and signals of every kind, bodies that can
 * and cannot be replayed, answers in every odd form (Retry-After, pushback, 1xx, 101, CONNECT,
 * garbage, trickling bodies), misuse of the lifecycle and of the options, callbacks that throw, and
 * thousands of origins. Real loopback servers (127.0.0.1, port 0) count what reaches them and the
 * sockets they hold; the fake clock where the timing is not a socket's.
 *
 * A test named "Was a defect" pinned a defect found here (fixed since): it states what the project
 * promises (SPEC ids, the docs); its comment says what was expected and what happened.
 */

const cleanup: Array<() => Promise<unknown> | unknown> = [];
afterEach(async () => {
  for (const fn of cleanup.splice(0).reverse()) await fn();
});

/** `promise`'s outcome, or `'pending'` when it has not settled within `ms`. */
async function within<T>(ms: number, promise: Promise<T>): Promise<T | 'pending'> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<'pending'>((resolve) => {
    timer = setTimeout(() => resolve('pending'), ms);
  });
  try {
    return await Promise.race([promise, late]);
  } finally {
    clearTimeout(timer);
  }
}

interface Settled {
  readonly ok: boolean;
  readonly status?: number;
  readonly body?: string;
  readonly error?: Error & { code?: unknown; neededMs?: number; remainingMs?: number };
  readonly ms: number;
}

/** A response (read whole) or the rejection, never a throw. */
async function settle(promise: Promise<Dispatcher.ResponseData>): Promise<Settled> {
  const started = performance.now();
  try {
    const res = await promise;
    const body = await res.body.text();
    return { ok: true, status: res.statusCode, body, ms: performance.now() - started };
  } catch (error) {
    return { ok: false, error: error as Settled['error'], ms: performance.now() - started };
  }
}

/** True for an error a caller can match on: prazo's (stable `code`) or undici's own (`UND_ERR_*`). */
const typed = (error: unknown): boolean =>
  isPrazoError(error) || (typeof (error as { code?: unknown })?.code === 'string' && error instanceof Error);

async function serve(handler: Handler): Promise<TestServer> {
  const server = await startServer(handler);
  cleanup.push(() => server.close());
  return server;
}

function client(server: { origin: string }, options: Partial<HttpClientOptions> = {}): HttpClient {
  const made = createHttpClient({
    name: 'inventory',
    origin: server.origin,
    p99Ms: 500, // roomy: a loaded machine must not turn an answer into a timeout
    ...options,
  } as HttpClientOptions);
  cleanup.push(() => made.destroy());
  return made;
}

function agentWith(...stack: Dispatcher.DispatcherComposeInterceptor[]): Dispatcher {
  const agent = new Agent().compose(...stack);
  cleanup.push(() => agent.destroy());
  return agent;
}

/** Echoes the request: method, url, body and raw headers as JSON. */
const echo: Handler = (req, res) => {
  let body = '';
  req.on('data', (chunk) => {
    body += chunk;
  });
  req.on('end', () =>
    res.end(JSON.stringify({ method: req.method, url: req.url, body, raw: req.rawHeaders })),
  );
};

/** The raw header pairs the server received, lower-cased names, without the ones undici adds. */
function receivedPairs(body: string): Array<[string, string]> {
  const raw = (JSON.parse(body) as { raw: string[] }).raw;
  const pairs: Array<[string, string]> = [];
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]!.toLowerCase();
    if (name !== 'host' && name !== 'connection' && name !== 'x-deadline-epoch-ms')
      pairs.push([name, raw[i + 1]!]);
  }
  return pairs;
}

/**
 * A TCP server that answers each request chunk with `answer(path)` as raw bytes (then closes the
 * connection unless told to keep it), for heads node:http would not write. Every socket tracked.
 */
async function rawServer(answer: (path: string, socket: net.Socket) => string | undefined) {
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => {});
    socket.on('data', (data) => {
      const path = String(data).split('\r\n')[0]!.split(' ')[1] ?? '/';
      const out = answer(path, socket);
      if (out !== undefined) socket.end(out);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const origin = `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`;
  cleanup.push(
    () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  );
  return { origin, sockets };
}

// ── headers ─────────────────────────────────────────────────────────────────────────────────────

describe('http-api attacks: request headers in every shape undici accepts', () => {
  it('a record with arrays, numbers and booleans, flat pairs, pairs with arrays, a Map, both Headers: each arrives as given', async () => {
    const server = await serve(echo);
    const c = client(server);
    const shapes: Array<[unknown, Array<[string, string]>]> = [
      [
        { a: ['1', '2'], b: 3, c: null, d: undefined, e: true },
        [
          ['a', '1'],
          ['a', '2'],
          ['b', '3'],
          ['e', 'true'],
        ],
      ],
      [
        ['a', '1', 'b', '2'],
        [
          ['a', '1'],
          ['b', '2'],
        ],
      ],
      [
        [
          ['a', '1'],
          ['b', ['2', '3']],
        ],
        [
          ['a', '1'],
          ['b', '2'],
          ['b', '3'],
        ],
      ],
      [new Map([['a', '1']]), [['a', '1']]],
      [new UndiciHeaders({ a: '1' }), [['a', '1']]],
      [new globalThis.Headers({ a: '1' }), [['a', '1']]],
      [[], []],
      [null, []],
    ];
    for (const [headers, expected] of shapes) {
      const got = await settle(c.request('/', { headers: headers as never }));
      expect(got.ok, String(got.error)).toBe(true);
      expect(receivedPairs(got.body!)).toEqual(expected);
    }
  });

  it("a caller's deadline header in any case is dropped, its Idempotency-Key in any case or repeated travels once (SPEC D1, R5)", async () => {
    const server = await serve(echo);
    const c = client(server);
    const variants: unknown[] = [
      // Far-future values: a caller's deadline header bounds the call (SPEC D5), one header travels.
      { 'X-Deadline-Epoch-Ms': '99999999999999', 'IDEMPOTENCY-KEY': 'k' },
      [
        'x-deadline-epoch-ms',
        '99999999999999',
        'X-DEADLINE-EPOCH-MS',
        '99999999999998',
        'Idempotency-Key',
        'k',
      ],
      [['idempotency-key', ['k', 'other']]],
      new UndiciHeaders({ 'idempotency-key': 'k' }),
    ];
    for (const headers of variants) {
      const got = await settle(c.request('/', { method: 'POST', body: 'x', headers: headers as never }));
      const raw = (JSON.parse(got.body!) as { raw: string[] }).raw.map((v) => v.toLowerCase());
      expect(raw.filter((v) => v === 'idempotency-key')).toHaveLength(1);
      expect(raw[raw.indexOf('idempotency-key') + 1]).toBe('k');
      const deadlines = raw.flatMap((v, i) => (v === 'x-deadline-epoch-ms' ? [raw[i + 1]] : []));
      expect(deadlines).toHaveLength(1);
      expect(Number(deadlines[0])).toBeGreaterThan(Date.now());
    }
  });

  it('an invalid name or value (CRLF, a space in the name) is undici’s typed refusal, one attempt at most, nothing sent', async () => {
    const server = await serve(echo);
    const c = client(server, { attempts: 3 });
    for (const headers of [{ a: 'x\r\ny: z' }, { 'bad name': '1' }, { 'transfer-encoding': 'chunked' }]) {
      const got = await settle(c.request('/', { headers }));
      expect(got.ok).toBe(false);
      expect((got.error as { code?: unknown }).code).toBe('UND_ERR_INVALID_ARG');
    }
    expect(server.seen).toHaveLength(0);
  });

  it('20 000 headers through request(), flat pairs and the interceptor: linear (no quadratic cost)', async () => {
    const server = http.createServer({ maxHeaderSize: 64 * 1024 * 1024 }, (req, res) =>
      res.end(String(req.rawHeaders.length / 2)),
    );
    server.maxHeadersCount = 0;
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const origin = `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`;
    cleanup.push(
      () => new Promise((resolve) => server.close(resolve)),
      () => server.closeAllConnections(),
    );
    const c = client({ origin }, { p99Ms: 500 });
    const agent = agentWith(interceptor({ dependencies: { [origin]: { name: 'h', p99Ms: 500 } } }));
    const record: Record<string, string> = {};
    const flat: string[] = [];
    for (let i = 0; i < 20_000; i += 1) {
      record[`x-h${i}`] = 'v';
      flat.push(`x-h${i}`, 'v');
    }
    const started = performance.now();
    const answers = [
      await settle(c.request('/', { headers: record, deadline: 10_000 })),
      await settle(c.request('/', { headers: flat, deadline: 10_000 })),
      await settle(
        request(origin, { dispatcher: agent, headers: record, prazo: { deadline: 10_000 } } as never),
      ),
    ];
    for (const a of answers) expect(Number(a.body)).toBeGreaterThan(20_000);
    expect(performance.now() - started).toBeLessThan(3_000);
  });

  // Was a defect (fixed): undici refuses a header value that is an object (`InvalidArgumentError: invalid a header`);
  // prazo turns it into the text "[object Object]" (headers.ts appendCallerHeaders: `String(value)`)
  // and sends it. Expected: the same typed refusal, nothing sent; actual: a 200 and a garbage header.
  it('Was a defect: an object header value is refused as undici refuses it, not sent as "[object Object]"', async () => {
    const server = await serve(echo);
    const c = client(server);
    const got = await settle(c.request('/', { headers: { a: { x: 1 } } as never }));
    expect(got.ok).toBe(false);
    expect(typed(got.error)).toBe(true);
    expect(server.seen).toHaveLength(0);
  });

  // Was a defect (fixed): headers that are no header container (a string, a number) are refused by undici
  // ("headers must be an object or an array"); prazo iterates the string's characters or finds no
  // keys, and sends the request without the caller's headers (headers.ts appendCallerHeaders).
  // Expected: a typed refusal; actual: the request goes out with its headers silently gone.
  it('Was a defect: headers given as a string or a number are refused, not silently dropped', async () => {
    const server = await serve(echo);
    const c = client(server);
    for (const headers of ['authorization: secret', 5]) {
      const got = await settle(c.request('/', { headers: headers as never }));
      expect(got.ok).toBe(false);
      expect(typed(got.error)).toBe(true);
    }
    expect(server.seen).toHaveLength(0);
  });

  // Was a defect (fixed): a flat header list holding null (or a pair list with a hole) crashes inside prazo with
  // "TypeError: Cannot read properties of null (reading '0')", no code (headers.ts: a list whose first
  // entry is not a string is read as pairs). undici refuses `[null]` with a typed InvalidArgumentError.
  it('Was a defect: a header list holding null is a typed refusal, not an internal TypeError', async () => {
    const server = await serve(echo);
    const c = client(server);
    const got = await settle(c.request('/', { headers: [null] as never }));
    expect(got.ok).toBe(false);
    expect(typed(got.error)).toBe(true);
    expect(got.error!.message).not.toMatch(/Cannot read properties/);
  });

  // Was a defect (fixed): undici refuses a flat header list of odd length ("headers array must be even");
  // prazo dropped the last name without a word (headers.ts read pairs while `i + 1 < length`) and sent
  // the request. Expected: the typed refusal, nothing sent.
  it('Was a defect: a flat header list with a name and no value is refused as undici refuses it', async () => {
    const server = await serve(echo);
    const c = client(server);
    const got = await settle(c.request('/', { headers: ['a', '1', 'authorization'] as never }));
    expect(got.ok).toBe(false);
    expect(typed(got.error)).toBe(true);
    expect(got.error!.message).toMatch(/even/);
    expect(server.seen).toHaveLength(0);
  });

  // Was a defect (fixed): undici reads a header record's own keys (`Object.keys`); prazo read every
  // enumerable key (`for…in`), so a key inherited from the record's prototype went out as a header.
  // Expected: only the record's own headers on the wire.
  it("Was a defect: a header record's inherited keys are not sent, as undici does not send them", async () => {
    const server = await serve(echo);
    const c = client(server);
    const headers = Object.create({ 'x-inherited': 'leak' }) as Record<string, string>;
    headers['x-own'] = 'kept';
    const got = await settle(c.request('/', { headers }));
    expect(got.ok).toBe(true);
    const names = receivedPairs(got.body!).map(([name]) => name.toLowerCase());
    expect(names).toContain('x-own');
    expect(names).not.toContain('x-inherited');
  });

  // Was a defect (fixed): undici sends `a: ` for a null inside an array value; prazo sends the text "null"
  // (headers.ts: `String(item)`). Expected: never the text "null"/"undefined" on the wire.
  it('Was a defect: null or undefined inside an array value never goes out as the text "null" / "undefined"', async () => {
    const server = await serve(echo);
    const c = client(server);
    const got = await settle(c.request('/', { headers: { a: ['1', null, undefined] } as never }));
    expect(got.ok).toBe(true);
    const values = receivedPairs(got.body!).map(([, value]) => value);
    expect(values).not.toContain('null');
    expect(values).not.toContain('undefined');
  });

  // Was a defect (fixed) (SPEC D1, D5; docs/http.md "the deadline prazo computed (the earliest one known) is the
  // one that travels"): a caller that forwards an earlier `x-deadline-epoch-ms` (header propagation
  // from its own caller) has it replaced by prazo's later one: the next hop is told it has more time
  // than the caller has. headers.ts drops the owned names without reading them (route.ts callOn).
  // Expected: the header sent is never later than the caller's; actual: ~1.4 s later.
  it("Was a defect: a caller's earlier x-deadline-epoch-ms is never replaced by a later one", async () => {
    const server = await serve((req, res) => res.end(String(req.headers['x-deadline-epoch-ms'])));
    const c = client(server, { p99Ms: 1_000 });
    // Later than the 1 s p99 (D4 lets it through), earlier than the attempt's own ~1.4 s limit.
    const callers = Date.now() + 1_300;
    const got = await settle(c.request('/', { headers: { 'x-deadline-epoch-ms': String(callers) } }));
    expect(Number(got.body)).toBeLessThanOrEqual(callers);
    const agent = agentWith(interceptor({}));
    const passed = await settle(
      request(server.origin, {
        dispatcher: agent,
        headers: { 'x-deadline-epoch-ms': String(callers) },
        prazo: { deadline: 1_000 },
      } as never),
    );
    expect(Number(passed.body)).toBeLessThanOrEqual(callers);
  });
});

// ── deadlines and signals ───────────────────────────────────────────────────────────────────────

describe('http-api attacks: per-call deadlines and signals (SPEC D3, D4, D5)', () => {
  it('NaN, -1, Infinity, 1e20, a string, null: INVALID_OPTIONS; 0, 0.5 and p99 − 1 ms: DEADLINE_INSUFFICIENT; nothing sent', async () => {
    const server = await serve(echo);
    const c = client(server, { p99Ms: 50 });
    for (const deadline of [Number.NaN, -1, Number.POSITIVE_INFINITY, 1e20, '100', null]) {
      const got = await settle(c.request('/', { deadline: deadline as never }));
      expect(got.error).toBeInstanceOf(InvalidOptionsError);
      expect(got.error!.message).toMatch(/deadline/);
    }
    for (const deadline of [0, 0.5, 49, Deadline.after(-5)]) {
      const got = await settle(c.request('/', { deadline }));
      expect(got.error?.code).toBe('DEADLINE_INSUFFICIENT');
      expect(got.error!.neededMs).toBeGreaterThan(got.error!.remainingMs!);
    }
    expect(server.connections).toBe(0);
  });

  it('a Deadline of another clock, an endless one, a duck-typed one answering NaN: an answer or a typed refusal, never NaN on the wire, never a hang', async () => {
    const server = await serve((req, res) => res.end(String(req.headers['x-deadline-epoch-ms'])));
    const c = client(server, { p99Ms: 500 });
    const fake = new FakeClock();
    const nan = {
      remainingMs: () => Number.NaN,
      remainingMsAt: () => Number.NaN,
      epochMs: () => Number.NaN,
      min(this: unknown) {
        return this;
      },
      cap(this: unknown) {
        return this;
      },
      toHeaders: () => ({}),
    };
    const answers = await Promise.all(
      [Deadline.after(Number.POSITIVE_INFINITY), Deadline.after(1_000, { clock: fake }), nan].map(
        (deadline) => within(2_000, settle(c.request('/', { deadline: deadline as never }))),
      ),
    );
    const [endless, other, duck] = answers as Settled[];
    for (const answer of [endless!, other!]) {
      expect(answer.status).toBe(200);
      const sent = Number(answer.body);
      expect(Number.isFinite(sent)).toBe(true);
      expect(sent).toBeLessThanOrEqual(Date.now() + 1_000);
    }
    expect(duck!.error?.code).toBe('DEADLINE_INSUFFICIENT');
  });

  it('a body that trickles forever while the caller reads ends at the deadline, DEADLINE_EXCEEDED, its socket closed', async () => {
    const server = await serve((_req, res) => {
      res.writeHead(200);
      const timer = setInterval(() => res.write('a'), 20);
      res.on('close', () => clearInterval(timer));
    });
    const c = client(server, { p99Ms: 300 }); // body timeout 420 ms: only the deadline can end it
    const started = performance.now();
    const got = await within(3_000, settle(c.request('/', { deadline: 400 })));
    expect(got).not.toBe('pending');
    expect((got as Settled).error?.code).toBe('DEADLINE_EXCEEDED');
    expect(performance.now() - started).toBeLessThan(400 + 250);
    expect(await eventually(() => server.seen[0]!.socketClosed)).toBe(true);
  });

  it('signal: already aborted (any reason), aborted during the body, after the end; 200 calls on one signal leave no listener', async () => {
    const big = Buffer.alloc(8 * 1024 * 1024, 'q');
    const server = await serve((req, res) => (req.url === '/big' ? res.end(big) : res.end('ok')));
    const c = client(server, { p99Ms: 1_000, connections: 20 }); // generous: this test is not about timing
    const reasons: unknown[] = [new Error('pre'), 'a string', undefined];
    for (const reason of reasons) {
      const controller = new AbortController();
      controller.abort(reason);
      const got = await settle(c.request('/', { signal: controller.signal }));
      expect(got.ok).toBe(false);
      expect(got.error).toBe(controller.signal.reason);
    }
    expect(server.seen).toHaveLength(0);
    const during = new AbortController();
    const res = await c.request('/big', { signal: during.signal, deadline: 5_000 });
    let read = 0;
    const failure = await (async () => {
      try {
        for await (const chunk of res.body) {
          read += (chunk as Buffer).length;
          if (read > 1_000_000) during.abort(new Error('stop'));
        }
      } catch (error) {
        return error as Error;
      }
      return undefined;
    })();
    expect(failure?.message).toBe('stop');
    expect(read).toBeLessThan(big.length);
    expect(getEventListeners(during.signal, 'abort')).toHaveLength(0);
    const shared = new AbortController();
    const all = await Promise.all(
      Array.from({ length: 200 }, () => settle(c.request('/', { signal: shared.signal }))),
    );
    expect(all.filter((a) => a.ok).length).toBeGreaterThan(0);
    expect(getEventListeners(shared.signal, 'abort')).toHaveLength(0); // answered or failed, each let go
    shared.abort(new Error('late')); // after every end: nothing to hear it, nothing thrown
  });

  it('an abort during a Retry-After wait ends the call at once, with the reason', async () => {
    const server = await serve((_req, res) => {
      res.writeHead(503, { 'retry-after': '1' });
      res.end('x');
    });
    const c = client(server, { p99Ms: 300, attempts: 2 });
    const controller = new AbortController();
    setTimeout(() => controller.abort(new Error('gone')), 100);
    const got = await settle(c.request('/', { deadline: 3_000, signal: controller.signal }));
    expect(got.error?.message).toBe('gone');
    expect(got.ms).toBeLessThan(400);
    expect(server.seen).toHaveLength(1);
  });

  // Was a defect (fixed): an origin the interceptor does not manage, with under 1 ms left: the pass-through check
  // (interceptor.ts: `deadline.remainingMs() <= 0`) lets it through, and the executor's unmanaged plan
  // (p99 0) refuses it as DEADLINE_INSUFFICIENT "0 ms left, needs 0 ms (p99)": the error says it
  // needed no more than it had. Expected: DEADLINE_EXCEEDED (the time is gone), or an insufficient
  // error whose `neededMs` exceeds its `remainingMs`; actual: neededMs 0 < remainingMs 0.3.
  it('Was a defect: a pass-through call with under 1 ms left gets an error that agrees with itself', () => {
    const clock = new FakeClock();
    const prazo = interceptor({ clock });
    let sent = 0;
    const dispatch = prazo((() => {
      sent += 1;
      return true;
    }) as never);
    let error: Settled['error'];
    dispatch(
      {
        origin: 'http://passing.test',
        path: '/',
        method: 'GET',
        prazo: { deadline: Deadline.after(0.3, { clock }) },
      } as never,
      {
        onRequestStart() {},
        onResponseError(_c: unknown, e: Settled['error']) {
          error = e;
        },
      } as never,
    );
    expect(sent).toBe(0);
    expect(error).toBeDefined();
    if (error!.code === 'DEADLINE_INSUFFICIENT') expect(error!.neededMs).toBeGreaterThan(error!.remainingMs!);
    else expect(error!.code).toBe('DEADLINE_EXCEEDED');
  });
});

// ── bodies and retries ──────────────────────────────────────────────────────────────────────────

describe('http-api attacks: bodies under retries (SPEC R5)', () => {
  it('string, Buffer, Uint8Array, ArrayBuffer, DataView, Blob, FormData are sent again whole; Readable, async generator, web stream, array of chunks once', async () => {
    const bodies: string[] = [];
    const server = await serve((req, res, index) => {
      let body = '';
      req.on('data', (chunk) => {
        body += chunk;
      });
      req.on('end', () => {
        bodies.push(body);
        if (index % 2 === 0) {
          res.writeHead(503);
          res.end('busy');
        } else res.end('ok');
      });
    });
    const c = client(server, { p99Ms: 300, attempts: 3, throttle: false } as never);
    const form = new UndiciFormData();
    form.append('f', 'v');
    const again: Array<[string, unknown, string]> = [
      ['string', 'hello', 'hello'],
      ['Buffer', Buffer.from('buf'), 'buf'],
      ['Uint8Array', new Uint8Array([65, 66]), 'AB'],
      ['ArrayBuffer', new Uint8Array([67]).buffer, 'C'],
      ['DataView', new DataView(new Uint8Array([68]).buffer), 'D'],
      ['Blob', new Blob(['blob']), 'blob'],
      ['FormData', form, 'Content-Disposition: form-data; name="f"'],
    ];
    for (const [name, body, text] of again) {
      bodies.length = 0;
      server.seen.length = 0;
      const got = await settle(c.request('/', { method: 'PUT', body: body as never }));
      expect([name, got.status]).toEqual([name, 200]);
      expect(bodies).toHaveLength(2);
      for (const b of bodies) expect(b).toContain(text);
    }
    const gen = async function* () {
      yield 'a';
      yield 'b';
    };
    const web = new ReadableStream({
      start(controller) {
        controller.enqueue(new TextEncoder().encode('ws'));
        controller.close();
      },
    });
    const once: Array<[string, unknown]> = [
      ['Readable', Readable.from(['r1', 'r2'])],
      ['async generator', gen()],
      ['web stream', web],
      ['array of chunks', [Buffer.from('x'), Buffer.from('y')]],
    ];
    for (const [name, body] of once) {
      bodies.length = 0;
      server.seen.length = 0;
      const got = await settle(c.request('/', { method: 'PUT', body: body as never }));
      expect([name, got.status]).toEqual([name, 503]);
      expect(bodies).toHaveLength(1);
    }
  });

  it('a POST without a key reaches the server once; keyed by a header in odd case, retried carrying that same key', async () => {
    const keys: unknown[] = [];
    const server = await serve((req, res, index) => {
      keys.push(req.headers['idempotency-key']);
      req.resume();
      if (index < 2) {
        res.writeHead(503);
        res.end('busy');
      } else res.end('ok');
    });
    const c = client(server, { attempts: 3, throttle: false } as never);
    expect((await settle(c.request('/', { method: 'POST', body: 'x' }))).status).toBe(503);
    expect(keys).toEqual([undefined]);
    expect(
      (await settle(c.request('/', { method: 'POST', body: 'x', headers: [['IdEmPoTeNcY-KeY', 'order-7']] })))
        .status,
    ).toBe(200);
    expect(keys).toEqual([undefined, 'order-7', 'order-7']);
  });
});

// ── server answers ──────────────────────────────────────────────────────────────────────────────

describe('http-api attacks: what a server answers', () => {
  /** One 503 (or `status`) with `headers`, then 200s: how many requests one call made, and its answer. */
  async function onceThen(status: number, headers: Record<string, string>) {
    let first = true;
    const server = await serve((_req, res) => {
      if (first) {
        first = false;
        res.writeHead(status, headers);
        res.end('no');
      } else res.end('yes');
    });
    const c = client(server, { p99Ms: 200, attempts: 2, throttle: false } as never);
    const got = await settle(c.request('/', { deadline: 800 }));
    return { got, requests: server.seen.length };
  }

  it('Retry-After in every form: 0, a past date, garbage, negative, a fraction → retried; past the deadline (1 s, a future date, 40 digits) → the 503 at once (SPEC R3)', async () => {
    const retried = [
      '0',
      ' 0 ',
      new Date(Date.now() - 60_000).toUTCString(),
      'Thu, 01 Jan 1970 00:00:00 GMT',
    ];
    const backoff = ['-5', 'garbage', '1.5', 'Infinity', ''];
    const answered = ['1', new Date(Date.now() + 60_000).toUTCString(), '9'.repeat(40)];
    for (const value of [...retried, ...backoff]) {
      const { got, requests } = await onceThen(503, { 'retry-after': value });
      expect([value, got.status, requests]).toEqual([value, 200, 2]);
    }
    for (const value of answered) {
      const { got, requests } = await onceThen(503, { 'retry-after': value });
      expect([value, got.status, requests]).toEqual([value, 503, 1]);
      expect(got.ms).toBeLessThan(300);
    }
  });

  it('grpc-retry-pushback-ms: -1, garbage, empty, over 2^31 → no retry; 0 → at once; 200 → after 200 ms; past the deadline → the answer (SPEC X6)', async () => {
    for (const value of ['-1', 'x', '', '2147483648', '5000']) {
      const { got, requests } = await onceThen(503, { 'grpc-retry-pushback-ms': value });
      expect([value, got.status, requests]).toEqual([value, 503, 1]);
    }
    const now = await onceThen(503, { 'grpc-retry-pushback-ms': '0' });
    expect([now.got.status, now.requests]).toEqual([200, 2]);
    const later = await onceThen(503, { 'grpc-retry-pushback-ms': '200' });
    expect([later.got.status, later.requests]).toEqual([200, 2]);
    expect(later.got.ms).toBeGreaterThanOrEqual(190);
  });

  it('408, 429, 502, 504 are retried; 501, 505, 599 and 500 with a Retry-After are judged by their status (SPEC R2)', async () => {
    for (const status of [408, 429, 502, 504]) {
      const { got, requests } = await onceThen(status, {});
      expect([status, got.status, requests]).toEqual([status, 200, 2]);
    }
    for (const status of [501, 505, 599]) {
      const { got, requests } = await onceThen(status, {});
      expect([status, got.status, requests]).toEqual([status, status, 1]);
    }
    const five = await onceThen(500, { 'retry-after': '100' });
    expect([five.got.status, five.requests]).toEqual([200, 2]);
  });

  // Was a defect (fixed) (SPEC R3: "wait what the server says"): a delay-seconds of 80 digits is a valid
  // Retry-After (RFC 9110: 1*DIGIT) asking for the longest wait, yet it is retried at once, while the
  // same value in 40 digits returns the 503 at once. retry/retry-after.ts refuses values over 64
  // characters as malformed, and malformed means the client's own backoff. Expected: the 503 at once,
  // one request; actual: two requests, the second within milliseconds.
  it('Was a defect: an 80-digit Retry-After is not retried at once', async () => {
    const { got, requests } = await onceThen(503, { 'retry-after': '9'.repeat(80) });
    expect([got.status, requests]).toEqual([503, 1]);
  });

  it('malformed answers (not HTTP, a length that lies, a head over 16 kB, a 204 with a body): undici’s typed error at once, not a timeout', async () => {
    const { origin } = await rawServer((path) => {
      if (path === '/garbage') return 'NOT HTTP AT ALL\r\n\r\n';
      if (path === '/short') return 'HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\nhi';
      if (path === '/huge-head')
        return `HTTP/1.1 200 OK\r\nx: ${'a'.repeat(70_000)}\r\ncontent-length: 2\r\n\r\nhi`;
      if (path === '/204') return 'HTTP/1.1 204 No Content\r\ncontent-length: 2\r\n\r\nhi';
      return 'HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nhi';
    });
    const c = client({ origin }, { p99Ms: 300 });
    const bareAgent = agentWith();
    for (const path of ['/garbage', '/short', '/huge-head', '/204']) {
      // What the installed undici itself does with it (undici 8 reads a 204's stray body as nothing).
      const bare = await settle(request(`${origin}${path}`, { dispatcher: bareAgent }));
      const got = await settle(c.request(path));
      expect(got.ok, path).toBe(bare.ok);
      if (got.ok) continue;
      expect(typed(got.error) || got.error!.name === 'HTTPParserError').toBe(true);
      expect(got.error!.code).not.toBe('RESPONSE_TIMEOUT');
      expect(got.ms).toBeLessThan(200);
    }
  });

  it('a status outside 200-599 and 1xx before the final answer reach request() as undici gives them', async () => {
    const { origin } = await rawServer((path) => {
      if (path === '/699') return 'HTTP/1.1 699 Odd\r\ncontent-length: 2\r\n\r\nhi';
      if (path === '/103')
        return 'HTTP/1.1 103 Early Hints\r\nlink: </a>\r\n\r\nHTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nhi';
      return 'HTTP/1.1 102 Processing\r\n\r\nHTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nhi';
    });
    const c = client({ origin });
    expect(await settle(c.request('/699'))).toMatchObject({ status: 699, body: 'hi' });
    expect(await settle(c.request('/103'))).toMatchObject({ status: 200, body: 'hi' });
    expect(await settle(c.request('/102'))).toMatchObject({ status: 200, body: 'hi' });
  });

  // Was a defect (fixed): `onInfo` is one of undici's request options prazo hands on "as given" (request.ts
  // UNDICI_REQUEST_OPTIONS, docs/http.md: "each informational (1xx) response"), and bare undici calls
  // it with the 103. Through prazo it is never called: an attempt drops every status below 200
  // (attempt.ts onResponseStart) and the call forwards nothing (call.ts). Expected [103]; actual [].
  it("Was a defect: a 1xx reaches the caller's onInfo, through request() and the interceptor, as on bare undici", async () => {
    const { origin } = await rawServer(
      () => 'HTTP/1.1 103 Early Hints\r\nlink: </a>\r\n\r\nHTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nhi',
    );
    const bare: number[] = [];
    const bareAgent = agentWith();
    await settle(request(origin, { dispatcher: bareAgent, onInfo: (i) => bare.push(i.statusCode) }));
    expect(bare).toEqual([103]); // undici's own behaviour: the test can fail on prazo only
    const viaClient: number[] = [];
    const c = client({ origin });
    await settle(
      c.request('/', { onInfo: (i: { statusCode: number }) => viaClient.push(i.statusCode) } as never),
    );
    const viaInterceptor: number[] = [];
    const agent = agentWith(interceptor({ dependencies: { [origin]: { name: 'early', p99Ms: 100 } } }));
    await settle(request(origin, { dispatcher: agent, onInfo: (i) => viaInterceptor.push(i.statusCode) }));
    expect({ viaClient, viaInterceptor }).toEqual({ viaClient: [103], viaInterceptor: [103] });
  });

  // Was a defect (fixed): fetch() of a status WHATWG's Response constructor refuses (outside 200-599) rejects with
  // "RangeError: init["status"] must be in the range of 200 to 599" (fetch.ts toResponse: `new
  // Response(web, { status })`), no code. Node's global fetch resolves with status 699. Expected: a
  // Response with status 699, or a prazo typed error; actual: an untyped RangeError.
  it('Was a defect: fetch() of a 699 answers (as Node’s fetch does) or fails typed, not with a RangeError', async () => {
    const server = await serve((_req, res) => {
      res.writeHead(699);
      res.end('odd');
    });
    const c = client(server);
    let outcome: unknown;
    try {
      const res = await c.fetch('/');
      outcome = [res.status, await res.text()];
    } catch (error) {
      outcome = error;
    }
    if (Array.isArray(outcome)) expect(outcome).toEqual([699, 'odd']);
    else expect(isPrazoError(outcome), String(outcome)).toBe(true);
  });

  it('a retried 503 with an 8 MB body: drained up to the limit then its socket destroyed; the retry answers', async () => {
    const big = Buffer.alloc(8 * 1024 * 1024, 'z');
    const server = await serve((_req, res, index) => {
      if (index === 0) {
        res.writeHead(503, { 'content-length': String(big.length) });
        res.end(big);
      } else res.end('fine');
    });
    const c = client(server, { p99Ms: 300, attempts: 2 });
    const got = await settle(c.request('/', { deadline: 2_000 }));
    expect([got.status, got.body]).toEqual([200, 'fine']);
    expect(await eventually(() => server.seen[0]!.socketClosed)).toBe(true);
  });

  // Was a defect (fixed): a retried 503 is drained so its connection can be reused, bounded in bytes (128 kB) but
  // not in time: a body that trickles a byte every 10 ms (never silent for a body timeout) keeps
  // being drained, the socket held until the call's deadline although the call answered long before
  // (attempt.ts release(): each chunk is progress, the attempt's only other end is the deadline). Under an endless deadline the socket is held
  // for ever and `close()` never finishes. Expected: close() finishes within 3 s, the socket closed;
  // actual: close() still pending.
  it('Was a defect: a drained 503 whose body trickles does not hold its socket (or close()) past the answer', async () => {
    const server = await serve(faults.sequence(faults.trickling(503), faults.ok('fine')));
    const c = client(server, { p99Ms: 300, attempts: 2 }); // body timeout 420 ms: never reached by the trickle
    const got = await settle(c.request('/', { deadline: Deadline.after(Number.POSITIVE_INFINITY) }));
    expect(got.status).toBe(200);
    const closed = await within(
      3_000,
      c.close().then(() => 'closed'),
    );
    expect(closed).toBe('closed');
    expect(await eventually(() => server.seen[0]!.socketClosed)).toBe(true);
  });

  it('101 upgrade and CONNECT through the interceptor: the socket reaches the caller and outlives the attempt timeout', async () => {
    const server = http.createServer((_req, res) => res.end('plain'));
    const sockets = new Set<net.Socket>();
    server.on('connection', (socket) => {
      sockets.add(socket);
      socket.on('close', () => sockets.delete(socket));
    });
    server.on('upgrade', (_req, socket) => {
      socket.write('HTTP/1.1 101 Switching Protocols\r\nupgrade: echo\r\nconnection: upgrade\r\n\r\n');
      socket.on('data', (d: Buffer) => socket.write(d));
    });
    server.on('connect', (_req, socket) => {
      socket.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      socket.on('data', (d: Buffer) => socket.write(d));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const origin = `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`;
    cleanup.push(
      () => new Promise((resolve) => server.close(resolve)),
      () => {
        for (const socket of sockets) socket.destroy();
      },
    );
    const agent = agentWith(interceptor({ dependencies: { [origin]: { name: 'tunnel', p99Ms: 200 } } }));
    const echoOnce = (socket: NodeJS.ReadWriteStream, text: string) =>
      within(
        1_000,
        new Promise<string>((resolve) => {
          socket.once('data', (d: Buffer) => resolve(String(d)));
          socket.write(text);
        }),
      );
    const up = await undiciUpgrade(origin, { dispatcher: agent, protocol: 'echo' });
    expect(up.headers.upgrade).toBe('echo');
    await sleep(350); // past the attempt timeout ceil(200 × 1.4) = 280 ms
    expect(await echoOnce(up.socket, 'ping')).toBe('ping');
    up.socket.destroy();
    const tunnel = await undiciConnect(origin, { dispatcher: agent });
    expect(tunnel.statusCode).toBe(200);
    await sleep(350);
    expect(await echoOnce(tunnel.socket, 'pong')).toBe('pong');
    tunnel.socket.destroy();
  });

  it('a redirect loop (undici redirect above or below prazo, managed or passing through) ends by the deadline', async () => {
    const server = await serve((req, res) => {
      res.writeHead(302, { location: `/r${Number(req.url!.slice(2) || 0) + 1}` });
      res.end();
    });
    for (const managed of [true, false]) {
      const prazo = interceptor({
        dependencies: managed ? { [server.origin]: { name: 'loop', p99Ms: 100 } } : {},
      });
      const redirect = interceptors.redirect({ maxRedirections: 1_000_000 });
      for (const stack of [
        [prazo, redirect],
        [redirect, prazo],
      ]) {
        const agent = agentWith(...stack);
        const got = await within(
          2_000,
          settle(request(`${server.origin}/r0`, { dispatcher: agent, prazo: { deadline: 300 } } as never)),
        );
        const where = `${managed ? 'managed' : 'passed through'}, redirect ${stack[0] === prazo ? 'above' : 'below'}`;
        expect(got, where).not.toBe('pending');
        const { ok, error, ms } = got as Settled;
        expect([where, ok, isPrazoError(error) ? 'typed' : String(error)]).toEqual([where, false, 'typed']);
        expect(ms, where).toBeLessThan(300 + 300);
      }
    }
  });
});

// ── lifecycle ───────────────────────────────────────────────────────────────────────────────────

describe('http-api attacks: close() and destroy() against calls in flight and after', () => {
  it('request() after close() or destroy() rejects at once; close() and destroy() may be called together and twice', async () => {
    const server = await serve(echo);
    for (const end of ['close', 'destroy'] as const) {
      const c = client(server);
      await c[end]();
      const got = await within(1_000, settle(c.request('/')));
      expect(got).not.toBe('pending');
      expect((got as Settled).ok).toBe(false);
      expect(typed((got as Settled).error)).toBe(true);
    }
    const c = client(server);
    expect(await within(2_000, Promise.all([c.close(), c.close(), c.destroy(), c.destroy()]))).not.toBe(
      'pending',
    );
    expect(server.seen).toHaveLength(0);
  });

  it('close() during calls in flight and queued behind one connection finishes; destroy() ends them at once; no socket left', async () => {
    const server = await serve((req, res) => {
      if (req.url === '/slow') setTimeout(() => res.end('slow'), 300);
      // '/silent' never answers
    });
    const graceful = client(server, { p99Ms: 100, connections: 1 });
    const calls = ['/slow', '/slow', '/silent'].map((path) =>
      within(3_000, settle(graceful.request(path, { deadline: 2_000 }))),
    );
    await sleep(50);
    expect(
      await within(
        3_000,
        graceful.close().then(() => 'closed'),
      ),
    ).toBe('closed');
    for (const call of await Promise.all(calls)) expect(call).not.toBe('pending');
    const cut = client(server, { p99Ms: 100, connections: 1 });
    const cutCalls = ['/slow', '/silent'].map((path) => settle(cut.request(path, { deadline: 2_000 })));
    await sleep(50);
    const started = performance.now();
    await cut.destroy();
    for (const call of await Promise.all(cutCalls)) expect(call.ok).toBe(false);
    expect(performance.now() - started).toBeLessThan(200);
    expect(await eventually(() => server.open === 0)).toBe(true);
  });
});

// ── callbacks that throw ────────────────────────────────────────────────────────────────────────

describe('http-api attacks: user callbacks that throw', () => {
  it('dependencies() that throws: INVALID_OPTIONS naming the origin, asked once; garbage: INVALID_OPTIONS; null: passes through', async () => {
    const server = await serve((_req, res) => res.end('ok'));
    let asked = 0;
    const throwing = agentWith(
      interceptor({
        dependencies: () => {
          asked += 1;
          throw new Error('nope');
        },
      }),
    );
    for (let i = 0; i < 2; i += 1) {
      const got = await settle(request(server.origin, { dispatcher: throwing }));
      expect(got.error).toBeInstanceOf(InvalidOptionsError);
      expect(got.error!.message).toContain(server.origin);
      expect(got.error!.message).toContain('nope');
    }
    expect(asked).toBe(1);
    const garbage = agentWith(interceptor({ dependencies: () => 'garbage' as never }));
    expect((await settle(request(server.origin, { dispatcher: garbage }))).error).toBeInstanceOf(
      InvalidOptionsError,
    );
    const none = agentWith(interceptor({ dependencies: () => null as never }));
    expect((await settle(request(server.origin, { dispatcher: none }))).body).toBe('ok');
    expect(server.seen).toHaveLength(1);
  });

  it('a lookup that throws, answers twice, gives a bad address or an error: the call rejects, nothing uncaught', async () => {
    const server = await serve((_req, res) => res.end('ok'));
    const origin = `http://prazo-lookup.test:${server.port}`;
    const address = (options: { all?: boolean }, ip: string) =>
      options?.all ? [{ address: ip, family: 4 }] : ip;
    const lookups = [
      () => {
        throw new Error('lookup boom');
      },
      (_h: string, o: { all?: boolean }, cb: (...a: unknown[]) => void) => {
        cb(null, address(o, '127.0.0.1'), 4);
        cb(null, address(o, '127.0.0.1'), 4);
      },
      (_h: string, o: { all?: boolean }, cb: (...a: unknown[]) => void) =>
        cb(null, address(o, 'not-an-ip'), 4),
      (_h: string, _o: unknown, cb: (...a: unknown[]) => void) =>
        cb(Object.assign(new Error('no such name'), { code: 'ENOTFOUND' })),
    ];
    for (const lookup of lookups) {
      const c = client({ origin }, { lookup: lookup as never });
      const got = await within(2_000, settle(c.request('/')));
      expect(got).not.toBe('pending');
      expect((got as Settled).ok).toBe(false);
    }
    const failing = client({ origin }, { lookup: lookups[3] as never });
    await expect(failing.fetch('/')).rejects.toMatchObject({ code: 'CONNECT_FAILED' });
  });

  it('an event listener that throws: the call answers, a warning is emitted', async () => {
    const server = await serve((_req, res) => res.end('ok'));
    const c = client(server);
    const warnings: string[] = [];
    const onWarning = (w: Error) => warnings.push(w.message);
    process.on('warning', onWarning);
    cleanup.push(() => process.off('warning', onWarning));
    c.on(() => {
      throw new Error('listener boom');
    });
    expect((await settle(c.request('/'))).body).toBe('ok');
    await sleep(10);
    expect(warnings.some((w) => w.includes('listener boom'))).toBe(true);
  });

  /** A current-API handler that throws in `which`, recording what it hears. */
  function throwingHandler(which: string) {
    const heard: string[] = [];
    const handler = {
      onRequestStart() {
        heard.push('start');
        if (which === 'start') throw new Error('start boom');
      },
      onResponseStart(_c: unknown, status: number) {
        heard.push(`head ${status}`);
        if (which === 'head') throw new Error('head boom');
      },
      onResponseData() {
        heard.push('data');
        if (which === 'data') throw new Error('data boom');
      },
      onResponseEnd() {
        heard.push('end');
        if (which === 'end') throw new Error('end boom');
      },
      onResponseError(_c: unknown, error: Error) {
        heard.push(`error ${error.message}`);
        if (which === 'error') throw new Error('error boom');
      },
    };
    return { heard, handler };
  }

  it('a handler throwing in onResponseStart, onResponseData, onResponseEnd or onResponseError: as on a bare Agent, nothing uncaught', async () => {
    const server = await serve((req, res) => (req.url === '/silent' ? undefined : res.end('ok')));
    const agent = agentWith(
      interceptor({ dependencies: { [server.origin]: { name: 'thrower', p99Ms: 200 } } }),
    );
    for (const which of ['head', 'data', 'end']) {
      const { heard, handler } = throwingHandler(which);
      agent.dispatch({ origin: server.origin, path: '/', method: 'GET' }, handler as never);
      expect(await eventually(() => heard.at(-1)?.startsWith('error') === true)).toBe(true);
      expect(heard.at(-1)).toBe(`error ${which} boom`);
    }
    const { heard, handler } = throwingHandler('error');
    agent.dispatch({ origin: server.origin, path: '/silent', method: 'GET' }, handler as never);
    expect(await eventually(() => heard.length > 1)).toBe(true);
    expect(heard.at(-1)).toMatch(/^error response timeout/);
    await sleep(20); // a throw out of onResponseError would surface now, as an uncaught error
  });

  // Was a defect (fixed): undici reports a handler's throw in onRequestStart through its onResponseError, and
  // `dispatch` returns normally (bare Agent: ['start', 'error start boom']). Through prazo's
  // interceptor the error escapes `dispatch` synchronously (call.ts run(): onRequestStart is called
  // unguarded) and the handler never hears an end: inside a callback (a redirect, a retry above
  // prazo) that throw is uncaught. Expected: no throw, ['start', 'error start boom']; actual: a throw.
  it('Was a defect: a handler throwing in onRequestStart hears it through onResponseError; dispatch does not throw', async () => {
    const server = await serve((_req, res) => res.end('ok'));
    const bare = agentWith();
    const first = throwingHandler('start');
    expect(() =>
      bare.dispatch({ origin: server.origin, path: '/', method: 'GET' }, first.handler as never),
    ).not.toThrow();
    expect(await eventually(() => first.heard.length > 1)).toBe(true);
    expect(first.heard).toEqual(['start', 'error start boom']); // undici's own behaviour
    const agent = agentWith(
      interceptor({ dependencies: { [server.origin]: { name: 'thrower', p99Ms: 50 } } }),
    );
    const { heard, handler } = throwingHandler('start');
    expect(() =>
      agent.dispatch({ origin: server.origin, path: '/', method: 'GET' }, handler as never),
    ).not.toThrow();
    await eventually(() => heard.length > 1, 500);
    expect(heard).toEqual(['start', 'error start boom']);
  });
});

// ── options misuse ──────────────────────────────────────────────────────────────────────────────

describe('http-api attacks: misused options', () => {
  it('`prazo` that is null, an array, a string, a number, or holds a bad value: INVALID_OPTIONS before any socket', async () => {
    const server = await serve((_req, res) => res.end('ok'));
    const agent = agentWith(interceptor({ dependencies: { [server.origin]: { name: 'opts', p99Ms: 50 } } }));
    const bad: unknown[] = [
      null,
      [],
      'x',
      5,
      { idempotencyKey: 'a b' },
      { idempotencyKey: 'x'.repeat(256) },
      { responseTimeoutMs: 0 },
      { bodyTimeoutMs: 2 ** 31 },
      { idempotent: 'yes' },
      { deadline: '100' },
      { retryResponseTimeout: 1 },
    ];
    for (const prazo of bad) {
      const got = await settle(request(server.origin, { dispatcher: agent, prazo } as never));
      expect([JSON.stringify(prazo), got.error instanceof InvalidOptionsError]).toEqual([
        JSON.stringify(prazo),
        true,
      ]);
    }
    expect(server.connections).toBe(0);
  });

  it('request() with a path that is not one: a foreign URL, a non-string, a CRLF, a space: refused, nothing sent', async () => {
    const server = await serve(echo);
    const c = client(server);
    for (const path of ['http://other.test/x', `${server.origin}:80/x`, 5, '/a\r\nx: y', '/a b']) {
      const got = await settle(c.request(path as never));
      expect(got.ok).toBe(false);
      expect(typed(got.error)).toBe(true);
    }
    expect(server.seen).toHaveLength(0);
    for (const [path, url] of [
      ['', '/'],
      ['x', '/x'],
      ['?q=1', '/?q=1'],
      [`${server.origin.toUpperCase()}/up`, '/up'],
    ]) {
      const got = await settle(c.request(path!));
      expect((JSON.parse(got.body!) as { url: string }).url).toBe(url);
    }
  });

  it('createHttpClient origin spellings: a trailing slash, upper case, a URL object, localhost, IPv6 [::1]: one origin, answered', async () => {
    const server = await serve((req, res) => res.end(String(req.url)));
    for (const origin of [
      `${server.origin}/`,
      server.origin.toUpperCase(),
      new URL(server.origin),
      `http://localhost:${server.port}`,
    ]) {
      const c = client({ origin: origin as never });
      expect(c.origin).toMatch(/^http:\/\/(127\.0\.0\.1|localhost):\d+$/);
      expect((await settle(c.request('/z'))).body).toBe('/z');
    }
    for (const origin of [
      `${server.origin}/p`,
      `${server.origin}?x`,
      `${server.origin}#f`,
      'ftp://127.0.0.1',
      'not a url',
    ])
      expect(() => createHttpClient({ name: 'bad', origin, p99Ms: 100 })).toThrow(InvalidOptionsError);
    let six: TestServer | undefined;
    try {
      six = await startServer((_req, res) => res.end('v6'), '::1');
    } catch {
      return; // no IPv6 loopback here
    }
    cleanup.push(() => six!.close());
    expect((await settle(client(six).request('/'))).body).toBe('v6');
    const prazo = interceptor({ dependencies: { [six.origin]: { name: 'six', p99Ms: 100 } } });
    let events = 0;
    prazo.on(() => {
      events += 1;
    });
    expect((await settle(request(six.origin, { dispatcher: agentWith(prazo) }))).body).toBe('v6');
    expect(events).toBeGreaterThan(0); // managed, not passed through
  });

  // Was a defect (fixed): createHttpClient takes an `origin` with credentials (`http://user:secret@host:port`) and
  // silently drops them: requests go out without them (validate.ts readOrigin checks path, query and
  // fragment only). The same origin is refused in `origins` and as an interceptor key
  // (normalizeOrigin: "must be an http(s) origin"). Expected: INVALID_OPTIONS; actual: accepted.
  it('Was a defect: an origin carrying credentials is refused by createHttpClient, as by `origins` and the interceptor', async () => {
    const server = await serve((req, res) => res.end(String(req.headers.authorization)));
    const withCredentials = `http://user:secret@127.0.0.1:${server.port}`;
    expect(() => interceptor({ dependencies: { [withCredentials]: { name: 'a', p99Ms: 100 } } })).toThrow(
      InvalidOptionsError,
    );
    expect(() =>
      createHttpClient({ name: 'b', origins: [withCredentials, server.origin], p99Ms: 100 }),
    ).toThrow(InvalidOptionsError);
    expect(() => {
      const made = createHttpClient({ name: 'c', origin: withCredentials, p99Ms: 100 });
      cleanup.push(() => made.destroy());
    }).toThrow(InvalidOptionsError);
  });

  // Was a defect (fixed): two `dependencies` keys that name one origin ('http://x.test:80' and 'HTTP://X.TEST') are
  // both taken: the second silently replaces the first for every call, and `dependencies()` reports
  // two dependencies (two names, two budgets for prazo/otel) of which one is never called
  // (interceptor.ts resolveInterceptor: `table.configure` overwrites without a word). createHttpClient
  // refuses a repeated origin in `origins` ("repeats"). Expected: INVALID_OPTIONS; actual: accepted.
  it('Was a defect: two dependency keys naming the same origin are refused', () => {
    expect(() =>
      interceptor({
        dependencies: {
          'http://x.test:80': { name: 'first', p99Ms: 10 },
          'HTTP://X.TEST': { name: 'second', p99Ms: 10 },
        },
      }),
    ).toThrow(InvalidOptionsError);
  });

  // Was a defect (fixed): fetch() is "fetch()-compatible" (docs/http.md) and WHATWG fetch takes `null` as its init
  // (Node: `fetch(url, null)` answers); prazo's refuses it with INVALID_OPTIONS (fetch.ts: the init
  // defaults only when undefined, then `checkCallOptions` refuses null). Expected: the answer.
  it('Was a defect: fetch(url, null) answers, as WHATWG fetch does', async () => {
    const server = await serve((_req, res) => res.end('ok'));
    const c = client(server);
    const res = await c.fetch('/', null as never);
    expect([res.status, await res.text()]).toEqual([200, 'ok']);
  });

  // Was a defect (fixed): on an origin the interceptor does not manage, `prazo: { idempotencyKey }` is read (and
  // checked) but silently dropped: the request goes out without the key (interceptor.ts passes only
  // `{ continued: deadline }` to callOn, or the dispatch untouched without a deadline). The option
  // is "the idempotency key this request carries end to end" (request.ts, SPEC R5). Expected: the
  // server sees `idempotency-key: order-7`; actual: no such header.
  it('Was a defect: a per-call idempotencyKey travels on an origin passed through', async () => {
    const server = await serve((req, res) => res.end(String(req.headers['idempotency-key'])));
    const agent = agentWith(interceptor({}));
    for (const prazo of [{ idempotencyKey: 'order-7' }, { idempotencyKey: 'order-7', deadline: 1_000 }]) {
      const got = await settle(
        request(server.origin, { dispatcher: agent, method: 'POST', body: 'x', prazo } as never),
      );
      expect(got.body).toBe('order-7');
    }
  });

  // Was a defect (fixed): on an origin the interceptor does not manage, `prazo: { responseTimeoutMs: 100 }` is
  // accepted and ignored: against a silent server the call waits for undici's own 300 s headers
  // timeout (interceptor.ts: the pass-through branch drops every per-call option but the deadline).
  // Expected: RESPONSE_TIMEOUT near 100 ms (or a typed refusal of the option); actual: still pending
  // after 1.5 s.
  it('Was a defect: a per-call responseTimeoutMs bounds a call to an origin passed through', async () => {
    const server = await serve(() => {});
    const agent = agentWith(interceptor({}));
    const got = await within(
      1_500,
      settle(request(server.origin, { dispatcher: agent, prazo: { responseTimeoutMs: 100 } } as never)),
    );
    expect(got).not.toBe('pending');
    expect((got as Settled).ok).toBe(false);
  });
});

// ── many origins ────────────────────────────────────────────────────────────────────────────────

describe('http-api attacks: origins through the interceptor', () => {
  /** A dispatcher below prazo answering every request at once (200, no body), no socket. */
  const instant = ((_opts: unknown, handler: Dispatcher.DispatchHandler) => {
    const controller = { abort() {}, pause() {}, resume() {}, aborted: false, paused: false, reason: null };
    queueMicrotask(() => {
      handler.onRequestStart?.(controller as never, {});
      handler.onResponseStart?.(controller as never, 200, {}, 'OK');
      handler.onResponseEnd?.(controller as never, {});
    });
    return true;
  }) as Dispatcher['dispatch'];

  function call(dispatch: Dispatcher['dispatch'], options: Record<string, unknown>): Promise<string> {
    return new Promise((resolve) => {
      dispatch(
        { path: '/', method: 'GET', ...options } as never,
        {
          onRequestStart() {},
          onResponseStart() {},
          onResponseData() {},
          onResponseEnd: () => resolve('end'),
          onResponseError: (_c: unknown, e: Error & { code?: string }) =>
            resolve(`error ${e.code ?? e.message}`),
        } as never,
      );
    });
  }

  it('6000 distinct origins from a dependencies function: at most 1024 remembered, the heap flat from 3000 to 6000', async () => {
    v8.setFlagsFromString('--expose-gc');
    const gc = vm.runInNewContext('gc') as () => void;
    const heap = async (): Promise<number> => {
      await new Promise((resolve) => setImmediate(resolve)); // WeakRefs made this turn are kept until it ends
      gc();
      return process.memoryUsage().heapUsed;
    };
    let asked = 0;
    const prazo = interceptor({
      dependencies: () => {
        asked += 1;
        return { name: 'many', p99Ms: 1, hedge: true };
      },
    });
    prazo.on(() => {});
    const dispatch = prazo(instant);
    const run = async (from: number, to: number) => {
      for (let i = from; i < to; i += 1)
        expect(await call(dispatch, { origin: `http://o${i}.test:8080` })).toBe('end');
    };
    await run(0, 3_000);
    const at3000 = await heap();
    await run(3_000, 6_000);
    const at6000 = await heap();
    expect(asked).toBe(6_000);
    expect(prazo.dependencies().length).toBeLessThanOrEqual(1_024);
    expect(at6000 - at3000).toBeLessThan(4 * 1024 * 1024);
  });

  it('one origin however it is spelt (case, default port, a URL object, a trailing slash, IPv6): one dependency, one answer from the function', async () => {
    let asked = 0;
    const prazo = interceptor({
      dependencies: () => {
        asked += 1;
        return { name: 'spelt', p99Ms: 1 };
      },
    });
    const dispatch = prazo(instant);
    for (const origin of [
      'http://inventory.test',
      'HTTP://Inventory.TEST:80',
      new URL('http://inventory.test:80/'),
    ])
      expect(await call(dispatch, { origin })).toBe('end');
    expect(asked).toBe(1);
    for (const origin of ['http://[::1]:8080', 'http://[0:0:0:0:0:0:0:1]:8080'])
      expect(await call(dispatch, { origin })).toBe('end');
    expect(asked).toBe(2);
    expect(prazo.dependencies().map((d) => d.origin)).toEqual(['http://inventory.test', 'http://[::1]:8080']);
    const configured = interceptor({
      dependencies: { 'HTTP://Inventory.TEST:80/': { name: 'cfg', p99Ms: 1 } },
    });
    expect(configured.dependency('http://inventory.test')?.name).toBe('cfg');
    for (const key of [
      'http://x.test/path',
      'http://user@x.test',
      'ftp://x.test',
      'x.test:80',
      '',
      'http://x.test?q',
      'http://x.test:99999',
    ])
      expect(() => interceptor({ dependencies: { [key]: { name: 'bad', p99Ms: 1 } } })).toThrow(
        InvalidOptionsError,
      );
  });
});
