import { afterEach, describe, expect, it } from 'vitest';
import { createHttpClient } from '../../src/http/client.js';
import type { HttpRequestOptions } from '../../src/http/request.js';
import { faults, startServer } from '../../src/http/servers.test-helpers.js';

/**
 * SPEC R5 through the HTTP client, method by method: the unit test of `isIdempotentMethod` pins the
 * list, this pins that the client *uses* it. Against a real loopback server that fails the first
 * request with a retryable 500 and answers the second: GET, HEAD, OPTIONS, PUT and DELETE are retried
 * (the server sees two copies); POST and PATCH without an idempotency key are sent exactly once.
 */

const cleanup: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const fn of cleanup.splice(0).reverse()) await fn();
});

type Method = NonNullable<HttpRequestOptions['method']>;

async function firstFailsThenOk(method: Method) {
  const server = await startServer(faults.sequence(faults.status(500), faults.ok('second')));
  const client = createHttpClient({ name: 'orders', origin: server.origin, p99Ms: 100, attempts: 3 });
  cleanup.push(
    () => server.close(),
    () => client.destroy(),
  );
  const response = await client.request('/resource', { method, deadline: 2_000 });
  await response.body.dump();
  // A stray retry of a request that must go once would arrive within a backoff (≤ 25 ms here).
  await new Promise((resolve) => setTimeout(resolve, 50));
  return { status: response.statusCode, seen: server.seen.map((r) => r.method) };
}

describe('SPEC R5: which methods the HTTP client repeats', () => {
  it.each<Method>(['GET', 'HEAD', 'OPTIONS', 'PUT', 'DELETE'])(
    '%s is idempotent: a 500 is retried',
    async (method) => {
      const { status, seen } = await firstFailsThenOk(method);
      expect(seen).toEqual([method, method]);
      expect(status).toBe(200);
    },
  );

  it.each<Method>(['POST', 'PATCH'])('%s without an idempotency key is sent exactly once', async (method) => {
    const { status, seen } = await firstFailsThenOk(method);
    expect(seen).toEqual([method]);
    expect(status).toBe(500);
  });
});
