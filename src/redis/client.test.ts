import { readFileSync } from 'node:fs';
import { Redis } from 'ioredis';
import { createClient } from 'redis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sleep, systemClock } from '../clock/index.js';
import { runWithDeadline } from '../deadline/ambient.js';
import { Deadline } from '../deadline/deadline.js';
import { isDeadlineExceeded, isDeadlineInsufficient, isInvalidOptions } from '../errors/guards.js';
import { timed } from '../mysql/mariadb.test-helpers.js';
import { instrumentPrazo } from '../otel/instrument.js';
import { createSdk, pointValue } from '../otel/sdk.test-helpers.js';
import { isRetryable } from '../retry/classify.js';
import { type RedisConnection, redisDeadlineClient } from './client.js';
import { clientMajors, holdingProxy, startRedis, type TestRedis } from './redis.test-helpers.js';

/**
 * Real Redis 7 (Debian's redis-server) on 127.0.0.1 through ioredis 5 and node-redis 5; the contract
 * (a blocking command bounded on the server, a late reply never read as another command's) also
 * through ioredis 6 and node-redis 4 and 6, the majors the peer ranges name (SPEC D4, D7, #17 item 2).
 */
let server: TestRedis;
const closers: (() => Promise<unknown> | unknown)[] = [];
beforeAll(async () => {
  server = await startRedis();
});
afterAll(async () => {
  for (const close of closers.reverse()) await close();
  await server?.stop();
});

const ioredis = (port = server.port) => {
  const client = new Redis({ host: '127.0.0.1', port, maxRetriesPerRequest: 1 });
  client.on('error', () => undefined); // a proxy closed under it: reconnect attempts, not test failures
  closers.push(() => client.disconnect());
  return client;
};
const nodeRedis = async () => {
  const client = createClient({ socket: { host: '127.0.0.1', port: server.port } });
  await client.connect();
  closers.push(() => client.destroy());
  return client;
};

const majors = clientMajors(closers);

/** Each `^M.m.p` of a peer range, and the versions the contract above ran on: the same majors. */
describe('the peer ranges say what is tested', () => {
  const repo = new URL('../../', import.meta.url);
  const json = (path: string) => JSON.parse(readFileSync(new URL(path, repo), 'utf8'));
  const peers = json('package.json').peerDependencies as Record<string, string>;
  const majorsOf = (range: string) => range.split('||').map((part) => Number(/\^(\d+)\./.exec(part)?.[1]));
  const tested = (packages: string[]) =>
    packages.map((name) => Number(json(`node_modules/${name}/package.json`).version.split('.')[0]));
  it.each([
    ['ioredis', ['ioredis', 'ioredis6']],
    ['redis', ['redis4', 'redis', 'redis6']],
  ])('%s', (peer, installed) => {
    expect(majorsOf(peers[peer]!).sort()).toEqual(tested(installed).sort());
    expect(
      Object.keys(majors).filter((k) => k.startsWith(peer === 'redis' ? 'node-redis' : 'ioredis')),
    ).toHaveLength(installed.length);
  });
});

