import fc from 'fast-check';
import { Agent, type Dispatcher, request } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { runWithDeadline } from '../deadline/ambient.js';
import { Deadline } from '../deadline/deadline.js';
import { createHttpClient, type HttpClient } from './client.js';
import { appendCallerHeaders, ownedDeadlineNames } from './headers.js';
import { interceptor } from './interceptor.js';
import type { HttpClientOptions } from './options.js';
import { startServer, type TestServer } from './servers.test-helpers.js';

const DROPPED = ownedDeadlineNames({});
const KEY = 'idempotency-key';
const EPOCH = 'x-deadline-epoch-ms';

/** The flat headers `headers` become, or what appending them threw. */
function append(headers: unknown, dropped = DROPPED, epoch: string | undefined = EPOCH) {
  const out: string[] = [];
  const found = appendCallerHeaders(out, headers as never, dropped, KEY, epoch);
  return { out, ...found };
}

describe('outgoing headers', () => {
  it('owns the configured deadline headers (SPEC D1, D8)', () => {
    expect(DROPPED).toEqual([EPOCH]);
    expect(ownedDeadlineNames({ epochMs: false, grpcTimeout: true, envoy: true })).toEqual([
      'grpc-timeout',
      'x-envoy-expected-rq-timeout-ms',
    ]);
  });

  it('accepts every shape undici accepts, takes a caller deadline header out and reads it, takes the key out', () => {
    const shapes = [
      { a: '1', 'X-Deadline-Epoch-Ms': '5', 'Idempotency-Key': 'k1', skip: undefined },
      ['a', '1', 'x-deadline-epoch-ms', '5', 'idempotency-key', 'k1'],
      [
        ['a', '1'],
        ['x-deadline-epoch-ms', '5'],
        ['idempotency-key', 'k1'],
      ],
      new Map([
        ['a', '1'],
        ['x-deadline-epoch-ms', '5'],
        ['idempotency-key', 'k1'],
      ]),
      new Headers({ a: '1', 'x-deadline-epoch-ms': '5', 'idempotency-key': 'k1' }),
    ];
    for (const shape of shapes) {
      const got = append(shape);
      expect(got.key).toBe('k1');
      expect(got.epochMs).toBe(5);
      expect(got.relativeMs).toBe(Number.POSITIVE_INFINITY);
      expect(got.out.map((x) => x.toLowerCase())).toEqual(['a', '1']);
    }
  });

  it('repeats multi-valued headers', () => {
    expect(append({ accept: ['a', 'b'] }).out).toEqual(['accept', 'a', 'accept', 'b']);
  });

  it('keeps every header but the owned ones, as flat pairs (property)', () => {
    const name = fc.stringMatching(/^[a-z][a-z0-9-]{0,15}$/);
    fc.assert(
      fc.property(fc.dictionary(name, fc.string({ maxLength: 20 })), (record) => {
        const { out } = append(record);
        expect(out.length % 2).toBe(0);
        const owned = [EPOCH, KEY];
        const kept = Object.entries(record).filter(([k]) => !owned.includes(k));
        expect(out).toEqual(kept.flat());
      }),
    );
  });

  it('ignores null and undefined headers', () => {
    for (const none of [null, undefined]) {
      const got = append(none);
      expect(got.out).toEqual([]);
      expect(got.key).toBeUndefined();
      expect(got.epochMs).toBe(Number.POSITIVE_INFINITY);
    }
  });

  it('refuses what undici refuses, with its typed InvalidArgumentError: an object value, headers that hold no headers, a list entry that is no pair', () => {
    const refused: Array<[unknown, RegExp]> = [
      [{ a: { x: 1 } }, /invalid a header/],
      [{ a: ['1', { x: 1 }] }, /invalid a header/],
      [{ a: ['1', ['2']] }, /invalid a header/],
      [{ a: Symbol('s') }, /invalid a header/],
      [{ 'idempotency-key': { x: 1 } }, /invalid idempotency-key header/],
      [{ 'x-deadline-epoch-ms': new Date() }, /invalid x-deadline-epoch-ms header/],
      [[['a', { toString: () => 'x' }]], /invalid a header/],
      ['authorization: secret', /headers must be an object or an array/],
      [5, /headers must be an object or an array/],
      [true, /headers must be an object or an array/],
      [() => 'a', /headers must be an object or an array/],
      [[null], /key-value pair/],
      [['a', '1', 'dangling'], /headers array must be even/],
      [[['a', '1'], null], /key-value pair/],
      [[['a', '1', '2']], /key-value pair/],
      [new Map([[1, '1']]), /invalid header key/],
      [['a', '1', 2, '3'], /invalid header key/],
    ];
    for (const [headers, message] of refused) {
      let error: unknown;
      try {
        append(headers);
      } catch (caught) {
        error = caught;
      }
      expect(error, String(headers)).toBeInstanceOf(Error);
      expect((error as { code?: unknown }).code).toBe('UND_ERR_INVALID_ARG');
      expect((error as Error).message).toMatch(message);
    }
  });

  it('sends a null inside a list as an empty value, as undici does, and skips undefined; numbers, booleans and bigints as text', () => {
    expect(append({ a: ['1', null, undefined, 2, false, 3n] }).out).toEqual([
      'a',
      '1',
      'a',
      '',
      'a',
      '2',
      'a',
      'false',
      'a',
      '3',
    ]);
  });

  it('ignores a record key Object.prototype lends an iterator (undici: only an own or a class iterator)', () => {
    const proto = Object.prototype as { [Symbol.iterator]?: unknown };
    proto[Symbol.iterator] = function* () {
      yield ['evil', '1'];
    };
    try {
      expect(append({ a: '1' }).out).toEqual(['a', '1']);
    } finally {
      delete proto[Symbol.iterator];
    }
  });

  it("reads the earliest of the caller's owned deadline headers; garbage and names the route does not write are ignored (SPEC D1, D3, D8)", () => {
    expect(append({ [EPOCH]: ['9000', ' 7000 ', 'soon', '-1', '1e3', '8000'] }).epochMs).toBe(7000);
    expect(append({ [EPOCH]: 1_700_000_000_000 }).epochMs).toBe(1_700_000_000_000);
    expect(append({ [EPOCH]: '12345678901234567' }).epochMs).toBe(Number.POSITIVE_INFINITY);
    const relative = ownedDeadlineNames({ epochMs: false, grpcTimeout: true, envoy: true });
    const got = append(
      { 'grpc-timeout': ['2S', 'bad'], 'x-envoy-expected-rq-timeout-ms': '1500', [EPOCH]: '5' },
      relative,
      undefined,
    );
    expect(got.relativeMs).toBe(1500);
    expect(got.epochMs).toBe(Number.POSITIVE_INFINITY);
    // Not written by this route: it travels as the caller gave it, and is not read.
    expect(got.out).toEqual([EPOCH, '5']);
    expect(append({ 'grpc-timeout': '1m' }).relativeMs).toBe(Number.POSITIVE_INFINITY);
    // Envoy's 0 is its "no timeout" (deadline/parse.ts, the one rule): no limit, not an expired call.
    const envoy = ownedDeadlineNames({ envoy: true });
    expect(append({ 'x-envoy-expected-rq-timeout-ms': '0' }, envoy, undefined).relativeMs).toBe(
      Number.POSITIVE_INFINITY,
    );
    expect(append({ 'x-envoy-expected-rq-timeout-ms': ['0', '800'] }, envoy, undefined).relativeMs).toBe(800);
  });
});

