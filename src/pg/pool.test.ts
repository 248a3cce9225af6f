import { sql as drizzleSql } from 'drizzle-orm';
import { drizzle } from 'drizzle-orm/node-postgres';
import knexFactory from 'knex';
import { Kysely, PostgresDialect, sql } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sleep, systemClock } from '../clock/index.js';
import { runWithDeadline } from '../deadline/ambient.js';
import { Deadline } from '../deadline/deadline.js';
import { isDeadlineExceeded, isDeadlineInsufficient } from '../errors/guards.js';
import { timed } from '../mysql/mariadb.test-helpers.js';
import { startPostgres, type TestPostgres } from './embedded.test-helpers.js';
import { pgDeadlineKnex } from './knex.js';
import { pgDeadlinePool } from './pool.js';

/** Kysely, Knex and Drizzle over pg under the ambient deadline, on a real PostgreSQL (SPEC D4, D7, #17 item 3). */
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
const closers: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  for (const close of closers.reverse()) await close();
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
    const error = await runWithDeadline(Deadline.after(1_500), () =>
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

/** Backends connected under `name` (the application_name a test gives its pool), idle or not. */
const backends = async (name: string) =>
  (await admin.query('SELECT pid FROM pg_stat_activity WHERE application_name = $1', [name])).rows;

/** The server's own limit ended it (not the client's cancel request, which comes 100 ms after the deadline). */
const serverTimeout = expect.objectContaining({
  code: '57014',
  message: expect.stringMatching(/statement timeout/),
});

// Knex and Drizzle builders are lazy thenables: they start when awaited, inside the deadline's context
describe('Knex over pg (pgDeadlineKnex)', () => {
  const knexOn = (application_name: string, options = {}) => {
    const knex = pgDeadlineKnex(
      knexFactory({
        client: 'pg',
        connection: { ...(db.config as object), application_name },
        pool: { min: 0, max: 1 },
      }),
      // the client's cancel request 1 s past the deadline: only the server's own timeout can end it first
      { name: 'items-knex', cancelGraceMs: 1_000, ...options },
    );
    closers.push(() => knex.destroy());
    return knex;
  };

  it('SELECT pg_sleep(5) under a 200 ms deadline ends on the server at its statement_timeout and is gone', async () => {
    const knex = knexOn('knex-sleep');
    const { error, ms } = await timed(() =>
      runWithDeadline(Deadline.after(200), async () => await knex.raw('SELECT pg_sleep(5)')),
    );
    expect(isDeadlineExceeded(error)).toBe(true);
    expect(error).toMatchObject({ dependency: 'items-knex', cause: serverTimeout });
    expect(ms).toBeLessThan(800); // ~200 ms; the margin is for a loaded machine
    expect(await active()).toEqual([]);
    // the connection is healthy (a statement error, not a broken socket): Knex keeps it, nothing left in it
    const rows = await runWithDeadline(Deadline.after(2_000), async () => await knex('items').select('id'));
    expect(rows).toBeInstanceOf(Array);
    const setting = await knex.raw("SELECT current_setting('statement_timeout') AS t");
    expect(setting.rows[0].t).toBe('0');
  });

  it("inside a Knex transaction: the statement is limited too, and Knex's rollback undoes the insert", async () => {
    const knex = knexOn('knex-trx');
    const { error, ms } = await timed(() =>
      runWithDeadline(Deadline.after(1_500), () =>
        knex.transaction(async (trx) => {
          await trx('items').insert({ id: 10 });
          await trx.raw('SELECT pg_sleep(5)');
        }),
      ),
    );
    expect(isDeadlineExceeded(error)).toBe(true);
    expect(error).toMatchObject({ cause: serverTimeout });
    expect(ms).toBeLessThan(2_500);
    expect(await active()).toEqual([]);
    expect((await admin.query('SELECT id FROM items WHERE id = 10')).rows).toEqual([]);
  });

  it('a full pool is waited on no longer than the deadline; the connection that comes late goes back to Knex', async () => {
    const knex = knexOn('knex-full');
    let release!: () => void;
    const held = new Promise<void>((r) => {
      release = r;
    });
    const holder = knex.transaction(async () => held); // the pool's only connection, busy
    await sleep(systemClock, 50);
    const { error, ms } = await timed(() =>
      runWithDeadline(Deadline.after(200), async () => await knex.raw('SELECT 1 AS one')),
    );
    expect(isDeadlineExceeded(error)).toBe(true);
    expect(error).toMatchObject({ dependency: 'items-knex (pool)' });
    expect(ms).toBeLessThan(800);
    release();
    await holder;
    // the acquire that outlived its caller got the connection and gave it back: the pool serves again
    const rows = await runWithDeadline(Deadline.after(2_000), async () => await knex.raw('SELECT 2 AS two'));
    expect(rows.rows).toEqual([{ two: 2 }]);
    expect((knex.client as { pool: { numUsed(): number } }).pool.numUsed()).toBe(0);
  });

  it('below the p99 no connection is taken; other clients are refused', async () => {
    const knex = knexOn('knex-fail-fast', { p99Ms: 100 });
    const error = await runWithDeadline(Deadline.after(50), async () => await knex('items').select()).catch(
      (e: unknown) => e,
    );
    expect(isDeadlineInsufficient(error)).toBe(true);
    expect(await backends('knex-fail-fast')).toEqual([]);
    // outside any deadline the same instance works as Knex does
    expect((await knex.raw('SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);
    expect(() => pgDeadlineKnex(knexFactory({ client: 'mysql2' }))).toThrow(
      /not supported.*knexWithDeadline/,
    );
    expect(pgDeadlineKnex(knex)).toBe(knex);
  });
});

describe('Drizzle over a guarded pg pool (drizzle-orm/node-postgres)', () => {
  it('SELECT pg_sleep(5) under a 200 ms deadline ends on the server at its statement_timeout and is gone', async () => {
    const raw = new pg.Pool({ ...db.config, max: 2, application_name: 'drizzle-sleep' });
    closers.push(() => raw.end());
    const orm = drizzle(pgDeadlinePool(raw, { name: 'items-drizzle', cancelGraceMs: 1_000 }) as pg.Pool);
    const { error, ms } = await timed(() =>
      runWithDeadline(Deadline.after(200), async () => await orm.execute(drizzleSql`SELECT pg_sleep(5)`)),
    );
    // Drizzle wraps a driver's error in its DrizzleQueryError: prazo's is its cause
    const cause = (error as { cause?: unknown }).cause;
    expect(isDeadlineExceeded(cause)).toBe(true);
    expect(cause).toMatchObject({ dependency: 'items-drizzle', cause: serverTimeout });
    expect(ms).toBeLessThan(800);
    expect(await active()).toEqual([]);
    // its query configs (row mode, type parsers) still work under a deadline
    const result = await runWithDeadline(Deadline.after(2_000), async () =>
      orm.execute(drizzleSql`SELECT ${41}::int + 1 AS n`),
    );
    expect(result.rows).toEqual([{ n: 42 }]);
  });

  it('below the p99 no connection is taken', async () => {
    const raw = new pg.Pool({ ...db.config, max: 1, application_name: 'drizzle-fail-fast' });
    closers.push(() => raw.end());
    const orm = drizzle(pgDeadlinePool(raw, { p99Ms: 100 }) as pg.Pool);
    const error = await runWithDeadline(
      Deadline.after(50),
      async () => await orm.execute(drizzleSql`SELECT 1`),
    ).catch((e: unknown) => e);
    expect(isDeadlineInsufficient((error as { cause?: unknown }).cause ?? error)).toBe(true);
    expect(raw.totalCount).toBe(0);
    expect(await backends('drizzle-fail-fast')).toEqual([]);
  });
});
