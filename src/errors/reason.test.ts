import { createServer, type Server } from 'node:http';
import { createServer as createNetServer } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { createHttpClient, type HttpClient } from '../http/client.js';
import { withIncomingDeadline } from '../server/node.js';
import { RetryBudgetExhaustedError } from './budget.js';
import { DependencyFailedError } from './dependency.js';
import { failureReason } from './reason.js';
import { ConnectFailedError, ResponseTimeoutError } from './timeout.js';

const coded = (code: string, message = `connect ${code} 10.0.3.7:5432`): Error =>
  Object.assign(new Error(message), { code });

describe('failureReason: the code and a short reason, never the message (issue 27)', () => {
  it('names socket, undici, prazo, gRPC and SQL failures without their messages', () => {
    expect(failureReason(coded('ECONNREFUSED'))).toBe(
      'ECONNREFUSED (connection refused: nothing listens there, or the instance is down)',
    );
    expect(failureReason(coded('UND_ERR_SOCKET', 'other side closed'))).toBe(
      'UND_ERR_SOCKET (the socket closed before the response was complete)',
    );
    expect(
      failureReason(new ResponseTimeoutError({ dependency: 'supplier', elapsedMs: 90, timeoutMs: 90 })),
    ).toBe('RESPONSE_TIMEOUT (no response within the response timeout)');
    expect(
      failureReason(
        new ConnectFailedError({ dependency: 'supplier', elapsedMs: 3, cause: coded('ECONNREFUSED') }),
      ),
    ).toMatch(/^CONNECT_FAILED: ECONNREFUSED \(connection refused/);
    expect(failureReason(Object.assign(new Error('14 UNAVAILABLE: x'), { code: 14, details: 'x' }))).toBe(
      'gRPC UNAVAILABLE',
    );
    expect(
      failureReason(Object.assign(new Error('canceling statement'), { code: '57014', severity: 'ERROR' })),
    ).toBe('SQLSTATE 57014');
    // Along the cause chain (undici's `fetch failed`) and into an AggregateError (happy eyeballs).
    expect(failureReason(new TypeError('fetch failed', { cause: coded('ECONNRESET') }))).toMatch(
      /^ECONNRESET \(/,
    );
    expect(failureReason(new AggregateError([coded('EHOSTUNREACH')], 'x'))).toBe(
      'EHOSTUNREACH (host unreachable)',
    );
    // No code: the class name only; not an error at all: nothing.
    expect(failureReason(new TypeError('cannot read x of undefined at /srv/app.js:3'))).toBe('TypeError');
    expect(failureReason('boom')).toBeUndefined();
    expect(failureReason(coded('lowercase code'))).toBe('Error');
  });

  it('a cause chain that loops ends', () => {
    const a: Error & { cause?: unknown } = new Error('a');
    const b = new Error('b', { cause: a });
    a.cause = b;
    expect(failureReason(a)).toBe('Error');
    const wrapper = new DependencyFailedError({ dependency: 'x' });
    (wrapper as { cause?: unknown }).cause = wrapper;
    expect(failureReason(wrapper)).toBe('DEPENDENCY_FAILED (the dependency answered with a failure)');
  });

  it('never carries an address, a path or a statement', () => {
    const secret = coded('ECONNREFUSED', 'connect ECONNREFUSED 10.0.3.7:5432 SELECT * FROM users /srv/x');
    const budget = new RetryBudgetExhaustedError({
      dependency: 'supplier',
      originals: 303,
      extras: 30,
      cause: secret,
    });
    const failed = new DependencyFailedError({ dependency: 'supplier', cause: secret });
    for (const message of [budget.message, failed.message, failureReason(secret)!]) {
      expect(message).not.toMatch(/10\.0\.3\.7|5432|SELECT|\/srv/);
    }
  });
});

describe('issue 27 friction 2: the last attempt failure in the message and the answer body', () => {
  let server: Server | undefined;
  let client: HttpClient | undefined;
  afterEach(async () => {
    await client?.close();
    await new Promise((resolve) => (server === undefined ? resolve(undefined) : server.close(resolve)));
    server = undefined;
    client = undefined;
  });

  /** A loopback port nothing listens on (taken, then released). */
  const closedPort = (): Promise<number> =>
    new Promise((resolve) => {
      const s = createNetServer().listen(0, '127.0.0.1', () => {
        const { port } = s.address() as { port: number };
        s.close(() => resolve(port));
      });
    });

  const serve = async (handler: () => Promise<void>): Promise<string> => {
    server = createServer(
      withIncomingDeadline(async (_req, res) => {
        await handler();
        res.end('ok');
      }),
    );
    await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(server.address() as { port: number }).port}/`;
  };

  it('RETRY_BUDGET_EXHAUSTED names ECONNREFUSED; the 503 body too', async () => {
    // Before: `retry budget exhausted for supplier: 0 extra attempt(s) for 1 original request(s) in
    // the window`, ECONNREFUSED only in `.cause`; the body the same words.
    const port = await closedPort();
    client = createHttpClient({
      name: 'supplier',
      origin: `http://127.0.0.1:${port}`,
      p99Ms: 50,
      attempts: 3,
      throttle: false,
      retryBudget: { minPerSecond: 0, maxRatio: 0.1 }, // no floor: the first retry is refused
    });
    const error = await client.request('/stock', { deadline: 1_000 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RetryBudgetExhaustedError);
    expect((error as Error).message).toBe(
      'retry budget exhausted for supplier: 0 extra attempt(s) for 1 original request(s) in the window; ' +
        'the last attempt failed with ECONNREFUSED (connection refused: nothing listens there, or the instance is down): ' +
        'supplier is failing, and more retries would only add to its load',
    );
    const c = client;
    const url = await serve(async () => {
      await c.request('/stock');
    });
    const res = await fetch(url);
    expect(res.status).toBe(503);
    const body = (await res.json()) as { error: string; message: string };
    expect(body.error).toBe('RETRY_BUDGET_EXHAUSTED');
    expect(body.message).toContain('the last attempt failed with ECONNREFUSED (connection refused');
    expect(body.message).not.toContain(String(port));
  });

  it('while the budget has room, DEPENDENCY_FAILED says why, not just "supplier failed"', async () => {
    // Before: {"error":"DEPENDENCY_FAILED","message":"supplier failed"}.
    const port = await closedPort();
    client = createHttpClient({
      name: 'supplier',
      origin: `http://127.0.0.1:${port}`,
      p99Ms: 50,
      attempts: 3,
      throttle: false,
    });
    const c = client;
    const url = await serve(async () => {
      await c.request('/stock');
    });
    const res = await fetch(url);
    expect(res.status).toBe(503);
    expect(await res.json()).toEqual({
      error: 'DEPENDENCY_FAILED',
      message:
        'supplier failed: ECONNREFUSED (connection refused: nothing listens there, or the instance is down)',
    });
  });
});