describe("a caller's own deadline header on the wire (SPEC D1, D4, D5)", () => {
  const cleanup: Array<() => Promise<unknown>> = [];
  afterEach(async () => {
    for (const fn of cleanup.splice(0).reverse()) await fn();
  });

  /** A server answering with the deadline header it received. */
  async function serve(): Promise<TestServer> {
    const server = await startServer((req, res) => res.end(String(req.headers[EPOCH])));
    cleanup.push(() => server.close());
    return server;
  }

  function client(server: TestServer, options: Partial<HttpClientOptions> = {}): HttpClient {
    const made = createHttpClient({ name: 'inventory', origin: server.origin, p99Ms: 100, ...options });
    cleanup.push(() => made.destroy());
    return made;
  }

  async function sent(response: Promise<Dispatcher.ResponseData>): Promise<number> {
    return Number(await (await response).body.text());
  }

  it("an earlier one bounds the call and travels; a later one does not lengthen the call's own", async () => {
    const server = await serve();
    // An attempt's limit is about 1.45 s on a p99 of 1 s: the caller's, 1.3 s, is the earlier.
    const c = client(server, { p99Ms: 1_000 });
    // Each call its own caller's deadline, 1.3 s from its start (a loaded machine may be slow between).
    const shapes: Array<[string, (callers: string) => Promise<Dispatcher.ResponseData>]> = [
      ['a record', (callers) => c.request('/', { headers: { [EPOCH]: callers } })],
      // An explicit per-call deadline later than the caller's.
      [
        'flat, with a later deadline',
        (callers) => c.request('/', { headers: [EPOCH, callers], deadline: 30_000 }),
      ],
      // An ambient one later than the caller's.
      [
        'a Map, under a later ambient deadline',
        (callers) =>
          runWithDeadline(Deadline.after(30_000), () =>
            c.request('/', { headers: new Map([[EPOCH, callers]]) }),
          ),
      ],
    ];
    for (const [shape, call] of shapes) {
      const callers = Date.now() + 1_300;
      expect(await sent(call(String(callers))), shape).toBeLessThanOrEqual(callers);
    }
    // Later than prazo's: prazo's travels (the per-call one, the route's own).
    const later = Date.now() + 600_000;
    const own = await sent(c.request('/', { headers: { [EPOCH]: String(later) }, deadline: 1_200 }));
    expect(own).toBeLessThanOrEqual(Date.now() + 1_200);
    const byDefault = await sent(c.request('/', { headers: { [EPOCH]: String(later) } }));
    expect(byDefault).toBeLessThan(later - 60_000);
  });

  it("one already past or too close for the dependency's p99: the call fails before sending (D4), as if prazo's own", async () => {
    const server = await serve();
    const c = client(server, { p99Ms: 1_000 });
    for (const callers of [1, Date.now() - 10, Date.now() + 50]) {
      const error = await c.request('/', { headers: { [EPOCH]: String(callers) } }).catch((e: unknown) => e);
      expect((error as { code?: unknown }).code).toMatch(/^DEADLINE_(INSUFFICIENT|EXCEEDED)$/);
    }
    expect(server.seen).toHaveLength(0);
  });

  it('garbage is ignored: the call runs on its own deadline (SPEC D3)', async () => {
    const server = await serve();
    const c = client(server);
    for (const garbage of ['soon', '-5', '1e12', '', '0x10']) {
      const before = Date.now();
      const got = await sent(c.request('/', { headers: { [EPOCH]: garbage } }));
      expect(got).toBeGreaterThan(before + 100);
    }
  });

  it('an invalid per-call deadline is still the executor’s INVALID_OPTIONS', async () => {
    const server = await serve();
    const c = client(server);
    const callers = String(Date.now() + 800);
    const error: unknown = await c
      .request('/', { headers: { [EPOCH]: callers }, deadline: -1 })
      .catch((e: unknown) => e);
    expect((error as { code?: unknown }).code).toBe('INVALID_OPTIONS');
  });

  it('through the interceptor: a passed-through origin and a managed one', async () => {
    const server = await serve();
    const agent = new Agent().compose(
      interceptor({ dependencies: { [server.origin]: { name: 'inventory', p99Ms: 1_000 } } }),
    );
    const passing = new Agent().compose(interceptor({}));
    cleanup.push(
      () => agent.destroy(),
      () => passing.destroy(),
    );
    const callers = Date.now() + 1_300;
    for (const dispatcher of [agent, passing]) {
      const got = await sent(
        request(server.origin, {
          dispatcher,
          headers: { [EPOCH]: String(callers) },
          prazo: { deadline: 10_000 },
        } as never),
      );
      expect(got).toBeLessThanOrEqual(callers);
    }
  });

  it('a relative header the route writes (grpc-timeout), read the same way (SPEC D8)', async () => {
    const server = await startServer((req, res) => res.end(String(req.headers['grpc-timeout'])));
    cleanup.push(() => server.close());
    const c = client(server, { deadlineHeaders: { epochMs: false, grpcTimeout: true } });
    const got = await (await c.request('/', { headers: { 'grpc-timeout': '700m' } })).body.text();
    expect(got).toMatch(/^[0-9]+m$/);
    expect(Number.parseInt(got, 10)).toBeLessThanOrEqual(700);
  });
});
