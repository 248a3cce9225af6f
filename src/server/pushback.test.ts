import { createServer } from 'node:http';
import express from 'express';
import Fastify, { type FastifyInstance } from 'fastify';
import { request } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { systemClock } from '../clock/system.js';
import { isPrazoError } from '../errors/base.js';
import { RetryBudgetExhaustedError } from '../errors/budget.js';
import { ConcurrencyLimitError } from '../errors/capacity.js';
import { DeadlineExceededError, DeadlineInsufficientError } from '../errors/deadline.js';
import { DependencyFailedError } from '../errors/dependency.js';
import { InvalidOptionsError } from '../errors/options.js';
import { ThrottledError } from '../errors/throttle.js';
import { ConnectFailedError, ResponseTimeoutError } from '../errors/timeout.js';
import { markDependencyFailure } from '../retry/pushback.js';
import { createServerEventHub, type ServerEvent } from './events.js';
import { deadlineErrorHandler, deadlineMiddleware } from './express.js';
import { fastifyDeadline } from './fastify.js';
import { withIncomingDeadline } from './node.js';
import type { ServerDeadlineOptions } from './options.js';
import { pushbackAnswer } from './pushback.js';
import { close, listen } from './server.test-helpers.js';

/**
 * Retry at one layer on the server (SPEC X6): a handler that fails because one of its dependencies
 * did is answered 503/504 with `grpc-retry-pushback-ms: -1` and a `Retry-After`, by node:http
 * (`withIncomingDeadline`), Express 5 (`deadlineErrorHandler`) and Fastify 5 (`fastifyDeadline`), on
 * real loopback sockets. The handler only lets the error reach the framework.
 */

const refused = () =>
  new ConnectFailedError({
    dependency: 'supplier',
    elapsedMs: 1,
    cause: Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }),
  });

/** Each failure, and what the caller is told. */
const FAILURES: ReadonlyArray<readonly [string, () => unknown, number, string]> = [
  ['a refused connect', refused, 503, 'CONNECT_FAILED'],
  [
    'the budget refused the retry',
    () =>
      new RetryBudgetExhaustedError({ dependency: 'supplier', originals: 10, extras: 1, cause: refused() }),
    503,
    'RETRY_BUDGET_EXHAUSTED',
  ],
  [
    'the adaptive throttle refused the call (issue 23)',
    () =>
      new ThrottledError({
        dependency: 'supplier',
        requests: 40,
        accepts: 0,
        probability: 0.9,
        windowMs: 1000,
      }),
    503,
    'THROTTLED',
  ],
  [
    'the concurrency limit refused the call',
    () =>
      new ConcurrencyLimitError({
        dependency: 'supplier',
        limit: 12,
        inFlight: 12,
        queued: 0,
        maxQueue: 0,
        reason: 'queue-full',
        waitedMs: 0,
      }),
    503,
    'CONCURRENCY_LIMITED',
  ],
  [
    'not enough time left',
    () => new DeadlineInsufficientError({ dependency: 'supplier', remainingMs: 10, neededMs: 250 }),
    504,
    'DEADLINE_INSUFFICIENT',
  ],
  [
    'the dependency did not answer in time',
    () => new ResponseTimeoutError({ dependency: 'supplier', elapsedMs: 350, timeoutMs: 350 }),
    504,
    'RESPONSE_TIMEOUT',
  ],
  [
    'the dependency answered 503',
    () => new DependencyFailedError({ dependency: 'supplier', httpStatus: 503 }),
    503,
    'DEPENDENCY_FAILED',
  ],
  [
    'a socket error prazo’s client gave up on after its retries (marked by the executor)',
    () =>
      markDependencyFailure(
        Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }),
        'supplier',
      ),
    503,
    'DEPENDENCY_FAILED',
  ],
  [
    'a wrapped one (cause chain)',
    () => new Error('checkout failed', { cause: new DeadlineExceededError({ dependency: 'supplier' }) }),
    504,
    'DEADLINE_EXCEEDED',
  ],
];

/** Failures that are not a dependency's: answered as before. */
const NOT_PUSHBACK: ReadonlyArray<readonly [string, () => unknown]> = [
  ['a plain error', () => new Error('bug')],
  [
    'a socket error no prazo client saw (nothing retried it at this layer)',
    () => Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }),
  ],
  ['invalid options (a bug), even wrapping a timeout', () => new InvalidOptionsError('x', ['y'])],
  [
    'a dependency 404 (the request was wrong)',
    () => new DependencyFailedError({ dependency: 'x', httpStatus: 404 }),
  ],
];

const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const fn of closers.splice(0).reverse()) await fn();
});

type Framework = 'node' | 'express' | 'fastify';

