import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sleep, systemClock } from '../clock/index.js';
import { Deadline } from '../deadline/deadline.js';
import { isDeadlineExceeded } from '../errors/guards.js';
import { type RedisConnection, type RedisDeadlineClient, redisDeadlineClient } from './client.js';
import {
  clientMajors,
  type HoldingProxy,
  holdingProxy,
  startRedis,
  type TestRedis,
} from './redis.test-helpers.js';

/**
 * A caller's sequence stays on one connection, and a connection inside MULTI is never anyone else's
 * (#24 item 13); one wait per connection however many commands wait on it (#24 item 14). Real Redis 7
 * (Debian's redis-server) on 127.0.0.1, through every major the peer ranges name: ioredis 5 and 6,
 * node-redis 4, 5 and 6. A held reply is a real one, held back by a TCP proxy.
 */
let server: TestRedis;
let admin: Redis;
const closers: (() => Promise<unknown> | unknown)[] = [];
beforeAll(async () => {
  server = await startRedis();
  admin = new Redis({ host: '127.0.0.1', port: server.port });
});
afterAll(async () => {
  for (const close of closers.reverse()) await close();
  admin?.disconnect();
  await server?.stop();
});
const majors = clientMajors(closers);

/** The clients the server has inside a MULTI right now (CLIENT LIST flag `x`). */
const insideMulti = async () =>
  ((await admin.call('CLIENT', 'LIST')) as string).split('\n').filter((line) => /flags=\S*x/.test(line));

/** A prazo client over a client of `make` that reaches the server through a holding proxy. */
const through = async (
  make: (port: number) => Promise<RedisConnection>,
  maxConnections = 3,
): Promise<{ redis: RedisDeadlineClient; proxy: HoldingProxy; raw: RedisConnection }> => {
  const proxy = await holdingProxy(server.port);
  closers.push(() => proxy.close());
  const raw = await make(proxy.port);
  const redis = redisDeadlineClient(raw, { name: 'seq-redis', maxConnections });
  closers.push(() => redis.close());
  return { redis, proxy, raw };
};

/**
 * One command set aside on the proxy's `index`-th connection: its reply held back past its 100 ms
 * deadline, then let through ~300 ms after it was sent (as in the issue).
 */
const setAside = async (redis: RedisDeadlineClient, proxy: HoldingProxy, index: number) => {
  proxy.hold(index);
  const error = await redis.command('PING', [], { deadline: Deadline.after(100) }).catch((e: unknown) => e);
  expect(isDeadlineExceeded(error)).toBe(true);
  systemClock.setTimer(() => proxy.release(index), 150);
};
/** Until every late reply has come (the set-aside connection is free again). */
const settled = async (redis: RedisDeadlineClient) => {
  for (let i = 0; i < 100 && redis.stuck > 0; i++) await sleep(systemClock, 20);
  expect(redis.stuck).toBe(0);
};

