import { Redis } from 'ioredis';
import mysqlPromise from 'mysql2/promise';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sleep, systemClock, type Timer } from '../../../src/clock/index.js';
import { Deadline } from '../../../src/deadline/deadline.js';
import { createDependency } from '../../../src/dependency/dependency.js';
import { isPrazoError, PrazoError } from '../../../src/errors/base.js';
import { ClientClosedError } from '../../../src/errors/closed.js';
import { isClientClosed, isDeadlineExceeded } from '../../../src/errors/guards.js';
import { startMariadb, type TestMariadb } from '../../../src/mysql/mariadb.test-helpers.js';
import { startMysql8, type TestMysql8 } from '../../../src/mysql/mysql8.test-helpers.js';
import { mysqlQuery } from '../../../src/mysql/query.js';
import { startPostgres, type TestPostgres } from '../../../src/pg/embedded.test-helpers.js';
import { queryWithDeadline } from '../../../src/pg/query.js';
import { transactionWithDeadline } from '../../../src/pg/transaction.js';
import { type RedisConnection, redisDeadlineClient } from '../../../src/redis/client.js';
import { startRedis, type TestRedis } from '../../../src/redis/redis.test-helpers.js';
import { dependencyFailureOf } from '../../../src/retry/pushback.js';
import { outcome } from './watch.js';

/**
 * More attacks on the stores through their public API, on real servers on 127.0.0.1 (redis-server,
 * embedded PostgreSQL, MariaDB; MySQL 8's wire protocol from mysql2's server, src/mysql/
 * mysql8.test-helpers.ts), and on a connection object playing a later Redis where no real one can:
 * a client used after `close()`, an XREAD option prazo does not know hiding a `BLOCK 0`, a deadline
 * beyond a timer's 24.8 days. The client-side timers under such a deadline are attacked in
 * fits.test.ts ("a store's own timers…"); here, what each store tells its *server* under it.
 */

const DAY = 86_400_000;
const closers: Array<() => unknown> = [];
afterAll(async () => {
  for (const fn of closers.splice(0).reverse()) await fn();
});

const now = (): number => systemClock.now();

async function until(condition: () => boolean, ms: number, what: string): Promise<void> {
  const t0 = now();
  while (!condition()) {
    if (now() - t0 > ms) throw new Error(`timed out waiting for ${what}`);
    await sleep(systemClock, 10);
  }
}

// ── Redis ────────────────────────────────────────────────────────────────────────────────────────

