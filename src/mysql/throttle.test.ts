import fc from 'fast-check';
import mysqlPromise from 'mysql2/promise';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { FakeClock } from '../clock/fake.js';
import { runWithDeadline } from '../deadline/ambient.js';
import { Deadline } from '../deadline/deadline.js';
import type { DependencyEvent } from '../dependency/types.js';
import { isDeadlineExceeded } from '../errors/guards.js';
import { seededRandom } from '../testing/random.js';
import { createStoreEvents } from './events.js';
import { startMariadb, type TestMariadb } from './mariadb.test-helpers.js';
import { mysqlDeadlinePool } from './pool.js';
import { mysqlQuery } from './query.js';
import {
  type Outcome,
  recovery,
  type SwitchProxy,
  settle,
  switchProxy,
} from './switch-proxy.test-helpers.js';
import { mysqlAccepted } from './throttle.js';
import { mysqlTransaction } from './transaction.js';

/**
 * Issue 23 item 1 for MySQL / MariaDB: the guarded pool, `mysqlQuery` and `mysqlTransaction` admit each
 * statement (a transaction at its start) through the executor's own `AdaptiveThrottle` and count it
 * when its outcome is known; a refused one fails at once THROTTLED, opens no connection and emits the
 * executor's `throttled` event. A real MariaDB behind a proxy that can be taken down (connections
 * reset as they arrive) and brought back; the throttle's and the deadlines' time is a FakeClock.
 */

let db: TestMariadb;
let proxy: SwitchProxy;
const closers: (() => unknown)[] = [];
beforeAll(async () => {
  db = await startMariadb();
  proxy = await switchProxy(db.port);
}, 60_000);
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
  proxy.up();
});
afterAll(async () => {
  await proxy?.close();
  await db?.stop();
});

/** A mysql2 promise pool through the proxy (or straight to the server). */
function rawPool(limit = 4, port = proxy.port): mysqlPromise.Pool {
  const pool = mysqlPromise.createPool({
    host: db.host,
    port,
    user: db.user,
    database: db.database,
    connectionLimit: limit,
    connectTimeout: 5_000,
  });
  pool.on('connection', (c) => c.on('error', () => undefined));
  closers.push(() => pool.end().catch(() => undefined));
  return pool;
}

/** Under a deadline of `ms` on `clock` (the guarded pool guards what runs inside one). */
const within = <T>(clock: FakeClock, ms: number, work: () => Promise<T>) =>
  runWithDeadline(Deadline.after(ms, { clock }), work);

