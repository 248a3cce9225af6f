import { Kysely, PostgresDialect, sql } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runWithDeadline } from '../deadline/ambient.js';
import { Deadline } from '../deadline/deadline.js';
import { isDeadlineExceeded, isDeadlineInsufficient } from '../errors/guards.js';
import { startPostgres, type TestPostgres } from './embedded.test-helpers.js';
import { pgDeadlinePool } from './pool.js';

/** Kysely over pg under the ambient deadline, on a real PostgreSQL (SPEC D4, D7, #17 item 3). */
let db: TestPostgres;
let admin: pg.Client;
let kysely: Kysely<{ items: { id: number } }>;
beforeAll(async () => {
  db = await startPostgres();
  admin = new pg.Client(db.config);
  await admin.connect();
  await admin.query('CREATE TABLE items (id int PRIMARY KEY)');
  const pool = pgDeadlinePool(new pg.Pool({ ...db.config, max: 2 }), { name: 'items-pg' });
  kysely = new Kysely({ dialect: new PostgresDialect({ pool }) });
});
afterAll(async () => {
  await kysely?.destroy();
  await admin?.end();
  await db?.stop();
});

const active = async () =>
  (
    await admin.query(
      "SELECT pid FROM pg_stat_activity WHERE query LIKE '%pg_sleep(5)%' AND state = 'active' AND pid <> pg_backend_pid()",
    )
  ).rows;

describe('Kysely over a guarded pg pool', () => {
  it('a query is stopped on the server by the deadline (statement_timeout from the time left)', async () => {
    const started = performance.now();
    const error = await runWithDeadline(Deadline.after(200), () =>
      sql`SELECT pg_sleep(5)`.execute(kysely),
    ).catch((e: unknown) => e);
    expect(isDeadlineExceeded(error)).toBe(true);
    expect(error).toMatchObject({
      dependency: 'items-pg',
      cause: expect.objectContaining({ code: '57014' }),
    });
    expect(performance.now() - started).toBeLessThan(800);
    expect(await active()).toEqual([]);
  });

  it("the builder's own transaction is left to it; its statements are limited inside it", async () => {
    const error = await runWithDeadline(Deadline.after(1_000), () =>
      kysely.transaction().execute(async (trx) => {
        await trx.insertInto('items').values({ id: 1 }).execute();
        await sql`SELECT pg_sleep(5)`.execute(trx);
      }),
    ).catch((e: unknown) => e);
    expect(isDeadlineExceeded(error)).toBe(true);
    expect((await admin.query('SELECT id FROM items')).rows).toEqual([]); // Kysely rolled back
    await runWithDeadline(Deadline.after(2_000), () =>
      kysely.transaction().execute((trx) => trx.insertInto('items').values({ id: 2 }).execute()),
    );
    expect((await admin.query('SELECT id FROM items')).rows).toEqual([{ id: 2 }]);
    const timeouts = await kysely
      .selectFrom('items')
      .select(sql<string>`current_setting('statement_timeout')`.as('t'))
      .execute();
    expect(timeouts[0]!.t).toBe('0'); // nothing left in the session
  });

  it('below the p99 no connection is taken', async () => {
    const raw = new pg.Pool({ ...db.config, max: 1 });
    let taken = 0;
    raw.on('connect', () => {
      taken++;
    });
    const strict = new Kysely<{ items: { id: number } }>({
      dialect: new PostgresDialect({ pool: pgDeadlinePool(raw, { p99Ms: 100 }) }),
    });
    const error = await runWithDeadline(Deadline.after(50), () =>
      strict.selectFrom('items').selectAll().execute(),
    ).catch((e: unknown) => e);
    expect(isDeadlineInsufficient(error)).toBe(true);
    expect(taken).toBe(0);
    await strict.destroy();
  });
});