describe('Redis: a closed client, an option prazo does not know, a deadline weeks away', () => {
  let redis: TestRedis;
  beforeAll(async () => {
    redis = await startRedis();
    closers.push(() => redis.stop());
  });

  const ioredis = (): Redis => {
    const r = new Redis({ host: '127.0.0.1', port: redis.port, maxRetriesPerRequest: 1 });
    r.on('error', () => undefined);
    closers.push(() => r.disconnect());
    return r;
  };

  // Was a defect (fixed): after close() every call rejected with a plain
  // `Error('redisDeadlineClient: closed')`: no `code`, not a PrazoError, nothing a caller could match
  // but the message. src/redis/client.ts now rejects with ClientClosedError (`CLIENT_CLOSED`).
  it('after close(): command, transaction, pipeline and session reject with ClientClosedError (CLIENT_CLOSED), never throw, nothing sent', async () => {
    const other = ioredis();
    await other.del('sm:closed');
    for (const dependency of [
      undefined,
      createDependency({ name: 'redis-closed', p99Ms: 500, attempts: 3 }),
    ]) {
      const c = redisDeadlineClient(ioredis(), {
        name: 'redis-closed',
        ...(dependency === undefined ? {} : { dependency }),
      });
      expect(await c.command('PING', [], { deadline: Deadline.after(2_000) })).toBe('PONG');
      await c.close();
      const calls: Array<[string, () => Promise<unknown>]> = [
        ['command', () => c.command('SET', ['sm:closed', 'x'], { deadline: Deadline.after(2_000) })],
        ['transaction', () => c.transaction([['SET', ['sm:closed', 'x']]])],
        ['pipeline', () => c.pipeline([['SET', ['sm:closed', 'x']]])],
        ['session', () => c.session((s) => s.command('SET', ['sm:closed', 'x']))],
      ];
      for (const [what, call] of calls) {
        const where = `${what}${dependency === undefined ? '' : ' (through an executor)'}`;
        let pending: Promise<unknown> | undefined;
        expect(() => {
          pending = call();
        }, where).not.toThrow();
        const got = await outcome(pending!);
        expect(isClientClosed(got.error), `${where}: ${String(got.error)}`).toBe(true);
        expect(got.error, where).toBeInstanceOf(ClientClosedError);
        expect(got.error, where).toBeInstanceOf(PrazoError);
        expect(isPrazoError(got.error) && got.error.code, where).toBe('CLIENT_CLOSED');
        expect((got.error as ClientClosedError).dependency, where).toBe('redis-closed');
        expect(got.ms, where).toBeLessThan(500);
      }
    }
    expect(await other.get('sm:closed')).toBeNull();
  });

  // Was a defect (fixed): a call waiting for a free connection when the client was closed kept
  // waiting until its deadline (for ever without one), then DEADLINE_EXCEEDED; once woken it could
  // open a duplicate that nothing would close. src/redis/connections.ts ends such waits at close().
  it('a command waiting for a free connection when close() is called rejects with ClientClosedError at once, not at its deadline', async () => {
    const c = redisDeadlineClient(ioredis(), { maxConnections: 1 });
    let release: (() => void) | undefined;
    // The only connection, held by a session: the command waits for it.
    const held = c.session(async (s) => {
      await s.command('PING');
      await new Promise<void>((r) => {
        release = r;
      });
    });
    await until(() => release !== undefined, 2_000, 'the session');
    const waiting = outcome(c.command('GET', ['sm:k'], { deadline: Deadline.after(3_000) }));
    await sleep(systemClock, 50);
    const closing = c.close();
    const got = await waiting;
    expect(isClientClosed(got.error), String(got.error)).toBe(true);
    expect(got.ms).toBeLessThan(1_000);
    release!();
    await held;
    await closing;
  });

  // Was a defect (fixed): a call that passed the client's check before close() and then waited in
  // the executor's queue was written after close() once its turn came (or opened a duplicate that
  // nothing would close). src/redis/connections.ts gives out no connection once closed; the attempt
  // throws ClientClosedError, which the executor neither retries nor counts as the server's failure.
  it('through an executor: a command queued behind its limit when close() is called rejects with ClientClosedError when its turn comes, nothing written', async () => {
    const written: string[] = [];
    let duplicates = 0;
    let answer: ((v: unknown) => void) | undefined;
    const connection = {
      status: 'ready',
      duplicate: () => {
        duplicates += 1;
        return connection;
      },
      call: (name: string, ...args: unknown[]) => {
        written.push(`${name} ${args.join(' ')}`);
        return args[0] === 'first'
          ? new Promise((r) => {
              answer = r;
            })
          : Promise.resolve('OK');
      },
    };
    const dependency = createDependency({
      name: 'redis-queued',
      p99Ms: 500, // an attempt timeout well past the first command's answer
      attempts: 3,
      concurrencyLimit: { maxInFlight: 1, maxQueue: 4 },
    });
    const c = redisDeadlineClient(connection as unknown as RedisConnection, { dependency });
    let attempts = 0;
    dependency.on((event) => {
      if (event.type === 'attempt') attempts += 1;
    });
    const first = outcome(c.command('GET', ['first'], { deadline: Deadline.after(3_000) }));
    await until(() => answer !== undefined, 2_000, 'the first command');
    const second = outcome(c.command('GET', ['second'], { deadline: Deadline.after(3_000) }));
    await sleep(systemClock, 20); // queued behind the first
    await c.close();
    answer!('one');
    const one = await first;
    expect(one.value, String(one.error)).toBe('one');
    const got = await second;
    expect(isClientClosed(got.error), String(got.error)).toBe(true);
    expect(got.ms).toBeLessThan(1_000);
    expect(written).toEqual(['GET first']);
    expect(duplicates).toBe(0);
    expect(attempts).toBe(2); // one each: the closed client is not retried as a failing server
    expect(dependencyFailureOf(got.error)).toBeUndefined(); // nor marked the dependency's (SPEC X6)
  });

  /**
   * A Redis of a later version as far as XREAD goes: it knows an option `LATER` (no value) that
   * prazo does not, and a read of an empty stream blocks for its BLOCK in ms (0: for ever), then
   * answers nil. No real server here knows an option prazo does not (prazo reads Redis 8.4's), so
   * the connection object plays it, through the same structural client interface ioredis meets.
   */
  function laterRedis(): { connection: RedisConnection; sent: string[][] } {
    const sent: string[][] = [];
    const timers: Timer[] = [];
    closers.push(() => {
      for (const t of timers) systemClock.clearTimer(t);
    });
    const make = (): RedisConnection =>
      ({
        status: 'ready',
        duplicate: make,
        call: (name: string, ...args: unknown[]) => {
          const tokens = args.map(String);
          sent.push([name, ...tokens]);
          let block: number | undefined;
          for (let i = 0; i < tokens.length; i += 1) {
            const token = tokens[i]!.toUpperCase();
            if (token === 'STREAMS') break;
            if (token === 'LATER') continue;
            if (token === 'BLOCK') block = Number(tokens[i + 1]);
            i += 1; // COUNT n, BLOCK n
          }
          if (block === undefined) return Promise.resolve(null);
          return new Promise((resolve) => {
            if (block !== 0) timers.push(systemClock.setTimer(() => resolve(null), block, { unref: true }));
          });
        },
      }) as unknown as RedisConnection;
    return { connection: make(), sent };
  }

  // Was a defect (fixed): an option prazo did not know before STREAMS ended its reading of the
  // options with no BLOCK found, so the command counted as non-blocking and its `BLOCK 0` went out
  // as given: DEADLINE_EXCEEDED at the deadline + grace, its connection blocked on the server for
  // ever (`stuck` 1). src/redis/blocking.ts now scans past an unknown option for the BLOCK.
  it('XREAD/XREADGROUP with an option prazo does not know before STREAMS: its BLOCK 0 still ends before the deadline (SPEC D7)', async () => {
    for (const [name, args] of [
      ['XREAD', ['LATER', 'BLOCK', 0, 'STREAMS', 'sm:s', '$']],
      ['XREADGROUP', ['GROUP', 'g', 'c', 'LATER', 'BLOCK', '0', 'COUNT', 1, 'STREAMS', 'sm:s', '>']],
    ] as const) {
      const { connection, sent } = laterRedis();
      const c = redisDeadlineClient(connection, { blockMarginMs: 300, cancelGraceMs: 50 });
      const got = await outcome(c.command(name, [...args], { deadline: Deadline.after(1_000) }));
      expect(got.error, `${name}: ${String(got.error)}`).toBeUndefined();
      expect(got.value, name).toBeNull(); // nothing arrived in time
      expect(got.ms, name).toBeLessThan(1_000);
      expect(c.stuck, name).toBe(0);
      const written = sent[0]!;
      const block = Number(written[written.indexOf('BLOCK') + 1]);
      expect(block, name).toBeGreaterThan(0);
      expect(block, name).toBeLessThanOrEqual(700);
    }
  });

  // Was a defect (fixed): the server-side block was capped at 2^31 − 1 ms (src/redis/blocking.ts
  // `serverBlockMs`), so a `BLPOP k 0` under a 30-day deadline answered nil at 24.8 days, 5 days
  // before it, and an endless deadline invented a 24.8-day limit the caller never asked for.
  it('BLPOP and XREAD BLOCK 0 under a 30-day deadline: the server is told 30 days less the margin, not 24.8; an endless deadline leaves 0; the server takes both (SPEC D7)', async () => {
    const monitor = await ioredis().monitor();
    closers.push(() => monitor.disconnect());
    const seen: string[][] = [];
    monitor.on('monitor', (_time: string, args: string[]) => seen.push(args));
    const writer = ioredis();
    await writer.del('sm:list', 'sm:list2', 'sm:stream');
    const c = redisDeadlineClient(ioredis(), { blockMarginMs: 100 });
    closers.push(() => c.close());
    const sentOf = (command: string, key: string): string[] | undefined =>
      seen.find((a) => a[0]?.toLowerCase() === command && a.includes(key));

    const month = c.command('BLPOP', ['sm:list', 0], { deadline: Deadline.after(30 * DAY) });
    await until(() => sentOf('blpop', 'sm:list') !== undefined, 3_000, 'the BLPOP');
    await writer.lpush('sm:list', 'a');
    expect(await month).toEqual(['sm:list', 'a']); // the server took the timeout, and answered
    const seconds = Number(sentOf('blpop', 'sm:list')!.at(-1));
    expect(seconds * 1000).toBeGreaterThan(30 * DAY - 1_000);
    expect(seconds * 1000).toBeLessThanOrEqual(30 * DAY - 100);

    const endless = c.command('BLPOP', ['sm:list2', 0], {
      deadline: Deadline.after(Number.POSITIVE_INFINITY),
    });
    await until(() => sentOf('blpop', 'sm:list2') !== undefined, 3_000, 'the endless BLPOP');
    await writer.lpush('sm:list2', 'b');
    expect(await endless).toEqual(['sm:list2', 'b']);
    expect(sentOf('blpop', 'sm:list2')!.at(-1)).toBe('0');

    await writer.xadd('sm:stream', '*', 'f', 'v0');
    const read = c.command('XREAD', ['BLOCK', 0, 'STREAMS', 'sm:stream', '$'], {
      deadline: Deadline.after(30 * DAY),
    });
    await until(() => sentOf('xread', 'sm:stream') !== undefined, 3_000, 'the XREAD');
    await writer.xadd('sm:stream', '*', 'f', 'v1');
    expect(JSON.stringify(await read)).toContain('v1');
    const xread = sentOf('xread', 'sm:stream')!;
    const ms = Number(xread[xread.findIndex((a) => a.toLowerCase() === 'block') + 1]);
    expect(ms).toBeGreaterThan(30 * DAY - 1_000);
    expect(ms).toBeLessThanOrEqual(30 * DAY - 100);
    expect(c.stuck).toBe(0);
  });
});

