import { Redis } from 'ioredis';
import { createClient } from 'redis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { FakeClock } from '../clock/fake.js';
import { sleep, systemClock } from '../clock/index.js';
import { runWithDeadline } from '../deadline/ambient.js';
import { Deadline } from '../deadline/deadline.js';
import { createDependency, type Dependency } from '../dependency/dependency.js';
import type { DependencyOptions } from '../dependency/options.js';
import type { DependencyEvent } from '../dependency/types.js';
import { isDeadlineInsufficient, isInvalidOptions, isThrottled } from '../errors/guards.js';
import type { InvalidOptionsError } from '../errors/options.js';
import { createLatencyRecorder } from '../latency/recorder.js';
import type { LatencySource } from '../latency/types.js';
import { timed } from '../mysql/mariadb.test-helpers.js';
import { dependencyFailureOf } from '../retry/pushback.js';
import {
  type RedisConnection,
  type RedisDeadlineClient,
  redisDeadlineClient,
  serverAnswered,
} from './client.js';
import { droppingProxy, holdingProxy, startRedis, type TestRedis } from './redis.test-helpers.js';

/**
 * `redisDeadlineClient(client, { dependency })` (issue #25 item 1): each exchange with the server is
 * one call of the executor (`dependency.execute`, src/redis/executor.ts), which owns D4, the throttle,
 * the concurrency limit, the retry plan, the recorder and the events; the client keeps its
 * connections, the blocking commands' server-side block and the setting aside of late replies. Real
 * Redis 7 (Debian's redis-server) on 127.0.0.1, through ioredis 5 and node-redis 5; what reached the
 * server is read from `INFO commandstats` or counted by a TCP proxy that closes a connection under
 * the client when a marked key is written (the command never reaches the server).
 */

let server: TestRedis;
let admin: Redis;
const closers: (() => unknown)[] = [];
beforeAll(async () => {
  server = await startRedis();
  admin = new Redis({ host: '127.0.0.1', port: server.port });
});
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});
afterAll(async () => {
  admin?.disconnect();
  await server?.stop();
});

/** Adds an error listener to the client's duplicates too (a closed proxy: reconnects, not failures). */
function quiet<C extends { on(event: 'error', f: () => void): unknown; duplicate(...a: never[]): unknown }>(
  client: C,
): C {
  client.on('error', () => undefined);
  const duplicate = client.duplicate.bind(client) as (...a: never[]) => C;
  (client as { duplicate: unknown }).duplicate = (...args: never[]) => quiet(duplicate(...args));
  return client;
}

/**
 * ioredis with `maxRetriesPerRequest: 0`: a command whose connection closes fails at once, instead of
 * being written again by ioredis itself after its reconnect (`autoResendUnfulfilledCommands`, writes
 * included); both reconnect after 20 ms.
 */
const KINDS: Record<string, (port: number) => Promise<RedisConnection>> = {
  'ioredis 5': async (port) => {
    const client = quiet(
      new Redis({ host: '127.0.0.1', port, maxRetriesPerRequest: 0, retryStrategy: () => 20 }),
    );
    closers.push(() => client.disconnect());
    return client as unknown as RedisConnection;
  },
  'node-redis 5': async (port) => {
    const client = quiet(createClient({ socket: { host: '127.0.0.1', port, reconnectStrategy: () => 20 } }));
    await client.connect();
    closers.push(() => client.destroy());
    return client as unknown as RedisConnection;
  },
};

/** How many times the server ran `command` (its `INFO commandstats` line). */
async function calls(command: string): Promise<number> {
  const info = await admin.info('commandstats');
  const line = new RegExp(`^cmdstat_${command}:calls=(\\d+)`, 'm').exec(info);
  return line === null ? 0 : Number(line[1]);
}

function dependencyOf(options: Partial<DependencyOptions> = {}): {
  dep: Dependency;
  events: DependencyEvent[];
} {
  const dep = createDependency({ name: 'cache', p99Ms: 300, recorder: { windowMs: 600_000 }, ...options });
  const events: DependencyEvent[] = [];
  dep.on((e) => events.push(e));
  return { dep, events };
}

