import { createServer, type Server } from 'node:http';
import { status as grpcStatus, type sendUnaryData } from '@grpc/grpc-js';
import express from 'express';
import fc from 'fast-check';
import Fastify from 'fastify';
import { request } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { FakeClock } from '../../../src/clock/fake.js';
import { systemClock } from '../../../src/clock/system.js';
import { Deadline } from '../../../src/deadline/deadline.js';
import { ConcurrencyLimitError, NoInstanceError } from '../../../src/errors/capacity.js';
import { ThrottledError } from '../../../src/errors/throttle.js';
import { ConnectFailedError } from '../../../src/errors/timeout.js';
import { echoClient, type SayReply, say, startEcho } from '../../../src/grpc/grpc.test-helpers.js';
import { withGrpcDeadline } from '../../../src/grpc/server.js';
import { createHttpClient, type HttpClient } from '../../../src/http/client.js';
import { faults, startServer } from '../../../src/http/servers.test-helpers.js';
import { deadlineErrorHandler, deadlineMiddleware } from '../../../src/server/express.js';
import { fastifyDeadline } from '../../../src/server/fastify.js';
import { withIncomingDeadline } from '../../../src/server/node.js';
import { pushbackAnswer } from '../../../src/server/pushback.js';
import { close, listen } from '../../../src/server/server.test-helpers.js';

/**
 * Attacks on prazo/server's pushback (SPEC X6, issue 23) for the refusals that protect a failing
 * dependency — THROTTLED, CONCURRENCY_LIMITED, NO_INSTANCE — on real loopback sockets: a real chain
 * (front client → a prazo server → its prazo client → a failing upstream) where the refusal happens
 * for real, each framework, a handler that already started its answer, and `Retry-After` for any
 * deadline a caller can hand `pushbackAnswer`.
 */

const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const fn of closers.splice(0).reverse()) await fn();
});

/** The middle hop: a node:http server whose handler calls `upstream` through prazo/http. */
async function middle(upstream: string, options: Partial<Parameters<typeof createHttpClient>[0]>) {
  const client: HttpClient = createHttpClient({
    name: 'supplier',
    origin: upstream,
    p99Ms: 300,
    attempts: 1,
    ...options,
  });
  let received = 0;
  const server: Server = createServer(
    withIncomingDeadline(async (_req, res) => {
      received += 1;
      const answer = await client.request('/stock');
      await answer.body.dump();
      // The upstream's own answer, passed on as data: only a refusal fails this hop.
      res.writeHead(200).end(String(answer.statusCode));
    }),
  );
  const url = await listen(server);
  closers.push(
    () => close(server),
    () => client.destroy(),
  );
  return { url, received: () => received, client };
}

describe('server attacks: a real refusal in the middle hop is pushed back and not retried', () => {
  it('THROTTLED: 503 + pushback -1 + Retry-After; the front client (3 attempts, idempotent) sends each call once', async () => {
    const upstream = await startServer(faults.status(503));
    closers.push(() => upstream.close());
    const hop = await middle(upstream.origin, { throttle: { minRequests: 3 } });
    const front = createHttpClient({
      name: 'middle',
      origin: hop.url,
      p99Ms: 300,
      attempts: 3,
      throttle: false,
    });
    closers.push(() => front.destroy());
    let throttled = 0;
    const calls = 40;
    for (let i = 0; i < calls; i += 1) {
      const res = await front.request('/', { deadline: 4_200, idempotent: true });
      const text = await res.body.text();
      if (res.statusCode === 503) {
        throttled += 1;
        expect(res.headers['grpc-retry-pushback-ms']).toBe('-1');
        // What is left of the middle's own deadline: the front's attempt end (D1, D5), under 4.2 s.
        expect(res.headers['retry-after']).toMatch(/^[1-5]$/);
        expect(JSON.parse(text)).toMatchObject({ error: 'THROTTLED' });
      } else expect([res.statusCode, text]).toEqual([200, '503']); // a probe the middle let through
    }
    expect(throttled).toBeGreaterThan(20);
    expect(hop.received()).toBe(calls); // no retry of a pushed-back answer
    expect(front.dependency.budget.state().extras).toBe(0);
  });

  it('CONCURRENCY_LIMITED: the call refused by the full limit is answered 503 + pushback, the other succeeds', async () => {
    const upstream = await startServer((_req, res) => {
      setTimeout(() => res.writeHead(200).end('ok'), 300);
    });
    closers.push(() => upstream.close());
    const hop = await middle(upstream.origin, {
      p99Ms: 1_000,
      throttle: false,
      concurrencyLimit: { maxInFlight: 1, maxQueue: 0 },
    });
    const send = () =>
      request(hop.url, { headers: { 'x-deadline-epoch-ms': String(systemClock.epochNow() + 5_000) } });
    const [a, b] = await Promise.all([send(), send()]);
    const answers = [a, b].map((r) => ({ status: r.statusCode, headers: r.headers }));
    const bodies = await Promise.all([a.body.text(), b.body.text()]);
    const refused = answers.findIndex((r) => r.status === 503);
    expect(refused).toBeGreaterThanOrEqual(0);
    expect(answers[1 - refused]!.status).toBe(200);
    expect(bodies[1 - refused]).toBe('200');
    expect(answers[refused]!.headers['grpc-retry-pushback-ms']).toBe('-1');
    expect(JSON.parse(bodies[refused]!)).toMatchObject({ error: 'CONCURRENCY_LIMITED' });
    expect(upstream.seen).toHaveLength(1);
  });
});