// ── PostgreSQL ───────────────────────────────────────────────────────────────────────────────────

describe('PostgreSQL: statement_timeout under a deadline beyond 24.8 days', () => {
  let db: TestPostgres;
  let pool: pg.Pool;
  beforeAll(async () => {
    db = await startPostgres();
    pool = new pg.Pool({ ...db.config, max: 2 });
    pool.on('error', () => undefined); // an idle client told of the server's shutdown (57P01) at the end
    closers.push(async () => {
      await pool.end();
      await db.stop();
    });
  }, 120_000);

  /** The `statement_timeout` in force while the statement runs, in ms (0: none). */
  const inForce = 'SELECT setting::bigint AS ms FROM pg_settings WHERE name = $1';
  const read = (result: pg.QueryResult<{ ms: string }>): number => Number(result.rows[0]!.ms);

  // Was a defect (fixed): `statementTimeoutMs` capped the timeout at 2^31 − 1 ms (src/pg/session.ts),
  // so a statement under a 30-day (or endless) deadline was stopped by the server at 24.8 days and
  // reported DEADLINE_EXCEEDED with the deadline still days ahead. It is 0 (no limit) now; the cancel
  // request at the deadline, re-armed past a timer's range, is the limit (fits.test.ts).
  it("a query, a transaction and a query inside the caller's transaction under a 30-day or endless deadline: no statement_timeout (0), not 24.8 days (SPEC D7)", async () => {
    for (const ms of [30 * DAY, Number.POSITIVE_INFINITY]) {
      const deadline = Deadline.after(ms);
      const alone = await queryWithDeadline<{ ms: string }>(pool, inForce, ['statement_timeout'], {
        deadline,
      });
      expect(read(alone), `query, ${ms}`).toBe(0);
      const tx = await transactionWithDeadline(
        pool,
        async (t) => [
          read(await t.query<{ ms: string }>(inForce, ['statement_timeout'])),
          read(await t.query<{ ms: string }>(inForce, ['statement_timeout'])),
        ],
        { deadline },
      );
      expect(tx, `transaction, ${ms}`).toEqual([0, 0]);
      const client = await pool.connect();
      try {
        await client.query('BEGIN');
        await client.query("SET LOCAL statement_timeout = '7s'");
        const inside = await queryWithDeadline<{ ms: string }>(client, inForce, ['statement_timeout'], {
          deadline,
        });
        expect(read(inside), `caller's transaction, ${ms}`).toBe(0);
        expect(read(await client.query(inForce, ['statement_timeout']))).toBe(7_000); // the caller's, back
        await client.query('ROLLBACK');
      } finally {
        client.release();
      }
    }
  });

  it('control: under 10 days the statement_timeout is what is left, which the server accepts', async () => {
    const result = await queryWithDeadline<{ ms: string }>(pool, inForce, ['statement_timeout'], {
      deadline: Deadline.after(10 * DAY),
    });
    expect(read(result)).toBeGreaterThan(10 * DAY - 5_000);
    expect(read(result)).toBeLessThanOrEqual(10 * DAY);
    const edge = await queryWithDeadline<{ ms: string }>(pool, inForce, ['statement_timeout'], {
      deadline: Deadline.after(2 ** 31 - 1 + 0.5),
    });
    expect(read(edge)).toBeLessThanOrEqual(2 ** 31 - 1); // the server's most, never refused
    expect(read(edge)).toBeGreaterThan(2 ** 31 - 1 - 5_000);
  });
});

