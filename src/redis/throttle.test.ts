import fc from 'fast-check';
import { Redis, ReplyError } from 'ioredis';
import { createClient } from 'redis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { FakeClock } from '../clock/fake.js';
import { sleep, systemClock } from '../clock/index.js';
import { Deadline } from '../deadline/deadline.js';
import type { DependencyEvent } from '../dependency/types.js';
import { isThrottled } from '../errors/guards.js';
import { freePort } from '../mysql/mariadb.test-helpers.js';
import { seededRandom } from '../testing/random.js';
import { type RedisConnection, redisDeadlineClient, serverAnswered } from './client.js';
import { holdingProxy, startRedis, type TestRedis } from './redis.test-helpers.js';

/**
 * Issue 23 item 1 for Redis: `redisDeadlineClient` admits every command, transaction, pipeline and
 * session through the executor's own `AdaptiveThrottle` (one per client), counts each exchange when
 * its outcome is known, and refuses locally (THROTTLED) without writing anything. Real redis-server
 * and ioredis / node-redis on 127.0.0.1; the throttle's and the deadlines' time is a FakeClock.
 */

let healthy: TestRedis;
const closers: (() => unknown)[] = [];
beforeAll(async () => {
  healthy = await startRedis();
});
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});
afterAll(async () => {
  await healthy?.stop();
});

/** An ioredis client on `port` that reconnects every 20 ms, its `call`s counted (what reached the socket). */
function counted(port: number): { client: Redis; sent: () => number } {
  const client = new Redis({ host: '127.0.0.1', port, maxRetriesPerRequest: 1, retryStrategy: () => 20 });
  client.on('error', () => undefined); // a server that is down: reconnect attempts, not test failures
  closers.push(() => client.disconnect());
  const duplicate = client.duplicate.bind(client);
  (client as unknown as { duplicate: unknown }).duplicate = (...args: never[]) => {
    const copy = duplicate(...args);
    copy.on('error', () => undefined);
    return copy;
  };
  let sent = 0;
  const call = client.call.bind(client) as (...args: unknown[]) => unknown;
  (client as unknown as { call: unknown }).call = (...args: unknown[]) => {
    sent += 1;
    return call(...args);
  };
  return { client, sent: () => sent };
}

interface Outcome {
  ok: boolean;
  refused: boolean;
  error?: unknown;
}

/**
 * Runs `call` to its end while the fake clock moves 1 ms per real ms (a real socket answers in real
 * time, the deadline's timer fires in fake time), then pads the step to `stepMs` of fake time.
 */
async function settle(clock: FakeClock, call: () => Promise<unknown>, stepMs = 5): Promise<Outcome> {
  const start = clock.now();
  let outcome: Outcome | undefined;
  call().then(
    () => {
      outcome = { ok: true, refused: false };
    },
    (error: unknown) => {
      outcome = { ok: false, refused: isThrottled(error), error };
    },
  );
  await Promise.resolve();
  while (outcome === undefined) {
    await clock.advanceAsync(1);
    await sleep(systemClock, 1);
  }
  const spent = clock.now() - start;
  if (spent < stepMs) await clock.advanceAsync(stepMs - spent);
  return outcome;
}