async function serve(framework: Framework, fail: () => unknown, options: ServerDeadlineOptions = {}) {
  const events: ServerEvent[] = [];
  const hub = createServerEventHub();
  hub.onServerEvent((e) => events.push(e));
  const opts = { events: hub, defaultMs: 1_500, ...options };
  if (framework === 'fastify') {
    const app: FastifyInstance = Fastify();
    await app.register(fastifyDeadline, opts);
    app.get('/', async () => {
      throw fail();
    });
    const url = await app.listen({ port: 0, host: '127.0.0.1' });
    closers.push(() => app.close());
    return { url, events };
  }
  const listener =
    framework === 'node'
      ? withIncomingDeadline(async () => {
          throw fail();
        }, opts)
      : (() => {
          const app = express();
          app.use(deadlineMiddleware(opts));
          app.get('/', async () => {
            throw fail();
          });
          app.use(deadlineErrorHandler());
          return app;
        })();
  const server = createServer(listener);
  closers.push(() => close(server));
  return { url: await listen(server), events };
}

describe.each(['node', 'express', 'fastify'] as const)(
  '%s answers a dependency failure with a pushback',
  (framework) => {
    it.each(FAILURES)(
      '%s → %i + grpc-retry-pushback-ms: -1 + Retry-After',
      async (_name, fail, status, code) => {
        const { url, events } = await serve(framework, fail);
        const res = await request(url, {
          headers: { 'x-deadline-epoch-ms': String(systemClock.epochNow() + 4_200) },
        });
        expect(res.statusCode).toBe(status);
        expect(res.headers['grpc-retry-pushback-ms']).toBe('-1');
        // The seconds left of the request's deadline, rounded up: 4.2 s → 5 (4 under a slow machine).
        expect(Number(res.headers['retry-after'])).toBeGreaterThanOrEqual(4);
        expect(Number(res.headers['retry-after'])).toBeLessThanOrEqual(5);
        expect(res.headers['cache-control']).toBe('no-store');
        const body = (await res.body.json()) as Record<string, unknown>;
        // Fastify's default error handler writes its own body: the thrown error's `code` as `code`.
        if (framework !== 'fastify') expect(body.error).toBe(code);
        else if (isPrazoError(fail())) expect(body.code).toBe(code);
        expect(events).toContainEqual(
          expect.objectContaining({ type: 'pushback', framework, statusCode: status, code }),
        );
      },
    );

    it.each(NOT_PUSHBACK)('%s: no pushback', async (_name, fail) => {
      const { url, events } = await serve(framework, fail);
      const res = await request(url);
      await res.body.dump();
      expect(res.statusCode).toBe(500);
      expect(res.headers['grpc-retry-pushback-ms']).toBeUndefined();
      expect(events.some((e) => e.type === 'pushback')).toBe(false);
    });

    it('`pushback: false`: a refused connect is the framework’s 500, a deadline error the 504 of before', async () => {
      const a = await serve(framework, refused, { pushback: false });
      const res = await request(a.url);
      await res.body.dump();
      expect(res.statusCode).toBe(500);
      expect(res.headers['grpc-retry-pushback-ms']).toBeUndefined();
      const b = await serve(
        framework,
        () => new DeadlineInsufficientError({ dependency: 'x', remainingMs: 1, neededMs: 2 }),
        { pushback: false },
      );
      const late = await request(b.url);
      await late.body.dump();
      expect(late.statusCode).toBe(504);
      expect(late.headers['grpc-retry-pushback-ms']).toBeUndefined();
    });

    it('`pushback: { retryAfterS: 30 }` fixes the Retry-After', async () => {
      const { url } = await serve(framework, refused, { pushback: { retryAfterS: 30 } });
      const res = await request(url);
      await res.body.dump();
      expect(res.headers['retry-after']).toBe('30');
    });
  },
);

describe('pushbackAnswer, for any other server', () => {
  it('builds the answer from the error alone; undefined for an error that is not a dependency’s', () => {
    expect(pushbackAnswer(refused())).toMatchObject({
      status: 503,
      headers: { 'grpc-retry-pushback-ms': '-1', 'retry-after': '1', 'cache-control': 'no-store' },
      body: { error: 'CONNECT_FAILED' },
      failure: { kind: 'unavailable' },
    });
    expect(pushbackAnswer(new Error('x'))).toBeUndefined();
    expect(pushbackAnswer(null)).toBeUndefined();
    expect(pushbackAnswer('CONNECT_FAILED')).toBeUndefined();
    expect(pushbackAnswer({ code: 'CONNECT_FAILED' })).toBeUndefined(); // a look-alike, no brand
    // A cycle in the cause chain is walked a bounded number of steps.
    const a = new Error('a') as Error & { cause?: unknown };
    a.cause = a;
    expect(pushbackAnswer(a)).toBeUndefined();
  });

  it('refuses a misspelt option at construction, with a did-you-mean', () => {
    expect(() => withIncomingDeadline(() => {}, { pushback: { retryAfter: 3 } } as never)).toThrow(
      /retryAfterS/,
    );
    expect(() => deadlineMiddleware({ pushBack: true } as never)).toThrow(/did you mean `pushback`/);
  });
});
