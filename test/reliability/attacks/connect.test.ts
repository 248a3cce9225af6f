import { Code, ConnectError, createClient, type HandlerContext } from '@connectrpc/connect';
import { request } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { FakeClock } from '../../../src/clock/fake.js';
import { systemClock } from '../../../src/clock/system.js';
import { connectClientInterceptor } from '../../../src/connect/client.js';
import {
  type EchoClient,
  type EchoRequest,
  type EchoResponse,
  type EchoServer,
  EchoService,
  PROTOCOLS,
  startServer,
  transportFor,
} from '../../../src/connect/connect.test-helpers.js';
import { connectServerInterceptor } from '../../../src/connect/server.js';
import { currentDeadline, runWithDeadline } from '../../../src/deadline/ambient.js';
import { Deadline } from '../../../src/deadline/deadline.js';
import { createDependency } from '../../../src/dependency/dependency.js';
import type { DependencyEvent } from '../../../src/dependency/types.js';
import { isPrazoError } from '../../../src/errors/base.js';
import { ConcurrencyLimitError, NoInstanceError } from '../../../src/errors/capacity.js';
import { isDeadlineInsufficient } from '../../../src/errors/guards.js';
import { ThrottledError } from '../../../src/errors/throttle.js';

/**
 * Attacks on prazo/connect (issue 25) on a real connect-node server on 127.0.0.1: what a client may
 * set (a timeout longer than a timer holds), D4 on a stream at its floor, malformed deadline headers
 * sent to the server interceptor by hand, and the pushback of THROTTLED / CONCURRENCY_LIMITED /
 * NO_INSTANCE through it (answered `unavailable` with `grpc-retry-pushback-ms: -1`, not retried).
 */

const servers: EchoServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

type Impl = (request: EchoRequest, context: HandlerContext) => Promise<Partial<EchoResponse>>;

async function serve(impl: Impl, http1 = false): Promise<{ server: EchoServer; calls: () => number }> {
  let calls = 0;
  const counted: Impl = (req, ctx) => {
    calls += 1;
    return impl(req, ctx);
  };
  const server = await startServer(
    (router) => {
      router.service(EchoService, {
        get: counted,
        put: counted,
        charge: counted,
        async *watch(req: EchoRequest, ctx: HandlerContext) {
          calls += 1;
          yield await impl(req, ctx);
        },
      } as never);
    },
    [connectServerInterceptor({ maxMs: 5_000 })],
    http1,
  );
  servers.push(server);
  return { server, calls: () => calls };
}

const leftMs: Impl = async (req, ctx) => ({ text: req.text, leftMs: ctx.timeoutMs() ?? -1 });

