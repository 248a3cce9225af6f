import type { LookupAddress, LookupOptions } from 'node:dns';
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHttpClient } from './client.js';
import {
  faults,
  startServer,
  startUnacceptingListener,
  type UnacceptingListener,
} from './servers.test-helpers.js';

/**
 * The connect phase on real sockets (SPEC C2, R4): a connect that really hangs (a listener whose
 * accept queue is full: the kernel drops the SYN, as for a dead host), and an origin with two
 * addresses of which the first refuses.
 */

const rejection = async (promise: Promise<unknown>): Promise<Record<string, unknown>> => {
  try {
    await promise;
  } catch (error) {
    return error as Record<string, unknown>;
  }
  throw new Error('expected a rejection');
};

describe('a real connect timeout (SPEC C2)', () => {
  let listener: UnacceptingListener;
  beforeAll(async () => {
    listener = await startUnacceptingListener();
  });
  afterAll(async () => {
    await listener.close();
  });

  it('fires CONNECT_TIMEOUT at the connect timeout, not at the response timeout', async () => {
    const client = createHttpClient({
      name: 'supplier',
      origin: `http://127.0.0.1:${listener.port}`,
      p99Ms: 2_000, // attempt (response) timeout 2800 ms
      attempts: 1,
      connectTimeoutMs: 300,
    });
    const start = performance.now();
    const error = await rejection(client.request('/', { deadline: 10_000 }));
    const elapsed = performance.now() - start;
    await client.destroy();
    expect(error).toMatchObject({
      code: 'CONNECT_TIMEOUT',
      phase: 'connect',
      dependency: 'supplier',
      timeoutMs: 300,
    });
    expect(elapsed).toBeGreaterThanOrEqual(290);
    expect(elapsed).toBeLessThan(700); // undici's own 500 ms-tick timer would land at 500-1000 ms
  });

  it('retries a connect timeout at once, and the default connect timeout fires before the attempt’s', async () => {
    // p99 200 → attempt timeout 280 ms, connect timeout 140 ms: both attempts time out in the connect.
    const client = createHttpClient({
      name: 'supplier',
      origin: `http://127.0.0.1:${listener.port}`,
      p99Ms: 200,
    });
    const events: string[] = [];
    client.dependency.on((e) => {
      if (e.type === 'attempt-end') events.push(`${e.kind} ${e.phase}`);
    });
    const start = performance.now();
    const error = await rejection(client.request('/', { deadline: 5_000 }));
    const elapsed = performance.now() - start;
    await client.destroy();
    expect(error).toMatchObject({ code: 'CONNECT_TIMEOUT', timeoutMs: 140 });
    expect(events).toEqual(['original connect', 'retry connect']);
    expect(elapsed).toBeGreaterThanOrEqual(270);
    expect(elapsed).toBeLessThan(600);
  });

  it('bounds the connect by the remaining deadline: DEADLINE_EXCEEDED when it comes first', async () => {
    const client = createHttpClient({
      name: 'supplier',
      origin: `http://127.0.0.1:${listener.port}`,
      p99Ms: 120, // attempt timeout 168 ms: past the deadline, which then sets the attempt's limit
      connectTimeoutMs: 160,
    });
    const start = performance.now();
    const error = await rejection(client.request('/', { deadline: 150 }));
    const elapsed = performance.now() - start;
    await client.destroy();
    expect(error).toMatchObject({ code: 'DEADLINE_EXCEEDED', dependency: 'supplier' });
    expect(elapsed).toBeGreaterThanOrEqual(145);
    expect(elapsed).toBeLessThan(350);
  });
});

describe('an origin with several addresses (SPEC R4)', () => {
  /** A resolver for `twin.test`: ::1 first (nothing listens there), then 127.0.0.1. */
  const twin = (hostname: string, options: LookupOptions, callback: (...args: unknown[]) => void): void => {
    const addresses: LookupAddress[] = [
      { address: '::1', family: 6 },
      { address: '127.0.0.1', family: 4 },
    ];
    if (hostname !== 'twin.test') callback(Object.assign(new Error('ENOTFOUND'), { code: 'ENOTFOUND' }));
    else if (options.all) callback(null, addresses);
    else callback(null, addresses[0]!.address, addresses[0]!.family);
  };

  const refusedOnIpv6 = (port: number): Promise<boolean> =>
    new Promise((resolve) => {
      const socket = net.connect({ port, host: '::1' });
      socket.once('connect', () => {
        socket.destroy();
        resolve(false);
      });
      socket.once('error', (error: NodeJS.ErrnoException) => resolve(error.code === 'ECONNREFUSED'));
    });

  it('moves on to the next address when the first refuses, within one connect', async (context) => {
    const server = await startServer(faults.ok('from 127.0.0.1'));
    if (!(await refusedOnIpv6(server.port))) {
      await server.close();
      context.skip('something listens on [::1]:port; cannot stage a refusing first address');
    }
    const options = {
      name: 'twin',
      origin: `http://twin.test:${server.port}`,
      p99Ms: 100,
      lookup: twin as never,
    };
    const client = createHttpClient(options);
    const response = await client.request('/');
    expect(await response.body.text()).toBe('from 127.0.0.1');

    const single = createHttpClient({ ...options, autoSelectFamily: false });
    const error = await rejection(single.request('/'));
    expect(error.code).toBe('ECONNREFUSED'); // only the first address was tried
    expect(server.seen).toHaveLength(1);
    await Promise.all([client.close(), single.close(), server.close()]);
  });

  it('passes a refused connect through with its code (retry classification reads it)', async () => {
    const server = await startServer(faults.ok());
    const origin = server.origin;
    await server.close();
    const client = createHttpClient({ name: 'gone', origin, p99Ms: 100, attempts: 1 });
    const error = await rejection(client.request('/'));
    expect(error.code).toBe('ECONNREFUSED');
    await client.close();
  });
});
