import { sql as drizzleSql } from 'drizzle-orm';
import { drizzle } from 'drizzle-orm/mysql2';
import knexFactory from 'knex';
import { Kysely, MysqlDialect, sql } from 'kysely';
import mysql from 'mysql2';
import mysqlPromise from 'mysql2/promise';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runWithDeadline } from '../deadline/ambient.js';
import { Deadline } from '../deadline/deadline.js';
import { isDeadlineExceeded, isDeadlineInsufficient } from '../errors/guards.js';
import { knexWithDeadline } from './knex.js';
import { startMariadb, type TestMariadb, timed } from './mariadb.test-helpers.js';
import { mysqlDeadlinePool } from './pool.js';

/**
 * The ambient deadline reaches Kysely, Knex and Drizzle queries on a real MariaDB, without threading
 * it by hand: stopped on the server at the deadline, fail fast below the p99 (SPEC D4, D7, #17 item 3).
 */
let db: TestMariadb;
let admin: mysqlPromise.Connection;
const closers: (() => Promise<unknown>)[] = [];
beforeAll(async () => {
  db = await startMariadb();
  admin = await mysqlPromise.createConnection(config());
  await admin.query('CREATE TABLE items (id INT PRIMARY KEY, name VARCHAR(20)) ENGINE=InnoDB');
  await admin.query("INSERT INTO items VALUES (1, 'a'), (2, 'b')");
});
afterAll(async () => {
  for (const close of closers.reverse()) await close();
  await admin?.end();
  await db?.stop();
});

const config = () => ({ host: db.host, port: db.port, user: db.user, database: db.database });
const sleeping = async () => {
  const [rows] = await admin.query<mysqlPromise.RowDataPacket[]>(
    "SELECT id FROM information_schema.processlist WHERE info LIKE '%SLEEP(5)%' AND id <> CONNECTION_ID()",
  );
  return rows;
};

// Knex and Drizzle builders are lazy thenables: they start when awaited, so the await is inside the
// deadline's context (as it is in a request handler under prazo/server's middleware).
interface Items {
  items: { id: number; name: string };
}