describe('connect attacks: the client interceptor', () => {
  it.each(PROTOCOLS)(
    '%s: a call timeout header longer than a timer holds (30 days) is a long deadline, not an INTERNAL error',
    async (protocol) => {
      const { server, calls } = await serve(leftMs);
      // A p99 far above a first call's cost (a new connection, code not yet optimised): on a busy
      // machine that call took 127 ms against a 70 ms attempt timeout. The header is what is tested.
      const dependency = createDependency({ name: 'echo', p99Ms: 1_000 });
      const client = createClient(
        EchoService,
        transportFor(protocol, server.url, [connectClientInterceptor({ dependency })]),
      ) as unknown as EchoClient;
      // Given as the header (connect-es' own `timeoutMs` timer cannot hold 30 days either: Node fires
      // a longer setTimeout at once), as a proxy or another client would forward it.
      const header: Record<string, string> =
        protocol === 'connect'
          ? { 'connect-timeout-ms': String(30 * 86_400_000) }
          : { 'grpc-timeout': '720H' };
      const answer = await client.get({ text: 'far' }, { headers: header }).catch((e: unknown) => e);
      expect(answer, String(answer)).toMatchObject({ text: 'far' });
      expect(calls()).toBe(1);
      // The server caps it at its maxMs: the handler saw at most 5 s.
      expect((answer as EchoResponse).leftMs).toBeLessThanOrEqual(5_000);
    },
  );

  it('a stream is refused under D4 at the same boundary as a unary call: with less than 1 ms left, none is sent', async () => {
    const { server, calls } = await serve(leftMs);
    // Its epoch is the real one: a stream let through reaches the handler (and is counted).
    const clock = new FakeClock({ epoch: Math.floor(systemClock.epochNow()) });
    const dependency = createDependency({ name: 'echo', p99Ms: 0.5, clock });
    const client = createClient(
      EchoService,
      transportFor('connect', server.url, [connectClientInterceptor({ dependency, clock })]),
    ) as unknown as EchoClient;
    const events: DependencyEvent[] = [];
    dependency.on((e) => events.push(e));
    const ambient = Deadline.after(0.7, { clock }); // above the p99, below the 1 ms floor (fits.ts)
    const unary = await runWithDeadline(ambient, () => client.get({ text: 'u' })).catch((e: unknown) => e);
    expect(unary).toBeInstanceOf(ConnectError);
    expect(isDeadlineInsufficient((unary as ConnectError).cause)).toBe(true);
    const streamed = await runWithDeadline(ambient, async () => {
      const out: unknown[] = [];
      for await (const m of client.watch({ text: 's' })) out.push(m);
      return out;
    }).catch((e: unknown) => e);
    expect(streamed).toBeInstanceOf(ConnectError);
    const cause = (streamed as ConnectError).cause;
    expect(isDeadlineInsufficient(cause), String(streamed)).toBe(true);
    expect((streamed as ConnectError).code).toBe(Code.DeadlineExceeded);
    expect(calls()).toBe(0);
    // Both refusals reach the dependency's listeners, with the same numbers (the fake clock stood still).
    expect(events.map((e) => e.type)).toEqual(['deadline-insufficient', 'deadline-insufficient']);
    expect(events[1]).toEqual(events[0]);
    // A p99 of 0.5 ms still needs the 1 ms every attempt needs (D4): the numbers agree with the refusal.
    expect(events[0]).toMatchObject({ dependency: 'echo', remainingMs: 0.7, neededMs: 1, attempt: 1 });
  });
});

describe('connect attacks: the server interceptor under malformed deadline headers', () => {
  const HEADERS: ReadonlyArray<Record<string, string>> = [
    { 'connect-timeout-ms': '-1' },
    { 'connect-timeout-ms': 'abc' },
    { 'connect-timeout-ms': '99999999999' }, // 11 digits
    { 'connect-timeout-ms': '9999999999' }, // 10 digits: 115 days
    { 'connect-timeout-ms': ' 100 ' },
    { 'grpc-timeout': '99999999H' },
    { 'grpc-timeout': '1x' },
    { 'x-deadline-epoch-ms': 'NaN' },
    { 'x-deadline-epoch-ms': '1e400' },
    { 'x-deadline-epoch-ms': '-5' },
    { 'x-deadline-epoch-ms': '9'.repeat(5_000), label: '5000 nines' },
    { 'x-envoy-expected-rq-timeout-ms': '-100' },
  ];

  it.each(HEADERS)(
    'answers %j: the handler runs under at most maxMs, or the request is refused as expired',
    async (headers) => {
      const seen: { left: number | undefined }[] = [];
      const { server } = await serve(async (req) => {
        seen.push({ left: currentDeadline()?.remainingMs() });
        return { text: req.text };
      }, true);
      const res = await request(`${server.url}/prazo.test.v1.EchoService/Get`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'connect-protocol-version': '1', ...headers },
        body: JSON.stringify({ text: 'x' }),
        headersTimeout: 10_000,
      });
      const body = await res.body.text();
      expect([200, 400, 504]).toContain(res.statusCode);
      if (res.statusCode === 200) {
        expect(JSON.parse(body)).toMatchObject({ text: 'x' });
        expect(seen).toHaveLength(1);
        expect(seen[0]!.left).toBeGreaterThan(0);
        expect(seen[0]!.left).toBeLessThanOrEqual(5_000);
      } else expect(seen).toHaveLength(0); // refused before the handler: never run
    },
  );
});