describe('redisDeadlineClient on real Redis', () => {
  for (const [kind, make] of Object.entries(majors)) {
    it(`${kind}: BLPOP with a 10 s block under a 300 ms deadline returns at the deadline, and the next command gets its own reply`, async () => {
      const raw = await make(server.port);
      const redis = redisDeadlineClient(raw, { name: 'jobs-redis' });
      closers.push(() => redis.close());
      await redis.command('SET', [`${kind}:k`, 'own-value']);
      const { value, error, ms } = await timed(() =>
        redis.command('BLPOP', [`${kind}:empty`, 10], { deadline: Deadline.after(300) }),
      );
      expect(error).toBeUndefined();
      expect(value).toBeNull(); // the server's own timeout: nothing arrived in time
      // the server ends the block 100 ms before the deadline (Redis checks block timeouts 10 times a
      // second): ~200-300 ms; the bound leaves room for a loaded machine (a client-side give-up would
      // have rejected, not resolved nil)
      expect(ms).toBeGreaterThan(150);
      expect(ms).toBeLessThan(450);
      const next = await timed(() => redis.command('GET', [`${kind}:k`]));
      expect(next.value).toBe('own-value');
      expect(next.ms).toBeLessThan(100);
      // the same connection, not a replacement: nothing was left pending on it
      expect(redis.stuck).toBe(0);
      const [pong, got] = await Promise.all([redis.command('PING'), redis.command('GET', [`${kind}:k`])]);
      expect([pong, got]).toEqual(['PONG', 'own-value']);
    });

    it(`${kind}: a reply that does not come: DEADLINE_EXCEEDED, outcome unknown, the connection set aside, the next command on another; the late write did happen`, async () => {
      const proxy = await holdingProxy(server.port);
      closers.push(() => proxy.close());
      const raw = await make(proxy.port);
      const redis = redisDeadlineClient(raw, { name: 'jobs-redis' });
      closers.push(() => redis.close());
      const key = `held:${kind}`;
      await redis.command('SET', [key, '0']);
      proxy.hold(0);
      const { error, ms } = await timed(() =>
        redis.command('INCR', [key], { deadline: Deadline.after(200) }),
      );
      expect(isDeadlineExceeded(error)).toBe(true);
      expect(error).toMatchObject({ dependency: 'jobs-redis', outcome: 'unknown' });
      expect((error as Error).message).toMatch(/outcome is unknown/);
      expect(isRetryable(error)).toBe(false);
      expect(ms).toBeGreaterThan(200);
      expect(ms).toBeLessThan(600);
      expect(redis.stuck).toBe(1);
      // the next command goes to a new connection and reads its own reply
      const next = await redis.command('GET', [key], { deadline: Deadline.after(2_000) });
      expect(next).toBe('1'); // the INCR was applied: its outcome really was unknown
      expect(proxy.connections).toBe(2);
      proxy.release(0);
      for (let i = 0; i < 40 && redis.stuck > 0; i++) await sleep(systemClock, 25);
      expect(redis.stuck).toBe(0);
      // the late reply was consumed by its own command: the original connection answers its own
      expect(await redis.command('INCR', [key])).toBe(2);
      expect(await redis.command('GET', [key])).toBe('2');
    });
  }

  it('control: a client-side command timeout only leaves the BLPOP blocking its connection on the server', async () => {
    const raw = new Redis({ host: '127.0.0.1', port: server.port, commandTimeout: 300 });
    closers.push(() => raw.disconnect());
    await raw.ping();
    const { error, ms } = await timed(() => raw.blpop('control:empty', 10));
    expect((error as Error).message).toMatch(/timed out/i);
    expect(ms).toBeLessThan(1_000);
    // the next command queues behind the BLPOP still blocking on the server
    const next = await timed(() => raw.ping());
    expect(next.error).toBeDefined();
    const clients = (await ioredis().call('CLIENT', 'LIST')) as string;
    expect(clients).toMatch(/cmd=blpop/);
    raw.disconnect();
  });

  it('XREAD BLOCK and WAIT are bounded the same way', async () => {
    const redis = redisDeadlineClient(ioredis() as unknown as RedisConnection);
    const xread = await timed(() =>
      redis.command('XREAD', ['COUNT', 1, 'BLOCK', 10_000, 'STREAMS', 'no-stream', '$'], {
        deadline: Deadline.after(300),
      }),
    );
    expect(xread.error).toBeUndefined();
    expect(xread.value).toBeNull();
    expect(xread.ms).toBeLessThan(450);
    const wait = await timed(() => redis.command('WAIT', [1, 10_000], { deadline: Deadline.after(300) }));
    expect(wait.value).toBe(0); // no replica acknowledged in time
    expect(wait.ms).toBeLessThan(450);
  });

  it('its events reach prazo/otel: attempts, a timeout in phase deadline, a fast failure (real OpenTelemetry SDK)', async () => {
    const sdk = createSdk();
    const proxy = await holdingProxy(server.port);
    closers.push(() => proxy.close());
    const redis = redisDeadlineClient(ioredis(proxy.port) as unknown as RedisConnection, {
      name: 'cache',
      p99Ms: 30,
    });
    closers.push(() => redis.close());
    const otel = instrumentPrazo({ meterProvider: sdk.provider });
    otel.addDependency(redis);
    await redis.command('PING', [], { deadline: Deadline.after(1_000) });
    proxy.hold(0);
    await redis.command('GET', ['x'], { deadline: Deadline.after(100) }).catch(() => undefined);
    await redis.command('GET', ['x'], { deadline: Deadline.after(10) }).catch(() => undefined);
    proxy.release(0);
    const metrics = await sdk.collect();
    const d = { 'prazo.dependency': 'cache' };
    expect(
      pointValue(metrics.get('prazo.dependency.attempts'), { ...d, 'prazo.attempt.kind': 'original' }),
    ).toBe(2);
    expect(
      pointValue(metrics.get('prazo.dependency.timeouts'), { ...d, 'prazo.timeout.phase': 'deadline' }),
    ).toBe(1);
    expect(pointValue(metrics.get('prazo.dependency.deadline_insufficient'), d)).toBe(1);
    otel.dispose();
    await sdk.shutdown();
  });

  it('below the p99 nothing is sent', async () => {
    const raw = ioredis();
    await raw.set('p99:n', '0');
    const redis = redisDeadlineClient(raw as unknown as RedisConnection, { p99Ms: 50 });
    const error = await redis
      .command('INCR', ['p99:n'], { deadline: Deadline.after(20) })
      .catch((e: unknown) => e);
    expect(isDeadlineInsufficient(error)).toBe(true);
    const ambient = await runWithDeadline(Deadline.after(10), () => redis.command('INCR', ['p99:n'])).catch(
      (e: unknown) => e,
    );
    expect(isDeadlineInsufficient(ambient)).toBe(true);
    expect(await raw.get('p99:n')).toBe('0');
  });

  it('a client that is not connected: the command waits no longer than the deadline and is never sent late', async () => {
    const proxy = await holdingProxy(server.port);
    const raw = new Redis({ host: '127.0.0.1', port: proxy.port, lazyConnect: true });
    raw.on('error', () => undefined);
    closers.push(() => raw.disconnect());
    const redis = redisDeadlineClient(raw as unknown as RedisConnection);
    const { error, ms } = await timed(() =>
      redis.command('SET', ['never:k', 'late'], { deadline: Deadline.after(150) }),
    );
    expect(isDeadlineExceeded(error)).toBe(true);
    expect((error as { outcome?: string }).outcome).toBeUndefined();
    expect(ms).toBeLessThan(600);
    await raw.connect();
    await new Promise((r) => setTimeout(r, 100));
    expect(await ioredis().get('never:k')).toBeNull();
    await proxy.close();
  });

  it('the caller aborting rejects at once with its reason', async () => {
    const redis = redisDeadlineClient((await nodeRedis()) as unknown as RedisConnection);
    const controller = new AbortController();
    const reason = new Error('client went away');
    setTimeout(() => controller.abort(reason), 100);
    const { error, ms } = await timed(() =>
      redis.command('BLPOP', ['abort:empty', 0], {
        deadline: Deadline.after(5_000),
        signal: controller.signal,
      }),
    );
    expect(error).toBe(reason);
    expect(ms).toBeLessThan(1_000);
  });

  it('refuses hostile options together, with did-you-mean', async () => {
    const raw = ioredis() as unknown as RedisConnection;
    const built = (() => {
      try {
        return redisDeadlineClient(raw, { p99: 1, maxConnections: 0 } as never);
      } catch (e) {
        return e;
      }
    })();
    expect(isInvalidOptions(built)).toBe(true);
    expect((built as Error).message).toMatch(/p99Ms[\s\S]*maxConnections|maxConnections[\s\S]*p99Ms/);
    expect(() => redisDeadlineClient({} as never)).toThrow(/ioredis or node-redis/);
    const redis = redisDeadlineClient(raw);
    const error = await redis
      .command('PING', [], { deadlin: Deadline.after(1) } as never)
      .catch((e: unknown) => e);
    expect(isInvalidOptions(error)).toBe(true);
    expect((error as Error).message).toContain('deadline');
  });
});