type Framework = 'node' | 'express' | 'fastify';

async function serveFailing(framework: Framework, fail: () => unknown): Promise<string> {
  if (framework === 'fastify') {
    const app = Fastify();
    await app.register(fastifyDeadline, {});
    app.get('/', async () => {
      throw fail();
    });
    const url = await app.listen({ port: 0, host: '127.0.0.1' });
    closers.push(() => app.close());
    return url;
  }
  const listener =
    framework === 'node'
      ? withIncomingDeadline(async () => {
          throw fail();
        })
      : (() => {
          const app = express();
          app.use(deadlineMiddleware());
          app.get('/', async () => {
            throw fail();
          });
          app.use(deadlineErrorHandler());
          return app;
        })();
  const server = createServer(listener);
  closers.push(() => close(server));
  return listen(server);
}

describe.each(['node', 'express', 'fastify'] as const)('server attacks: %s', (framework) => {
  it('NO_INSTANCE (nothing to call: discovery found none) is a 503 pushback', async () => {
    const url = await serveFailing(framework, () => new NoInstanceError({ dependency: 'supplier' }));
    const res = await request(url);
    await res.body.dump();
    expect(res.statusCode).toBe(503);
    expect(res.headers['grpc-retry-pushback-ms']).toBe('-1');
    expect(Number(res.headers['retry-after'])).toBeGreaterThanOrEqual(1);
  });

  it('a THROTTLED refusal wrapped twice in causes is still pushed back', async () => {
    const url = await serveFailing(
      framework,
      () =>
        new Error('checkout', {
          cause: new Error('stock', {
            cause: new ThrottledError({
              dependency: 's',
              requests: 20,
              accepts: 0,
              probability: 0.9,
              windowMs: 1_000,
            }),
          }),
        }),
    );
    const res = await request(url);
    await res.body.dump();
    expect(res.statusCode).toBe(503);
    expect(res.headers['grpc-retry-pushback-ms']).toBe('-1');
  });
});

describe('server attacks: a handler that already started its answer', () => {
  it('then fails THROTTLED: the cut answer is not passed off as whole, the server keeps serving', async () => {
    let n = 0;
    const server = createServer(
      withIncomingDeadline(async (_req, res) => {
        n += 1;
        if (n === 1) {
          res.writeHead(200, { 'content-length': '100' });
          res.write('partial');
          await new Promise((r) => setTimeout(r, 10));
          throw new ThrottledError({
            dependency: 's',
            requests: 20,
            accepts: 0,
            probability: 0.9,
            windowMs: 1_000,
          });
        }
        res.writeHead(200).end('second');
      }),
    );
    const url = await listen(server);
    closers.push(() => close(server));
    const first = await request(url)
      .then(
        async (res) => {
          await res.body.text();
          return 'whole';
        },
        (e: unknown) => e,
      )
      .catch((e: unknown) => e);
    const cut = await (async () => {
      try {
        const res = await request(url);
        return { status: res.statusCode, text: await res.body.text() };
      } catch (e) {
        return e;
      }
    })();
    expect(first).not.toBe('whole');
    expect(cut).toEqual({ status: 200, text: 'second' });
  });
});