describe('connect attacks: pushback of the refusals that protect a failing dependency (SPEC X6)', () => {
  const REFUSALS: ReadonlyArray<readonly [string, () => Error]> = [
    [
      'THROTTLED',
      () =>
        new ThrottledError({
          dependency: 'supplier',
          requests: 40,
          accepts: 0,
          probability: 0.9,
          windowMs: 1_000,
        }),
    ],
    [
      'CONCURRENCY_LIMITED',
      () =>
        new ConcurrencyLimitError({
          dependency: 'supplier',
          limit: 4,
          inFlight: 4,
          queued: 4,
          maxQueue: 4,
          reason: 'queue-full',
          waitedMs: 0,
        }),
    ],
    ['NO_INSTANCE', () => new NoInstanceError({ dependency: 'supplier' })],
  ];

  for (const protocol of PROTOCOLS) {
    it.each(REFUSALS)(
      `${protocol}: a handler failing with %s is answered unavailable + pushback, and not retried`,
      async (code, make) => {
        const { server, calls } = await serve(async () => {
          throw new Error('the handler gave up', { cause: make() });
        });
        const dependency = createDependency({ name: 'middle', p99Ms: 100, attempts: 3, throttle: false });
        const client = createClient(
          EchoService,
          transportFor(protocol, server.url, [connectClientInterceptor({ dependency })]),
        ) as unknown as EchoClient;
        const error = await client.get({ text: 'x' }, { timeoutMs: 3_000 }).catch((e: unknown) => e);
        expect(error).toBeInstanceOf(ConnectError);
        expect((error as ConnectError).code).toBe(Code.Unavailable);
        expect((error as ConnectError).message).toContain(code === 'NO_INSTANCE' ? 'supplier' : 'supplier');
        expect(calls()).toBe(1); // idempotent Get, 3 attempts allowed: the pushback stops them
        expect(dependency.budget.state().extras).toBe(0);
        expect(
          isPrazoError((error as ConnectError).cause) || (error as ConnectError).cause === undefined,
        ).toBe(true);
      },
    );
  }
});

describe('connect attacks: a refusal in the middle of a server stream', () => {
  it.each(PROTOCOLS)(
    '%s: the messages sent stay delivered, then unavailable + pushback, nothing retried',
    async (protocol) => {
      let calls = 0;
      const server = await startServer(
        (router) => {
          router.service(EchoService, {
            get: leftMs,
            put: leftMs,
            charge: leftMs,
            async *watch(req: EchoRequest) {
              calls += 1;
              yield { text: `${req.text}1` };
              throw new ThrottledError({
                dependency: 'supplier',
                requests: 20,
                accepts: 0,
                probability: 0.9,
                windowMs: 1_000,
              });
            },
          } as never);
        },
        [connectServerInterceptor({ maxMs: 5_000 })],
      );
      servers.push(server);
      const dependency = createDependency({ name: 'middle', p99Ms: 50, attempts: 3, throttle: false });
      const client = createClient(
        EchoService,
        transportFor(protocol, server.url, [connectClientInterceptor({ dependency })]),
      ) as unknown as EchoClient;
      const got: string[] = [];
      let failure: unknown;
      try {
        for await (const m of client.watch({ text: 'w' }, { timeoutMs: 3_000 })) got.push(m.text);
      } catch (error) {
        failure = error;
      }
      expect(got).toEqual(['w1']);
      expect(failure).toBeInstanceOf(ConnectError);
      expect((failure as ConnectError).code).toBe(Code.Unavailable);
      expect((failure as ConnectError).metadata.get('grpc-retry-pushback-ms')).toBe('-1');
      expect(calls).toBe(1);
    },
  );
});