function clientOf(raw: RedisConnection, dependency: Dependency): RedisDeadlineClient {
  const redis = redisDeadlineClient(raw, { dependency });
  closers.unshift(() => redis.close()); // before the raw client's own close
  return redis;
}

const ofType = <K extends DependencyEvent['type']>(events: DependencyEvent[], type: K) =>
  events.filter((e): e is Extract<DependencyEvent, { type: K }> => e.type === type);

async function until(condition: () => boolean, ms: number): Promise<boolean> {
  const started = systemClock.now();
  while (!condition() && systemClock.now() - started < ms) await sleep(systemClock, 10);
  return condition();
}

describe.each(Object.entries(KINDS))('%s through an executor', (kind, make) => {
  const tag = kind.replace(' ', '-');
  const key = (name: string) => `${tag}:${name}`;

  it('each command is one call: its latency in the dependency’s recorder, its events the dependency’s', async () => {
    const { dep, events } = dependencyOf();
    const redis = clientOf(await make(server.port), dep);
    const heard: DependencyEvent[] = [];
    redis.on((e) => heard.push(e));
    expect(redis.name).toBe('cache');
    await redis.command('SET', [key('a'), '1']);
    for (let i = 0; i < 5; i++) expect(await redis.command('GET', [key('a')])).toBe('1');
    expect(
      await redis.pipeline([
        ['GET', [key('a')]],
        ['STRLEN', [key('a')]],
      ]),
    ).toEqual([
      { status: 'fulfilled', value: '1' },
      { status: 'fulfilled', value: 1 },
    ]);
    expect(await redis.transaction([['INCR', [key('a')]]])).toEqual([2]);
    // 8 exchanges, each recorded once as a success, with an attempt and its end
    expect(dep.recorder.currentWindow()).toMatchObject({ count: 8, successes: 8, errors: 0, timeouts: 0 });
    expect(ofType(events, 'attempt')).toHaveLength(8);
    expect(ofType(events, 'attempt-end').map((e) => e.outcome)).toEqual(Array(8).fill('success'));
    expect(heard).toEqual(events); // the client's `on` is the dependency's
    expect(redis.throttling()).toEqual(dep.throttling());
  });

  it('D4: with less than the dependency’s p99 left nothing is sent (INFO commandstats), given or ambient deadline', async () => {
    const { dep, events } = dependencyOf({ p99Ms: 300 });
    const redis = clientOf(await make(server.port), dep);
    await admin.set(key('d4'), 'abc');
    const before = await calls('strlen');
    const given = await timed(() => redis.command('STRLEN', [key('d4')], { deadline: Deadline.after(100) }));
    const ambient = await timed(() =>
      runWithDeadline(Deadline.after(100), () => redis.command('STRLEN', [key('d4')])),
    );
    for (const refused of [given, ambient]) {
      expect(isDeadlineInsufficient(refused.error)).toBe(true);
      expect(refused.error).toMatchObject({ dependency: 'cache', neededMs: 300 });
    }
    expect(await calls('strlen')).toBe(before); // not one reached the server
    expect(ofType(events, 'deadline-insufficient')).toHaveLength(2);
    expect(ofType(events, 'attempt')).toHaveLength(0);
    // the control: with the time it needs, it is sent, and counted there
    expect(await redis.command('STRLEN', [key('d4')], { deadline: Deadline.after(1_000) })).toBe(3);
    expect(await calls('strlen')).toBe(before + 1);
  });

  it('a concurrency limit of 1 queues the second command, unsent, until the first (a BLPOP bounded by its attempt) is over', async () => {
    const { dep, events } = dependencyOf({ p99Ms: 500, concurrencyLimit: { maxInFlight: 1, maxQueue: 4 } });
    const redis = clientOf(await make(server.port), dep);
    await admin.set(key('q'), 'v');
    const order: string[] = [];
    const attemptMs = dep.timeouts.responseMs; // ceil(500 × slack)
    const blpop = timed(() =>
      redis
        .command('BLPOP', [key('empty'), 10], { deadline: Deadline.after(5_000) })
        .finally(() => order.push('blpop')),
    );
    await sleep(systemClock, 50);
    const before = await calls('get');
    const get = redis
      .command('GET', [key('q')], { deadline: Deadline.after(5_000) })
      .finally(() => order.push('get'));
    await sleep(systemClock, 100);
    expect(dep.concurrency()).toMatchObject({ limit: 1, inFlight: 1, queued: 1 });
    expect(await calls('get')).toBe(before); // waiting in the queue: not written
    // the BLPOP's 10 s block was cut on the server to end blockMarginMs before its attempt's end: nil
    const popped = await blpop;
    expect(popped.error).toBeUndefined();
    expect(popped.value).toBeNull();
    expect(popped.ms).toBeLessThan(attemptMs);
    expect(await get).toBe('v');
    expect(order).toEqual(['blpop', 'get']);
    expect(await calls('get')).toBe(before + 1);
    expect(ofType(events, 'limited')).toHaveLength(0);
    expect(dep.concurrency()).toMatchObject({ inFlight: 0, queued: 0 });
  });

  it('a WRONGTYPE reply or a script’s error is the caller’s answer: recorded as a success, accepted by the throttle, not retried', async () => {
    const { dep, events } = dependencyOf({ p99Ms: 200, throttle: { minRequests: 1 } });
    const redis = clientOf(await make(server.port), dep);
    await admin.set(key('str'), 'x');
    for (let i = 0; i < 30; i++) {
      const { error } = await timed(() => redis.command('HGET', [key('str'), 'f']));
      expect(String((error as Error).message)).toMatch(/^WRONGTYPE/);
      expect(isThrottled(error)).toBe(false);
      expect(dependencyFailureOf(error)).toBeUndefined(); // the request's, not the dependency's
    }
    const script = await timed(() => redis.command('EVAL', ["return redis.error_reply('no stock')", 0]));
    expect(String((script.error as Error).message)).toMatch(/no stock/);
    expect(serverAnswered(script.error)).toBe(true);
    expect(dep.throttling()).toEqual({ requests: 31, accepts: 31, probability: 0 });
    expect(dep.recorder.currentWindow()).toMatchObject({ count: 31, successes: 31, errors: 0 });
    // HGET only reads (idempotent), yet an answer is never retried
    expect(ofType(events, 'attempt').every((e) => e.kind === 'original')).toBe(true);
    expect(ofType(events, 'attempt')).toHaveLength(31);
  });

  it('the control: connections closed under the commands are the dependency failing — the throttle opens and a refused command is not written', async () => {
    const proxy = await droppingProxy(server.port);
    closers.push(() => proxy.close());
    const { dep, events } = dependencyOf({ p99Ms: 300, throttle: { minRequests: 5 } });
    const redis = clientOf(await make(proxy.port), dep);
    const marker = key('dropped-write');
    proxy.drop(marker, 1_000);
    let throttled = 0;
    for (let i = 0; i < 30; i++) {
      const { error } = await timed(() => redis.command('SET', [marker, String(i)]));
      expect(error).toBeDefined();
      if (isThrottled(error)) throttled += 1;
      else expect(serverAnswered(error)).toBe(false);
    }
    expect(throttled).toBeGreaterThan(10);
    expect(proxy.seen(marker)).toBe(30 - throttled); // a refused one was never written
    expect(ofType(events, 'throttled')).toHaveLength(throttled);
    expect(dep.throttling()!.accepts).toBe(0);
  });

  it('a read is retried after its connection closed, within the attempts and the retry budget; a write never', async () => {
    const proxy = await droppingProxy(server.port);
    closers.push(() => proxy.close());
    const { dep, events } = dependencyOf({ p99Ms: 300 });
    const redis = clientOf(await make(proxy.port), dep);
    // a read (GET), and a pipeline of reads: one connection closed, the retry answers
    await admin.set(key('drop-read'), 'v');
    proxy.drop(key('drop-read'), 1);
    expect(await redis.command('GET', [key('drop-read')])).toBe('v');
    expect(proxy.seen(key('drop-read'))).toBe(2);
    expect(ofType(events, 'attempt').map((e) => e.kind)).toEqual(['original', 'retry']);
    expect(dep.recorder.currentWindow()).toMatchObject({ count: 2, errors: 1, successes: 1 });
    proxy.drop(key('drop-read'), 1);
    expect(
      await redis.pipeline([
        ['GET', [key('drop-read')]],
        ['EXISTS', [key('drop-read')]],
      ]),
    ).toEqual([
      { status: 'fulfilled', value: 'v' },
      { status: 'fulfilled', value: 1 },
    ]);
    expect(proxy.seen(key('drop-read'))).toBe(4);
    // closed more often than the plan's attempts (2): the client's own error, marked the dependency's
    proxy.drop(key('drop-read'), 5);
    const twice = await timed(() => redis.command('GET', [key('drop-read')]));
    expect(serverAnswered(twice.error)).toBe(false);
    expect(dependencyFailureOf(twice.error)).toMatchObject({ kind: 'unavailable' });
    expect(proxy.seen(key('drop-read'))).toBe(6);
    // a write: sent once, never again (the server never saw it: the proxy closed the connection)
    events.length = 0;
    proxy.drop(key('drop-write'), 1);
    const write = await timed(() => redis.command('SET', [key('drop-write'), 'w']));
    expect(write.error).toBeDefined();
    expect(dependencyFailureOf(write.error)).toMatchObject({ kind: 'unavailable' });
    // a read in a session: neither (its connection may have been replaced, its WATCH with it)
    proxy.drop(key('drop-session'), 1);
    const inSession = await timed(() => redis.session((s) => s.command('GET', [key('drop-session')])));
    expect(inSession.error).toBeDefined();
    await sleep(systemClock, 200); // nothing sent later either
    expect(proxy.seen(key('drop-write'))).toBe(1);
    expect(proxy.seen(key('drop-session'))).toBe(1);
    expect(await admin.get(key('drop-write'))).toBeNull();
    expect(ofType(events, 'attempt').map((e) => e.kind)).toEqual(['original', 'original']);
  });

  it('a read is not retried when the retry budget has nothing left: the failure is delivered, budget-refused', async () => {
    const proxy = await droppingProxy(server.port);
    closers.push(() => proxy.close());
    const { dep, events } = dependencyOf({ p99Ms: 300, retryBudget: { maxRatio: 0, minPerSecond: 0 } });
    const redis = clientOf(await make(proxy.port), dep);
    proxy.drop(key('drop-budget'), 1);
    const { error } = await timed(() => redis.command('GET', [key('drop-budget')]));
    expect(error).toBeDefined();
    expect(serverAnswered(error)).toBe(false);
    expect(proxy.seen(key('drop-budget'))).toBe(1);
    expect(ofType(events, 'budget-refused')).toEqual([
      { type: 'budget-refused', dependency: 'cache', kind: 'retry' },
    ]);
    expect(ofType(events, 'attempt')).toHaveLength(1);
  });

  it('the caller’s abort frees the slot at once, queued or in flight; the aborted BLPOP’s connection is set aside until its reply', async () => {
    const { dep, events } = dependencyOf({ p99Ms: 500, concurrencyLimit: { maxInFlight: 1, maxQueue: 4 } });
    const redis = clientOf(await make(server.port), dep);
    await admin.set(key('after'), 'v');
    const inFlight = new AbortController();
    const blpop = redis
      .command('BLPOP', [key('empty-abort'), 10], {
        deadline: Deadline.after(5_000),
        signal: inFlight.signal,
      })
      .catch((e: unknown) => e);
    await sleep(systemClock, 50);
    const queued = new AbortController();
    const waiting = redis.command('GET', [key('after')], { signal: queued.signal }).catch((e: unknown) => e);
    await sleep(systemClock, 20);
    expect(dep.concurrency()).toMatchObject({ inFlight: 1, queued: 1 });
    const leftQueue = new Error('the caller left the queue');
    queued.abort(leftQueue);
    expect(await waiting).toBe(leftQueue);
    expect(dep.concurrency()).toMatchObject({ inFlight: 1, queued: 0 });
    const gaveUp = new Error('the caller gave up');
    inFlight.abort(gaveUp);
    expect(await blpop).toBe(gaveUp);
    expect(dep.concurrency()).toMatchObject({ inFlight: 0, queued: 0 });
    expect(redis.stuck).toBe(1); // its reply still due: nobody else's command goes behind it
    const next = await timed(() => redis.command('GET', [key('after')]));
    expect(next.value).toBe('v');
    expect(next.ms).toBeLessThan(250); // on another connection, not behind the blocked one
    expect(ofType(events, 'attempt-end').map((e) => e.outcome)).toEqual(['cancelled', 'success']);
    // the server ends the block before the attempt's end would have: the connection is back
    expect(await until(() => redis.stuck === 0, 3_000)).toBe(true);
  });
});