describe('redisDeadlineClient: adaptive throttling (issue 23 item 1)', () => {
  it('a Redis that is down: after the window ~90% refused, nothing written for a refused command, recovery once it is back', async () => {
    const clock = new FakeClock();
    const port = await freePort(); // nothing listens: connections refused
    const { client, sent } = counted(port);
    const redis = redisDeadlineClient(client, { name: 'cache', clock, random: seededRandom(7) });
    const events: DependencyEvent[] = [];
    redis.on((e) => events.push(e));
    const get = () => redis.command('GET', ['k'], { deadline: Deadline.after(20, { clock }) });

    const outcomes: Outcome[] = [];
    for (let i = 0; i < 300; i += 1) outcomes.push(await settle(clock, get));
    const refused = outcomes.filter((o) => o.refused);
    expect(outcomes.every((o) => !o.ok)).toBe(true);
    for (const o of refused) expect(o.error).toMatchObject({ code: 'THROTTLED', dependency: 'cache' });
    expect(sent()).toBe(0); // never connected: nothing was written, refused or not
    const late = outcomes.slice(100); // after the first window (20-25 ms a step)
    const share = late.filter((o) => o.refused).length / late.length;
    expect(share).toBeGreaterThan(0.8);
    expect(share).toBeLessThan(0.95);
    expect(events.filter((e) => e.type === 'throttled')).toHaveLength(refused.length);
    // A refused command is no attempt: the attempts are the commands that waited for the server.
    expect(events.filter((e) => e.type === 'attempt')).toHaveLength(outcomes.length - refused.length);
    expect(redis.throttling()!.probability).toBeCloseTo(0.9, 5);
    // A refused session holds no connection either.
    let sessions = 0;
    for (let i = 0; i < 20; i += 1) {
      const o = await settle(clock, () => redis.session(async () => undefined));
      if (o.refused) sessions += 1;
    }
    expect(sessions).toBeGreaterThan(10);

    // Redis comes back on the same port.
    const back = await startRedis({ port });
    closers.push(() => back.stop());
    const returnedAt = clock.now();
    let recoveredAt: number | undefined;
    const recent: boolean[] = [];
    for (let i = 0; i < 2_000 && recoveredAt === undefined; i += 1) {
      const o = await settle(clock, get);
      recent.push(o.ok);
      if (recent.length > 200) recent.shift(); // the last second of commands
      if (recent.length === 200 && recent.filter(Boolean).length >= 198) recoveredAt = clock.now();
    }
    expect(recoveredAt).toBeDefined();
    expect(recoveredAt! - returnedAt).toBeLessThan(4_000); // the ≈ 1.65 s ramp and that second, and a reconnect
    expect(redis.throttling()!.probability).toBe(0);
  }, 60_000);

  it('a healthy Redis at a burst: 300 concurrent commands and 50 pipelines, nothing refused', async () => {
    const { client } = counted(healthy.port);
    const redis = redisDeadlineClient(client, { maxConnections: 8 });
    const calls = [
      ...Array.from({ length: 300 }, (_, i) => redis.command('SET', [`k${i}`, i])),
      ...Array.from({ length: 50 }, () =>
        redis.pipeline([
          ['GET', ['k1']],
          ['GET', ['k2']],
        ]),
      ),
    ];
    const results = await Promise.allSettled(calls);
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(350);
    expect(redis.throttling()).toEqual({ requests: 350, accepts: 350, probability: 0 });
  });

  it("counts the server's error replies as answers (WRONGTYPE, ioredis and node-redis), LOADING and a full server not", async () => {
    const clock = new FakeClock();
    const { client } = counted(healthy.port);
    const node = createClient({ socket: { host: '127.0.0.1', port: healthy.port } });
    await node.connect();
    closers.push(() => node.destroy());
    await client.set('str', 'x');
    for (const c of [client, node]) {
      const redis = redisDeadlineClient(c as unknown as RedisConnection, { clock, random: seededRandom(2) });
      for (let i = 0; i < 100; i += 1) {
        const o = await settle(clock, () => redis.command('LPUSH', ['str', 'y']));
        expect(o.refused).toBe(false);
        expect(serverAnswered(o.error)).toBe(true);
      }
      expect(redis.throttling()).toMatchObject({ requests: 100, accepts: 100, probability: 0 });
    }
    expect(serverAnswered(new ReplyError('LOADING Redis is loading the dataset in memory'))).toBe(false);
    expect(serverAnswered(new ReplyError('ERR max number of clients reached'))).toBe(false);
    expect(serverAnswered(new ReplyError('WRONGTYPE Operation against a key'))).toBe(true);
    expect(serverAnswered(new Error('Connection is closed.'))).toBe(false);
  });

  it('a session is admitted at its start and its commands counted, never refused inside it', async () => {
    const clock = new FakeClock();
    const proxy = await holdingProxy(healthy.port);
    closers.push(() => proxy.close());
    const { client } = counted(proxy.port);
    await client.ping();
    const redis = redisDeadlineClient(client, {
      clock,
      random: seededRandom(3),
      throttle: { minRequests: 0 },
    });
    proxy.hold(0); // the server stops answering the client's connection...
    proxy.hold(1); // ...and the one a session opens
    const inside: Outcome[] = [];
    await redis.session(async (s) => {
      for (let i = 0; i < 40; i += 1)
        inside.push(
          await settle(clock, () => s.command('GET', ['k'], { deadline: Deadline.after(10, { clock }) })),
        );
    });
    expect(inside.filter((o) => o.refused)).toHaveLength(0); // failing all along, never cut halfway
    expect(inside.every((o) => !o.ok)).toBe(true);
    expect(redis.throttling()).toMatchObject({ requests: 40, accepts: 0 });
    expect(redis.throttling()!.probability).toBeCloseTo(0.9, 5);
    const after: Outcome[] = [];
    for (let i = 0; i < 20; i += 1)
      after.push(
        await settle(clock, () =>
          redis.session(async (s) => s.command('GET', ['k']), { deadline: Deadline.after(10, { clock }) }),
        ),
      );
    expect(after.filter((o) => o.refused).length).toBeGreaterThan(10); // the next sessions are refused at their start
  }, 30_000);

  it('a refused call touches nothing: no write, no connection, an event each, not an attempt (property)', async () => {
    const port = await freePort();
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.constantFrom('command', 'pipeline', 'transaction', 'session'), {
          minLength: 15,
          maxLength: 40,
        }),
        fc.integer({ min: 1, max: 2 ** 31 - 1 }),
        async (kinds, seed) => {
          const clock = new FakeClock();
          const { client, sent } = counted(port);
          const redis = redisDeadlineClient(client, {
            clock,
            random: seededRandom(seed),
            throttle: { minRequests: 0 },
          });
          const events: DependencyEvent[] = [];
          redis.on((e) => events.push(e));
          const options = () => ({ deadline: Deadline.after(10, { clock }) });
          let refused = 0;
          for (const kind of kinds) {
            const before = events.filter((e) => e.type === 'attempt').length;
            const o = await settle(clock, () =>
              kind === 'command'
                ? redis.command('GET', ['k'], options())
                : kind === 'pipeline'
                  ? redis.pipeline([['GET', ['k']]], options())
                  : kind === 'transaction'
                    ? redis.transaction([['GET', ['k']]], options())
                    : redis.session((s) => s.command('GET', ['k']), options()),
            );
            if (o.refused) {
              refused += 1;
              expect(events.filter((e) => e.type === 'attempt').length).toBe(before);
              expect(redis.stuck).toBe(0);
            }
          }
          expect(sent()).toBe(0);
          expect(events.filter((e) => e.type === 'throttled')).toHaveLength(refused);
          expect(redis.throttling()!.accepts).toBe(0);
          await redis.close();
        },
      ),
      { numRuns: 8 },
    );
  }, 120_000);

  it('throttle: false switches it off; bad throttle options are refused with their names', () => {
    const { client } = counted(healthy.port);
    expect(redisDeadlineClient(client, { throttle: false }).throttling()).toBeUndefined();
    expect(() => redisDeadlineClient(client, { throttle: { windowMS: 5 } as never })).toThrow(
      /did you mean `windowMs`/,
    );
  });
});
