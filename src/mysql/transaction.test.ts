import mariadb from 'mariadb';
import mysqlPromise from 'mysql2/promise';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { Deadline } from '../deadline/deadline.js';
import { isDeadlineExceeded, isDeadlineInsufficient } from '../errors/guards.js';
import { startMariadb, type TestMariadb } from './mariadb.test-helpers.js';
import { mysqlTransaction } from './transaction.js';

/** Transactions on real MariaDB 10.11 through mysql2 and the mariadb connector (SPEC D4, D7, #17 item 1). */
let db: TestMariadb;
let admin: mysqlPromise.Connection;
let pool: mysqlPromise.Pool;
let mpool: ReturnType<typeof mariadb.createPool>;
beforeAll(async () => {
  db = await startMariadb();
  const config = { host: db.host, port: db.port, user: db.user, database: db.database };
  admin = await mysqlPromise.createConnection(config);
  await admin.query('CREATE TABLE orders (id INT PRIMARY KEY, note VARCHAR(40)) ENGINE=InnoDB');
  pool = mysqlPromise.createPool({ ...config, connectionLimit: 1 });
  mpool = mariadb.createPool({ ...config, connectionLimit: 1 });
});
afterAll(async () => {
  await pool?.end();
  await mpool?.end();
  await admin?.end();
  await db?.stop();
});
beforeEach(async () => {
  await admin.query('DELETE FROM orders');
});

const orders = async () => {
  const [rows] = await admin.query<mysqlPromise.RowDataPacket[]>('SELECT id FROM orders ORDER BY id');
  return rows.map((r) => Number(r.id));
};
const connectionId = async (): Promise<number> => {
  const [rows] = await pool.query<mysqlPromise.RowDataPacket[]>('SELECT CONNECTION_ID() AS id');
  return Number(rows[0]!.id);
};
const sleeping = async () => {
  const [rows] = await admin.query<mysqlPromise.RowDataPacket[]>(
    "SELECT id FROM information_schema.processlist WHERE info LIKE '%SLEEP(5)%' AND id <> CONNECTION_ID()",
  );
  return rows;
};

describe('mysqlTransaction on real MariaDB', () => {
  it('commits what fn did when it finishes in time, each statement limited on the server', async () => {
    const result = await mysqlTransaction(
      pool,
      async (tx) => {
        await tx.query('INSERT INTO orders VALUES (?, ?)', [1, 'a']);
        await tx.query('INSERT INTO orders VALUES (?, ?)', [2, 'b']);
        return 'done';
      },
      { deadline: Deadline.after(5_000) },
    );
    expect(result).toBe('done');
    expect(await orders()).toEqual([1, 2]);
  });

  it('a business error rolls back and keeps the connection', async () => {
    const before = await connectionId();
    const error = await mysqlTransaction(
      pool,
      async (tx) => {
        await tx.query('INSERT INTO orders VALUES (1, "a")');
        throw new Error('out of stock');
      },
      { deadline: Deadline.after(5_000) },
    ).catch((e: unknown) => e);
    expect((error as Error).message).toBe('out of stock');
    expect(await orders()).toEqual([]);
    expect(await connectionId()).toBe(before);
  });

  it('a deadline passing mid-statement rolls back, rejects with DEADLINE_EXCEEDED and drops the connection', async () => {
    const before = await connectionId();
    const started = performance.now();
    const error = await mysqlTransaction(
      mpool,
      async (tx) => {
        await tx.query('INSERT INTO orders VALUES (1, "a")');
        await tx.query('SELECT SLEEP(5)');
        await tx.query('INSERT INTO orders VALUES (2, "b")');
      },
      { deadline: Deadline.after(250), name: 'orders-db' },
    ).catch((e: unknown) => e);
    expect(isDeadlineExceeded(error)).toBe(true);
    expect(error).toMatchObject({ dependency: 'orders-db', outcome: 'unknown' });
    expect(performance.now() - started).toBeLessThan(1_000);
    expect(await sleeping()).toEqual([]);
    expect(await orders()).toEqual([]);
    expect(before).toBeGreaterThan(0);
  });

  it('finishing after the deadline rolls back: the caller was told it failed', async () => {
    const error = await mysqlTransaction(
      pool,
      async (tx) => {
        await tx.query('INSERT INTO orders VALUES (1, "a")');
        await new Promise((r) => setTimeout(r, 250)); // work in the process, not on the server
      },
      { deadline: Deadline.after(150) },
    ).catch((e: unknown) => e);
    expect(isDeadlineExceeded(error)).toBe(true);
    expect(await orders()).toEqual([]);
    const after = await connectionId(); // the pool of one still serves, on a new connection
    expect(after).toBeGreaterThan(0);
  });

  it('an abort mid-transaction kills the running statement, rolls back, drops the connection', async () => {
    const before = await connectionId();
    const controller = new AbortController();
    const reason = new Error('client went away');
    setTimeout(() => controller.abort(reason), 150);
    const started = performance.now();
    const error = await mysqlTransaction(
      pool,
      async (tx) => {
        await tx.query('INSERT INTO orders VALUES (1, "a")');
        await tx.query('SELECT SLEEP(5)');
      },
      { deadline: Deadline.after(10_000), signal: controller.signal },
    ).catch((e: unknown) => e);
    expect(error).toBe(reason);
    expect(performance.now() - started).toBeLessThan(1_000);
    await new Promise((r) => setTimeout(r, 50));
    expect(await sleeping()).toEqual([]);
    expect(await orders()).toEqual([]);
    expect(await connectionId()).not.toBe(before);
  });

  it("below the whole transaction's p99 nothing is sent and no connection is taken", async () => {
    let taken = 0;
    const counting = {
      getConnection: () => {
        taken++;
        return pool.getConnection();
      },
      query: pool.query.bind(pool),
    };
    const error = await mysqlTransaction(counting as never, async () => 1, {
      deadline: Deadline.after(100),
      p99Ms: 500,
    }).catch((e: unknown) => e);
    expect(isDeadlineInsufficient(error)).toBe(true);
    expect(taken).toBe(0);
  });
});