describe('server attacks: Retry-After for any deadline pushbackAnswer is given', () => {
  const failure = new ThrottledError({
    dependency: 's',
    requests: 20,
    accepts: 0,
    probability: 0.9,
    windowMs: 1_000,
  });

  it('is a delay-seconds integer in [1, 86400] whatever the deadline: gone, tiny, huge, endless (property)', () => {
    const clock = new FakeClock();
    fc.assert(
      fc.property(
        fc.oneof(
          fc.double({ noNaN: false }),
          fc.constantFrom(
            Number.POSITIVE_INFINITY,
            Number.NaN,
            -1,
            0,
            0.001,
            999,
            1_000,
            1_001,
            2 ** 31,
            1e300,
          ),
        ),
        (ms) => {
          const answer = pushbackAnswer(failure, { deadline: Deadline.after(ms, { clock }) })!;
          const value = answer.headers['retry-after']!;
          expect(value).toMatch(/^[0-9]+$/);
          expect(Number(value)).toBeGreaterThanOrEqual(1);
          expect(Number(value)).toBeLessThanOrEqual(86_400);
        },
      ),
    );
  });

  it('an endless deadline (Deadline.after(Infinity)) gives "86400", not "Infinity"', () => {
    const answer = pushbackAnswer(failure, { deadline: Deadline.after(Number.POSITIVE_INFINITY) })!;
    expect(answer.headers['retry-after']).toBe('86400');
    expect(answer.status).toBe(503);
  });

  it('refuses a retryAfterS out of its bounds or not whole, and a deadline that is not one', () => {
    for (const retryAfterS of [-1, 1.5, 86_401, Number.NaN, Number.POSITIVE_INFINITY])
      expect(() => pushbackAnswer(failure, { retryAfterS })).toThrow(/retryAfterS/);
    expect(() => pushbackAnswer(failure, { deadline: 5_000 as never })).toThrow(/deadline/);
  });

  // Was a defect (fixed): dependencyFailureOf followed `cause` only, so a handler that tried several
  // replicas with Promise.any and lost them all to refusals (an AggregateError of THROTTLED /
  // CONNECT_FAILED) was answered 500 without pushback, and its callers retried what this hop had
  // already given up on (the amplification X6 exists to stop).
  it('an AggregateError whose every error is a dependency failure is pushed back', () => {
    const refused = new ConnectFailedError({
      dependency: 'replica-b',
      elapsedMs: 1,
      cause: Object.assign(new Error('refused'), { code: 'ECONNREFUSED' }),
    });
    const all = new AggregateError([failure, refused], 'All promises were rejected');
    expect(pushbackAnswer(all)?.status).toBe(503);
  });
});

describe("server attacks: gRPC (withGrpcDeadline) answers the same refusals with gRPC's pushback", () => {
  const REFUSALS: ReadonlyArray<readonly [string, () => Error]> = [
    [
      'THROTTLED',
      () =>
        new ThrottledError({ dependency: 's', requests: 20, accepts: 0, probability: 0.9, windowMs: 1_000 }),
    ],
    [
      'CONCURRENCY_LIMITED',
      () =>
        new ConcurrencyLimitError({
          dependency: 's',
          limit: 2,
          inFlight: 2,
          queued: 2,
          maxQueue: 2,
          reason: 'queue-full',
          waitedMs: 0,
        }),
    ],
    ['NO_INSTANCE', () => new NoInstanceError({ dependency: 's' })],
  ];

  it.each(REFUSALS)(
    "%s → UNAVAILABLE + grpc-retry-pushback-ms: -1; grpc-js's own retry policy calls once",
    async (_code, make) => {
      let calls = 0;
      const server = await startEcho({
        say: withGrpcDeadline(async (_call: unknown, _cb: sendUnaryData<SayReply>) => {
          calls += 1;
          throw new Error('stock lookup failed', { cause: make() });
        }),
      });
      const config = {
        methodConfig: [
          {
            name: [{ service: 'prazo.test.Echo' }],
            retryPolicy: {
              maxAttempts: 4,
              initialBackoff: '0.01s',
              maxBackoff: '0.05s',
              backoffMultiplier: 2,
              retryableStatusCodes: ['UNAVAILABLE'],
            },
          },
        ],
      };
      const client = echoClient(server.address, {
        'grpc.service_config': JSON.stringify(config),
        'grpc.enable_retries': 1,
      });
      closers.push(
        () => server.stop(),
        async () => client.close(),
      );
      const error = (await say(client, { text: 'x' }, { deadline: systemClock.epochNow() + 3_000 }).catch(
        (e: unknown) => e,
      )) as { code?: number; metadata?: { get(k: string): unknown[] } };
      expect(error.code).toBe(grpcStatus.UNAVAILABLE);
      expect(error.metadata?.get('grpc-retry-pushback-ms')).toEqual(['-1']);
      expect(calls).toBe(1);
    },
  );
});