// ── MariaDB and MySQL ────────────────────────────────────────────────────────────────────────────

describe('MariaDB and MySQL: the statement limit under a deadline beyond 24.8 days', () => {
  let maria: TestMariadb;
  let mysql8: TestMysql8;
  let mariaPool: mysqlPromise.Pool;
  let mysqlPool: mysqlPromise.Pool;
  beforeAll(async () => {
    [maria, mysql8] = await Promise.all([startMariadb(), startMysql8()]);
    const config = (s: TestMariadb | TestMysql8) => ({
      host: s.host,
      port: s.port,
      user: s.user,
      database: s.database,
      connectionLimit: 2,
    });
    mariaPool = mysqlPromise.createPool(config(maria));
    mysqlPool = mysqlPromise.createPool(config(mysql8));
    closers.push(async () => {
      await mariaPool.end();
      await mysqlPool.end();
      await maria.stop();
      await mysql8.stop();
    });
  }, 120_000);

  /** What the server runs for this very statement, as its process list shows it (prefix included). */
  const itself = 'SELECT info FROM information_schema.processlist WHERE id = CONNECTION_ID()';
  type Rows = [Array<{ info: string }>, unknown];

  // Was a defect (fixed): `limitStatement` capped the limit at 2^31 − 1 ms (src/mysql/statement.ts),
  // so a statement under a 30-day (or endless) deadline was interrupted by prazo's own limit at 24.8
  // days, as the driver's error (too early to be called the deadline's). Such a statement now takes
  // no limit of prazo's: KILL QUERY at the deadline, re-armed past a timer's range (fits.test.ts), ends it.
  it('MariaDB: a statement under a 30-day or endless deadline carries no max_statement_time of 24.8 days; under 10 days, what is left (SPEC D7)', async () => {
    for (const ms of [30 * DAY, Number.POSITIVE_INFINITY]) {
      const [rows] = await mysqlQuery<Rows>(mariaPool, itself, undefined, { deadline: Deadline.after(ms) });
      expect(rows[0]!.info, String(ms)).toBe(itself);
    }
    const [rows] = await mysqlQuery<Rows>(mariaPool, itself, undefined, {
      deadline: Deadline.after(10 * DAY),
    });
    const limit = /max_statement_time=LEAST\((\d+\.\d{3}),/.exec(rows[0]!.info);
    expect(limit, rows[0]!.info).not.toBeNull();
    expect(Number(limit![1]) * 1000).toBeGreaterThan(10 * DAY - 5_000);
    expect(Number(limit![1]) * 1000).toBeLessThanOrEqual(10 * DAY);
  });

  it('MySQL 8: a SELECT under a 30-day or endless deadline carries no MAX_EXECUTION_TIME hint of 24.8 days (SPEC D7)', async () => {
    for (const ms of [30 * DAY, Number.POSITIVE_INFINITY]) {
      const sql = `SELECT ${ms === Number.POSITIVE_INFINITY ? 8 : 7} AS v`;
      const got = await outcome(
        mysqlQuery<Rows>(mysqlPool, sql, undefined, { deadline: Deadline.after(ms) }),
      );
      expect(got.error, String(got.error)).toBeUndefined();
      const sent = mysql8.received.filter((r) => r.sql.includes(sql.slice(7)));
      expect(
        sent.map((r) => r.sql),
        String(ms),
      ).toEqual([sql]);
    }
    const got = await outcome(
      mysqlQuery<Rows>(mysqlPool, 'SELECT 9 AS v', undefined, { deadline: Deadline.after(10 * DAY) }),
    );
    expect(got.error).toBeUndefined();
    const hinted = mysql8.received.find((r) => r.sql.endsWith('9 AS v'))!.sql;
    const hint = /MAX_EXECUTION_TIME\((\d+)\)/.exec(hinted);
    expect(Number(hint?.[1])).toBeGreaterThan(10 * DAY - 5_000);
    expect(Number(hint?.[1])).toBeLessThanOrEqual(10 * DAY);
    expect(isDeadlineExceeded(got.error)).toBe(false);
  });
});