describe('mysqlDeadlinePool: adaptive throttling (issue 23 item 1)', () => {
  it('a database that is down: after the window ~90% refused, no connection for a refused query, recovery once it is back', async () => {
    const clock = new FakeClock();
    proxy.down();
    const events = createStoreEvents('orders-db');
    const seen: DependencyEvent[] = [];
    events.on((e) => seen.push(e));
    const pool = mysqlDeadlinePool(rawPool(), { name: 'orders-db', events, clock, random: seededRandom(7) });
    const query = () => within(clock, 1_000, () => pool.query('SELECT 1'));
    const before = proxy.connections;
    const outcomes: Outcome[] = [];
    for (let i = 0; i < 400; i += 1) outcomes.push(await settle(clock, query)); // 2 s at 200/s
    const refused = outcomes.filter((o) => o.refused);
    expect(outcomes.every((o) => !o.ok)).toBe(true);
    // Each query that went out opened one connection (the proxy reset it); a refused one none.
    expect(proxy.connections - before).toBe(outcomes.length - refused.length);
    const share = outcomes.slice(200).filter((o) => o.refused).length / 200;
    expect(share).toBeGreaterThan(0.8);
    expect(share).toBeLessThan(0.95);
    expect(refused[0]!.error).toMatchObject({ code: 'THROTTLED', dependency: 'orders-db', accepts: 0 });
    const throttled = seen.filter((e) => e.type === 'throttled');
    expect(throttled).toHaveLength(refused.length);
    expect(throttled[0]).toMatchObject({ dependency: 'orders-db', accepts: 0 });
    expect(pool.throttling()!.probability).toBeCloseTo(0.9, 5);

    proxy.up();
    const took = await recovery(clock, query);
    expect(took).toBeDefined();
    expect(took!).toBeLessThan(3_500); // the ≈ 1.65 s ramp, then a whole second at ≥ 99%
    expect(pool.throttling()!.probability).toBe(0);
  }, 60_000);

  it('a healthy database at a burst: 300 concurrent queries on a pool of 4, nothing refused', async () => {
    const pool = mysqlDeadlinePool(rawPool(4, db.port));
    const results = await runWithDeadline(Deadline.after(20_000), () =>
      Promise.allSettled(Array.from({ length: 300 }, (_, i) => pool.query('SELECT ?', [i]))),
    );
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(300);
    expect(pool.throttling()).toEqual({ requests: 300, accepts: 300, probability: 0 });
  });

  it("the server's errors are answers (a syntax error, a duplicate key), its statement limit's kill and too many connections are not", async () => {
    const clock = new FakeClock();
    const pool = mysqlDeadlinePool(rawPool(2, db.port), { clock, random: seededRandom(1) });
    for (let i = 0; i < 50; i += 1) {
      const o = await settle(clock, () => within(clock, 5_000, () => pool.query('SELEC 1')));
      expect(o.error).toMatchObject({ errno: 1064 });
    }
    expect(pool.throttling()).toMatchObject({ requests: 50, accepts: 50, probability: 0 });
    expect(mysqlAccepted({ sqlState: '23000', errno: 1062 }, false)).toBe(true); // a duplicate key
    expect(mysqlAccepted({ sqlState: '70100', errno: 1969 }, false)).toBe(false); // max_statement_time
    expect(mysqlAccepted({ sqlState: '08004', errno: 1040 }, false)).toBe(false); // too many connections
    expect(mysqlAccepted({ sqlState: 'HY000', errno: 1040 }, false)).toBe(false);
    expect(mysqlAccepted(Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' }), false)).toBe(
      false,
    );
    expect(mysqlAccepted(new Error('aborted'), true)).toBeUndefined();
  }, 30_000);

  it('a transaction is decided at its start: under way, its statements are counted, never refused; refused, it opens nothing', async () => {
    const clock = new FakeClock();
    const pool = mysqlDeadlinePool(rawPool(2, db.port), {
      clock,
      random: seededRandom(3),
      throttle: { minRequests: 0 },
    });
    const connection = await within(clock, 60_000, () => pool.getConnection()); // admitted: its start
    await connection.query('START TRANSACTION');
    const inside: Outcome[] = [];
    for (let i = 0; i < 20; i += 1) {
      // each statement stopped by the deadline (the server's statement limit, or the kill)
      inside.push(await settle(clock, () => within(clock, 30, () => connection.query('SELECT SLEEP(5)'))));
    }
    await connection.query('ROLLBACK').catch(() => undefined);
    connection.release();
    expect(inside.filter((o) => o.refused)).toHaveLength(0);
    // The server's statement limit ends each (1969: the fake clock lags the server's real time a
    // little, so prazo does not always read it as the deadline's): neither is an answer.
    expect(
      inside.every((o) => isDeadlineExceeded(o.error) || (o.error as { errno?: number }).errno === 1969),
    ).toBe(true);
    expect(pool.throttling()).toMatchObject({ requests: 20, accepts: 0 });
    expect(pool.throttling()!.probability).toBeCloseTo(0.9, 5);

    // mysqlTransaction on a database that is down: refused at its start, no connection opened.
    proxy.down();
    const raw = rawPool(2);
    const options = { clock, random: seededRandom(4), throttle: { minRequests: 0 } };
    let refused = 0;
    for (let i = 0; i < 40; i += 1) {
      const before = proxy.connections;
      const o = await settle(clock, () => mysqlTransaction(raw, (tx) => tx.query('SELECT 1'), options));
      if (o.refused) {
        refused += 1;
        expect(proxy.connections).toBe(before);
      }
    }
    expect(refused).toBeGreaterThan(25);
  }, 60_000);

  it('a refused call touches nothing: no connection at the listener, an event each (property)', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.constantFrom('pool.query', 'pool.getConnection', 'mysqlQuery', 'mysqlTransaction'), {
          minLength: 15,
          maxLength: 40,
        }),
        fc.integer({ min: 1, max: 2 ** 31 - 1 }),
        async (kinds, seed) => {
          const clock = new FakeClock();
          proxy.down();
          const events = createStoreEvents('db');
          const seen: DependencyEvent[] = [];
          events.on((e) => seen.push(e));
          const options = { clock, random: seededRandom(seed), throttle: { minRequests: 0 }, events };
          const raw = rawPool(2);
          const pool = mysqlDeadlinePool(rawPool(2), options);
          let refused = 0;
          for (const kind of kinds) {
            const before = proxy.connections;
            const o = await settle(clock, () =>
              within(clock, 1_000, () =>
                kind === 'pool.query'
                  ? pool.query('SELECT 1')
                  : kind === 'pool.getConnection'
                    ? pool.getConnection().then((c) => c.release())
                    : kind === 'mysqlQuery'
                      ? mysqlQuery(raw, 'SELECT 1', undefined, options)
                      : mysqlTransaction(raw, (tx) => tx.query('SELECT 1'), options),
              ),
            );
            expect(o.ok).toBe(false);
            if (o.refused) {
              refused += 1;
              expect(proxy.connections).toBe(before); // no socket opened for it
            }
          }
          expect(refused).toBeGreaterThan(0);
          expect(seen.filter((e) => e.type === 'throttled')).toHaveLength(refused);
          expect(pool.throttling()!.accepts).toBe(0);
        },
      ),
      { numRuns: 5 },
    );
  }, 120_000);

  it('throttle: false switches it off; bad throttle options are refused with their names', async () => {
    expect(mysqlDeadlinePool(rawPool(1), { throttle: false }).throttling()).toBeUndefined();
    expect(() => mysqlDeadlinePool(rawPool(1), { throttle: { windowMS: 5 } as never })).toThrow(
      /did you mean `windowMs`/,
    );
    await expect(mysqlQuery(rawPool(1), 'SELECT 1', undefined, { throttle: { k: 0 } })).rejects.toThrow(/k/);
  });
});