describe('one caller, one connection (#24 item 13)', () => {
  for (const [kind, make] of Object.entries(majors)) {
    it(`${kind}: MULTI through command() after a set-aside is refused before anything is sent; the same INCRs as transaction() run inside it; no connection is left in MULTI, later writes all applied`, async () => {
      const { redis, proxy } = await through(make);
      const key = `multi:${kind}`;
      await redis.command('SET', [key, '0']);
      await setAside(redis, proxy, 0);
      // before #24: MULTI went to the duplicate ("OK"), the INCRs to the first connection once its
      // held reply came (1, 2: outside any transaction), EXEC answered "ERR EXEC without MULTI"
      const multi = await redis.command('MULTI').catch((e: unknown) => e);
      expect(multi).toBeInstanceOf(TypeError);
      expect((multi as Error).message).toMatch(/transaction\(\[\.\.\.\]\).*session\(fn\)/);
      // what the caller meant, written together on the connection in use (a duplicate, opened now)
      expect(
        await redis.transaction([
          ['INCR', [key]],
          ['INCR', [key]],
        ]),
      ).toEqual([1, 2]);
      await settled(redis); // the held reply comes: the first connection is free again
      await expect(redis.command('EXEC')).rejects.toThrow(TypeError);
      expect(await insideMulti()).toEqual([]);
      // before #24: the duplicate left inside MULTI took the next writes as QUEUED, 0 of 4 applied
      await setAside(redis, proxy, 1);
      const writes = [0, 1, 2, 3].map((i) => redis.command('SET', [`${key}:${i}`, 'v']));
      expect(await Promise.all(writes)).toEqual(['OK', 'OK', 'OK', 'OK']);
      await settled(redis);
      const applied = await Promise.all([0, 1, 2, 3].map((i) => redis.command('GET', [`${key}:${i}`])));
      expect(applied).toEqual(['v', 'v', 'v', 'v']);
      expect(await redis.command('GET', [key])).toBe('2');
    });

    it(`${kind}: a caller's commands stay on the connection in use: a pipeline in one tick, and the sequence after the set-aside connection is free again`, async () => {
      const { redis, proxy } = await through(make);
      await setAside(redis, proxy, 0);
      const id = await redis.command('CLIENT', ['ID']);
      const tick = await Promise.all(Array.from({ length: 20 }, () => redis.command('CLIENT', ['ID'])));
      expect(new Set(tick)).toEqual(new Set([id]));
      await settled(redis);
      // before #24: the first free connection was taken again, mid-sequence (another CLIENT ID)
      for (let i = 0; i < 5; i++) expect(await redis.command('CLIENT', ['ID'])).toBe(id);
      const key = `pipe:${kind}`;
      const replies = await redis.pipeline([
        ['CLIENT', ['ID']],
        ['SET', [key, '0']],
        ...Array.from({ length: 10 }, () => ['INCR', [key]] as const),
        ['LPUSH', [key, 'x']], // WRONGTYPE: its error in its place, the rest still answered
        ['INCR', [key]],
      ]);
      expect(replies.map((r) => (r.status === 'fulfilled' ? r.value : 'error'))).toEqual([
        id,
        'OK',
        ...Array.from({ length: 10 }, (_, i) => i + 1),
        'error',
        11,
      ]);
      expect(String((replies[12] as PromiseRejectedResult).reason)).toMatch(/WRONGTYPE/);
    });

    it(`${kind}: transaction() writes MULTI…EXEC together: other callers' commands in the same tick answer as themselves, never QUEUED; EXECABORT and runtime errors as the server gives them`, async () => {
      const redis = redisDeadlineClient(await make(server.port), { name: 'seq-redis' });
      closers.push(() => redis.close());
      const key = `tx:${kind}`;
      const other = `tx-other:${kind}`;
      await redis.command('SET', [key, '0']);
      const [tx, set, get, incr] = await Promise.all([
        redis.transaction(
          [
            ['INCR', [key]],
            ['INCR', [key]],
          ],
          { deadline: Deadline.after(2_000) },
        ),
        redis.command('SET', [other, 'x']),
        redis.command('GET', [other]),
        redis.transaction([['INCR', [key]]]),
      ]);
      expect([tx, set, get, incr]).toEqual([[1, 2], 'OK', 'x', [3]]);
      const aborted = await redis.transaction([['INCR', [key]], ['NOSUCHCOMMAND']]).catch((e: unknown) => e);
      expect(String(aborted)).toMatch(/EXECABORT/);
      expect(await redis.command('GET', [key])).toBe('3'); // nothing of the aborted one applied
      const mixed = await redis.transaction<[number, unknown]>([
        ['INCR', [key]],
        ['LPUSH', [key, 'x']],
      ]);
      expect(mixed[0]).toBe(4);
      expect(String(mixed[1])).toMatch(/WRONGTYPE/);
      expect(await insideMulti()).toEqual([]);
      for (const bad of [[['MULTI']], [['EXEC']], [['WATCH', [key]]], [['SELECT', [1]]], []] as const) {
        await expect(redis.transaction(bad as never)).rejects.toThrow(TypeError);
      }
    });

    it(`${kind}: session(): WATCH, GET, MULTI, SET, EXEC on one connection while a held reply comes and others write meanwhile; a changed watched key gives null`, async () => {
      const { redis, proxy } = await through(make);
      const key = `session:${kind}`;
      await redis.command('SET', [key, '10']);
      await setAside(redis, proxy, 0);
      const result = await redis.session(
        async (s) => {
          const id = await s.command('CLIENT', ['ID']);
          expect(await s.command('WATCH', [key])).toBe('OK');
          const value = Number(await s.command('GET', [key]));
          await settled(redis); // the held reply comes in the middle of the sequence
          expect(await redis.command('SET', [`${key}:other`, 'o'])).toBe('OK'); // someone else, meanwhile
          expect(await s.command('MULTI')).toBe('OK');
          expect(await s.command('SET', [key, String(value + 1)])).toBe('QUEUED');
          expect(await redis.command('GET', [`${key}:other`])).toBe('o'); // not QUEUED: not in the MULTI
          const exec = await s.command('EXEC');
          expect(await s.command('CLIENT', ['ID'])).toBe(id);
          return exec;
        },
        { deadline: Deadline.after(5_000) },
      );
      expect(result).toEqual(['OK']);
      expect(await redis.command('GET', [key])).toBe('11');
      const conflict = await redis.session(async (s) => {
        await s.command('WATCH', [key]);
        await redis.command('SET', [key, 'changed']); // another caller, on another connection
        return s.transaction([['SET', [key, 'mine']]]);
      });
      expect(conflict).toBeNull();
      expect(await redis.command('GET', [key])).toBe('changed');
      expect(await insideMulti()).toEqual([]);
    });

    it(`${kind}: a session left inside MULTI is DISCARDed before its connection serves anyone else (maxConnections 1: the next caller waits for it)`, async () => {
      const redis = redisDeadlineClient(await make(server.port), { name: 'seq-redis', maxConnections: 1 });
      closers.push(() => redis.close());
      const key = `reset:${kind}`;
      let next: Promise<unknown> | undefined;
      const failure = new Error('business rule');
      const error = await redis
        .session(async (s) => {
          await s.command('WATCH', [key]);
          await s.command('MULTI');
          expect(await s.command('SET', [key, 'inside'])).toBe('QUEUED');
          next = redis.command('SET', [`${key}:next`, 'after'], { deadline: Deadline.after(2_000) });
          await sleep(systemClock, 50);
          throw failure;
        })
        .catch((e: unknown) => e);
      expect(error).toBe(failure);
      expect(await next).toBe('OK'); // its own reply, not QUEUED
      expect(await redis.command('GET', [key])).toBeNull(); // the queued SET was discarded
      expect(await redis.command('GET', [`${key}:next`])).toBe('after');
      expect(await insideMulti()).toEqual([]);
      // a waiting caller gives up at its deadline, not later
      const held = redis.session(() => sleep(systemClock, 400));
      const waited = await redis
        .command('PING', [], { deadline: Deadline.after(100) })
        .catch((e: unknown) => e);
      expect(isDeadlineExceeded(waited)).toBe(true);
      await held;
    });
  }

  it('refuses connection-state commands through command() before anything is sent, and a session used after its end', async () => {
    const redis = redisDeadlineClient((await majors['ioredis 5']!(server.port)) as RedisConnection);
    closers.push(() => redis.close());
    for (const [name, args] of [
      ['multi', []],
      ['WATCH', ['k']],
      ['select', [1]],
      ['SUBSCRIBE', ['c']],
      ['CLIENT', ['REPLY', 'OFF']],
      ['RESET', []],
    ] as const) {
      await expect(redis.command(name, args)).rejects.toThrow(TypeError);
    }
    await expect(redis.session(async (s) => s.command('SELECT', [1]))).rejects.toThrow(TypeError);
    let kept: { command(name: string): Promise<unknown> } | undefined;
    await redis.session(async (s) => {
      kept = s;
    });
    await expect(kept!.command('PING')).rejects.toThrow(/session has ended/);
    expect(await redis.command('CLIENT', ['ID'])).toEqual(expect.any(Number));
  });
});