describe('query builders under the ambient deadline (real MariaDB)', () => {
  it('Kysely (MysqlDialect over a mysql2 pool): a query is stopped on the server by the deadline', async () => {
    const pool = mysqlDeadlinePool(mysql.createPool({ ...config(), connectionLimit: 2 }), {
      name: 'items-db',
    });
    const kysely = new Kysely<Items>({ dialect: new MysqlDialect({ pool }) });
    closers.push(() => kysely.destroy());
    expect(await kysely.selectFrom('items').select('name').where('id', '=', 2).execute()).toEqual([
      { name: 'b' },
    ]);
    const { error, ms } = await timed(() =>
      runWithDeadline(Deadline.after(200), () => sql`SELECT SLEEP(5) AS s`.execute(kysely)),
    );
    expect(isDeadlineExceeded(error)).toBe(true);
    expect(error).toMatchObject({ dependency: 'items-db', cause: expect.objectContaining({ errno: 1969 }) });
    expect(ms).toBeLessThan(500);
    expect(await sleeping()).toEqual([]);
    // and the builder's own queries under a roomy deadline go through, limited
    const rows = await runWithDeadline(Deadline.after(2_000), () =>
      kysely.selectFrom('items').selectAll().orderBy('id').execute(),
    );
    expect(rows.map((r) => r.id)).toEqual([1, 2]);
  });

  it('Kysely: below the p99 no connection is taken', async () => {
    const raw = mysql.createPool({ ...config(), connectionLimit: 1 });
    let taken = 0;
    raw.on('acquire', () => {
      taken++;
    });
    const kysely = new Kysely<Items>({
      dialect: new MysqlDialect({ pool: mysqlDeadlinePool(raw, { p99Ms: 100 }) }),
    });
    closers.push(() => kysely.destroy());
    const error = await runWithDeadline(Deadline.after(50), () =>
      kysely.selectFrom('items').selectAll().execute(),
    ).catch((e: unknown) => e);
    expect(isDeadlineInsufficient(error)).toBe(true);
    expect(taken).toBe(0);
  });

  it('Knex (client mysql2): a query is stopped on the server by the deadline, the killed connection discarded', async () => {
    const knex = knexWithDeadline(
      knexFactory({ client: 'mysql2', connection: config(), pool: { min: 0, max: 1 } }),
      { server: 'mysql' }, // the MySQL dialect on MariaDB: the hint is ignored, only Knex's KILL QUERY stops it
    );
    closers.push(() => knex.destroy());
    expect(await knex('items').where({ id: 1 }).first('name')).toEqual({ name: 'a' });
    const before = (await knex.raw('SELECT CONNECTION_ID() AS id'))[0][0].id as number;
    const { error, ms } = await timed(() =>
      runWithDeadline(Deadline.after(200), async () => await knex.raw('SELECT SLEEP(5) AS s')),
    );
    expect(isDeadlineExceeded(error)).toBe(true);
    expect(error).toMatchObject({ outcome: 'unknown' });
    expect(ms).toBeLessThan(800);
    await new Promise((r) => setTimeout(r, 100));
    expect(await sleeping()).toEqual([]);
    const after = (await knex.raw('SELECT CONNECTION_ID() AS id'))[0][0].id as number;
    expect(after).not.toBe(before);
  });

  it('Knex: the MariaDB limit applies, and below the p99 no connection is taken', async () => {
    const knex = knexWithDeadline(
      knexFactory({ client: 'mysql2', connection: config(), pool: { min: 0, max: 1 } }),
      {
        p99Ms: 100,
      },
    );
    closers.push(() => knex.destroy());
    const { error, ms } = await timed(() =>
      runWithDeadline(Deadline.after(200), async () => await knex.raw('SELECT SLEEP(5) AS s')),
    );
    expect(isDeadlineExceeded(error)).toBe(true);
    expect(error).toMatchObject({ cause: expect.objectContaining({ errno: 1969 }) });
    expect(ms).toBeLessThan(500);
    const insufficient = await runWithDeadline(
      Deadline.after(50),
      async () => await knex('items').select(),
    ).catch((e: unknown) => e);
    expect(isDeadlineInsufficient(insufficient)).toBe(true);
    expect(() => knexWithDeadline(knexFactory({ client: 'pg' }))).toThrow(/not supported/);
  });

  it("Knex: inside a Knex transaction the statement is limited too, and Knex's rollback undoes the insert", async () => {
    const knex = knexWithDeadline(
      knexFactory({ client: 'mysql2', connection: config(), pool: { min: 0, max: 1 } }),
      { cancelGraceMs: 1_000 }, // only the server's own limit can end it first
    );
    closers.push(() => knex.destroy());
    const { error, ms } = await timed(() =>
      runWithDeadline(Deadline.after(1_500), () =>
        knex.transaction(async (trx) => {
          await trx('items').insert({ id: 30, name: 'trx' });
          await trx.raw('SELECT SLEEP(5) AS s');
        }),
      ),
    );
    expect(isDeadlineExceeded(error)).toBe(true);
    expect(error).toMatchObject({ cause: expect.objectContaining({ errno: 1969 }) });
    expect(ms).toBeLessThan(2_500);
    expect(await sleeping()).toEqual([]);
    const [rows] = await admin.query<mysqlPromise.RowDataPacket[]>('SELECT id FROM items WHERE id = 30');
    expect(rows).toEqual([]);
  });

  it("Kysely: the builder's own transaction is left to it: its statement is limited, its ROLLBACK reaches the server after the deadline", async () => {
    const pool = mysqlDeadlinePool(mysql.createPool({ ...config(), connectionLimit: 1 }), {
      cancelGraceMs: 1_000,
    });
    const kysely = new Kysely<Items>({ dialect: new MysqlDialect({ pool }) });
    closers.push(() => kysely.destroy());
    const { error, ms } = await timed(() =>
      runWithDeadline(Deadline.after(1_500), () =>
        kysely.transaction().execute(async (trx) => {
          await trx.insertInto('items').values({ id: 31, name: 'trx' }).execute();
          await sql`SELECT SLEEP(5) AS s`.execute(trx);
        }),
      ),
    );
    expect(isDeadlineExceeded(error)).toBe(true);
    expect(error).toMatchObject({ cause: expect.objectContaining({ errno: 1969 }) });
    expect(ms).toBeLessThan(2_500);
    const [rows] = await admin.query<mysqlPromise.RowDataPacket[]>('SELECT id FROM items WHERE id = 31');
    expect(rows).toEqual([]);
    // the pool's one connection is not left inside the transaction (its locks held) for the next user
    const open = await sql<{ t: number }>`SELECT @@in_transaction AS t`.execute(kysely);
    expect(Number(open.rows[0]!.t)).toBe(0);
  });

  it('a guarded pool: execute (prepared statements) carries the limit too; no deadline, no change', async () => {
    const raw = mysqlPromise.createPool({ ...config(), connectionLimit: 2 });
    closers.push(() => raw.end());
    const pool = mysqlDeadlinePool(raw);
    const { error, ms } = await timed(() =>
      runWithDeadline(Deadline.after(200), () => pool.execute('SELECT SLEEP(?) AS s', [5])),
    );
    expect(isDeadlineExceeded(error)).toBe(true);
    expect(ms).toBeLessThan(500);
    expect(await sleeping()).toEqual([]);
    const [rows] = await pool.execute<mysqlPromise.RowDataPacket[]>('SELECT ? + 1 AS n', [1]);
    expect(rows[0]!.n).toBe(2);
    const connection = await runWithDeadline(Deadline.after(2_000), () => pool.getConnection());
    const [[{ v }]] = (await connection.query('SELECT @@max_statement_time AS v')) as unknown as [
      [{ v: number }],
    ];
    expect(Number(v)).toBe(0); // the limit is the statement's, never the session's
    connection.release();
  });

  it('Drizzle (mysql2 promise pool): a query is stopped on the server by the deadline', async () => {
    const raw = mysqlPromise.createPool({ ...config(), connectionLimit: 2 });
    closers.push(() => raw.end());
    const orm = drizzle(mysqlDeadlinePool(raw) as unknown as mysqlPromise.Pool);
    const { error, ms } = await timed(() =>
      runWithDeadline(Deadline.after(200), async () => await orm.execute(drizzleSql`SELECT SLEEP(5) AS s`)),
    );
    // Drizzle wraps a driver's error in its DrizzleQueryError: prazo's is its cause
    expect(isDeadlineExceeded((error as { cause?: unknown }).cause)).toBe(true);
    expect(ms).toBeLessThan(500);
    expect(await sleeping()).toEqual([]);
    const [rows] = (await runWithDeadline(Deadline.after(2_000), () =>
      (async () => await orm.execute(drizzleSql`SELECT name FROM items WHERE id = ${1}`))(),
    )) as unknown as [{ name: string }[]];
    expect(rows).toEqual([{ name: 'a' }]);
  });
});