describe('through an executor, either client', () => {
  it('a hedge of a read goes to a spare connection, not behind the attempt it races', async () => {
    const proxy = await holdingProxy(server.port);
    closers.push(() => proxy.close());
    const real = createLatencyRecorder({ windowMs: 600_000 });
    // the live p95 says 20 ms: a read unanswered by then is hedged
    const recorder: LatencySource = {
      record: (...args) => real.record(...args),
      quantile: () => 20,
      lastWindow: () => real.lastWindow(),
      currentWindow: () => real.currentWindow(),
    };
    const { dep, events } = dependencyOf({ p99Ms: 300, hedge: true, recorder });
    const redis = clientOf(await KINDS['ioredis 5']!(proxy.port), dep);
    await admin.set('hedged', 'v');
    expect(await redis.command('GET', ['hedged'])).toBe('v'); // connection 0 ready
    proxy.hold(0);
    const { value, ms } = await timed(() => redis.command('GET', ['hedged']));
    expect(value).toBe('v');
    expect(ms).toBeLessThan(dep.timeouts.responseMs);
    expect(ofType(events, 'hedge-won')).toHaveLength(1);
    expect(proxy.connections).toBe(2);
    proxy.release(0);
    expect(await until(() => redis.stuck === 0, 2_000)).toBe(true);
  });

  it('refuses, in one InvalidOptionsError, what is the executor’s beside `dependency`, another name, and an unknown key with a "did you mean"', () => {
    const { dep } = dependencyOf();
    const stub = { call: () => undefined, duplicate: () => stub } as unknown as RedisConnection;
    let error: unknown;
    try {
      redisDeadlineClient(stub, {
        dependency: dep,
        p99Ms: 5,
        throttle: false,
        random: Math.random,
        cancelGraceMs: 10,
        name: 'other',
        clock: new FakeClock(),
        dependancy: dep,
        events: () => undefined,
      } as never);
    } catch (e) {
      error = e;
    }
    expect(isInvalidOptions(error)).toBe(true);
    const problems = (error as InvalidOptionsError).problems.join('\n');
    for (const key of [
      'p99Ms',
      'throttle',
      'random',
      'cancelGraceMs',
      'name',
      'clock',
      'dependancy',
      'events',
    ])
      expect(problems).toContain(`\`${key}\``);
    expect(problems).toMatch(/`dependancy`.*did you mean `dependency`/);
    expect(problems).toMatch(/`name` \(other\) differs from the dependency's \(cache\)/);
    expect(() => redisDeadlineClient(stub, { dependency: {} as Dependency })).toThrow(
      /an executor made with createDependency/,
    );
    // the same name is not a conflict; the client's own options stay
    const ok = redisDeadlineClient(stub, {
      dependency: dep,
      name: 'cache',
      blockMarginMs: 50,
      maxConnections: 2,
    });
    expect(ok.name).toBe('cache');
  });
});