describe('one wait per connection (#24 item 14)', () => {
  for (const [kind, make] of Object.entries(majors)) {
    it(`${kind}: 300 commands waiting for a duplicate that is not ready share one wait (at most one 'ready' listener, no MaxListenersExceededWarning) and are all answered once it is`, async () => {
      const proxy = await holdingProxy(server.port);
      closers.push(() => proxy.close());
      const raw = await make(proxy.port);
      type Emitter = { listenerCount(event: string): number };
      let duplicate: Emitter | undefined;
      const own = (raw as unknown as { duplicate: (...args: unknown[]) => Emitter }).duplicate.bind(raw);
      (raw as unknown as { duplicate: unknown }).duplicate = (...args: unknown[]) => {
        duplicate = own(...args);
        return duplicate;
      };
      const redis = redisDeadlineClient(raw, { name: 'ready-redis' });
      closers.push(() => redis.close());
      const warnings: Error[] = [];
      const onWarning = (warning: Error) => warnings.push(warning);
      process.on('warning', onWarning);
      try {
        expect(await redis.command('PING')).toBe('PONG'); // connected (ioredis connects in the background)
        await setAside(redis, proxy, 0);
        proxy.hold(1); // the duplicate's own handshake (ioredis: its INFO ready check) is held: not ready
        const pending = Array.from({ length: 300 }, (_, i) =>
          redis.command('SET', [`ready:${kind}:${i}`, String(i)], { deadline: Deadline.after(5_000) }),
        );
        await sleep(systemClock, 150);
        expect(duplicate).toBeDefined();
        // ioredis's own connect() holds one while it connects, prazo one however many commands
        // wait; before #24: one per waiting command on ioredis (301 in all)
        expect(duplicate!.listenerCount('ready')).toBeLessThanOrEqual(2);
        proxy.release(1);
        const replies = await Promise.all(pending);
        expect(replies.every((r) => r === 'OK')).toBe(true);
        expect(await admin.get(`ready:${kind}:299`)).toBe('299');
        await sleep(systemClock, 20); // a warning is emitted on the next tick
        expect(warnings.filter((w) => w.name === 'MaxListenersExceededWarning')).toEqual([]);
      } finally {
        process.off('warning', onWarning);
      }
    });
  }
});
