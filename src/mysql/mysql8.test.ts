import { Kysely, MysqlDialect, sql } from 'kysely';
import mariadb from 'mariadb';
import mysql from 'mysql2';
import mysqlPromise from 'mysql2/promise';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sleep, systemClock } from '../clock/index.js';
import { runWithDeadline } from '../deadline/ambient.js';
import { Deadline } from '../deadline/deadline.js';
import { isDeadlineExceeded } from '../errors/guards.js';
import { serverOf } from './driver.js';
import { timed } from './mariadb.test-helpers.js';
import { startMysql8, type TestMysql8 } from './mysql8.test-helpers.js';
import { mysqlDeadlinePool } from './pool.js';
import { mysqlQuery } from './query.js';

/**
 * The MySQL (not MariaDB) path against a MySQL-8-speaking server: the wire protocol is real (mysql2's
 * own server implementation, parsed by the real mysql2 and mariadb drivers), MySQL 8's behaviour is
 * emulated as its manual documents it (see mysql8.test-helpers.ts): no real MySQL 8 can run on this
 * machine. What each test reads is the server's own record of what it received and runs
 * (SPEC D4, D7, #17 item 3).
 */
let server: TestMysql8;
const closers: (() => Promise<unknown>)[] = [];
beforeAll(async () => {
  server = await startMysql8();
});
afterAll(async () => {
  for (const close of closers.reverse()) await close();
  await server?.stop();
});

const config = () => ({ host: server.host, port: server.port, user: server.user, database: server.database });
const promisePool = () => {
  const pool = mysqlPromise.createPool({ ...config(), connectionLimit: 2 });
  closers.push(() => pool.end());
  return pool;
};
const threadOf = async (pool: mysqlPromise.Pool) =>
  Number(((await pool.query('SELECT CONNECTION_ID() AS id')) as unknown as [[{ id: number }]])[0][0].id);
const receivedBy = (thread: number, like: RegExp) =>
  server.received.filter((r) => r.thread === thread && like.test(r.sql));

describe('MySQL 8: the server flavour, the MAX_EXECUTION_TIME hint, error 3024, KILL QUERY', () => {
  it("tells MySQL from MariaDB by the handshake's version string, through mysql2 and the mariadb connector", async () => {
    const m2 = await mysqlPromise.createConnection(config());
    closers.push(() => m2.end());
    const connector = await mariadb.createConnection(config());
    closers.push(() => connector.end());
    expect(await serverOf(m2)).toBe('mysql');
    expect(await serverOf(connector)).toBe('mysql');
    // read from the handshake: no statement was sent to ask
    expect(server.received.filter((r) => /version/i.test(r.sql))).toEqual([]);
  });

  it('a SELECT carries MAX_EXECUTION_TIME from the time left; the server ends it (3024, HY000) → DEADLINE_EXCEEDED; no KILL, the connection kept', async () => {
    const pool = promisePool();
    const thread = await threadOf(pool);
    const { error, ms } = await timed(() =>
      mysqlQuery(pool, 'SELECT 1 FROM items WHERE SLEEP(5)', [], {
        deadline: Deadline.after(200),
        name: 'orders-mysql',
        cancelGraceMs: 1_000, // the backup kill far enough out that a stalled loop cannot send it
      }),
    );
    expect(isDeadlineExceeded(error)).toBe(true);
    expect(error).toMatchObject({
      dependency: 'orders-mysql',
      outcome: 'unknown',
      cause: expect.objectContaining({ errno: 3024, sqlState: 'HY000' }),
    });
    expect(ms).toBeLessThan(600); // ~200 ms: the server's own limit; the margin is for a loaded machine
    const [sent] = receivedBy(thread, /SLEEP\(5\)/);
    const limit = Number(
      /^SELECT \/\*\+ MAX_EXECUTION_TIME\((\d+)\) \*\/ 1 FROM items WHERE SLEEP\(5\)$/.exec(sent!.sql)?.[1],
    );
    expect(limit).toBeGreaterThan(100);
    expect(limit).toBeLessThanOrEqual(200);
    expect(server.running()).toEqual([]);
    expect(server.received.filter((r) => /^KILL/i.test(r.sql))).toEqual([]);
    // a statement the server ended cleanly leaves a healthy connection: the pool hands out the same one
    expect(await threadOf(pool)).toBe(thread);
  });

  it('a statement the hint does not cover (UPDATE): KILL QUERY from another connection at the deadline, 1317 → DEADLINE_EXCEEDED outcome unknown, the connection destroyed', async () => {
    const pool = promisePool();
    const thread = await threadOf(pool);
    const { error, ms } = await timed(() =>
      mysqlQuery(pool, "UPDATE items SET name = 'x' WHERE SLEEP(5)", [], {
        deadline: Deadline.after(200),
        cancelGraceMs: 1_000, // the kill goes at the deadline; the client waits 1 s for its 1317
      }),
    );
    expect(isDeadlineExceeded(error)).toBe(true);
    expect(error).toMatchObject({
      outcome: 'unknown',
      cause: expect.objectContaining({ errno: 1317, sqlState: '70100' }),
    });
    expect(ms).toBeLessThan(800);
    expect(receivedBy(thread, /SLEEP\(5\)/).map((r) => r.sql)).toEqual([
      "UPDATE items SET name = 'x' WHERE SLEEP(5)",
    ]);
    const kills = server.received.filter((r) => /^KILL/i.test(r.sql));
    expect(kills.map((k) => k.sql)).toEqual([`KILL QUERY ${thread}`]);
    expect(kills[0]!.thread).not.toBe(thread); // from another connection: this one is busy
    expect(server.running()).toEqual([]);
    // a connection that was sent a kill is never pooled again (the kill could land on its next statement)
    for (let i = 0; i < 40 && server.threads().includes(thread); i++) await sleep(systemClock, 25);
    expect(server.threads()).not.toContain(thread);
    expect(await threadOf(pool)).not.toBe(thread);
  });

  it("Kysely over mysqlDeadlinePool on MySQL 8: the ambient deadline's hint, the server's 3024", async () => {
    const kysely = new Kysely<{ items: { id: number } }>({
      dialect: new MysqlDialect({
        pool: mysqlDeadlinePool(mysql.createPool({ ...config(), connectionLimit: 1 })),
      }),
    });
    closers.push(() => kysely.destroy());
    const { error, ms } = await timed(() =>
      runWithDeadline(Deadline.after(200), () => sql`SELECT 1 FROM items WHERE SLEEP(5)`.execute(kysely)),
    );
    expect(isDeadlineExceeded(error)).toBe(true);
    expect(error).toMatchObject({ cause: expect.objectContaining({ errno: 3024 }) });
    expect(ms).toBeLessThan(600);
    expect(server.received.at(-1)!.sql).toMatch(/^SELECT \/\*\+ MAX_EXECUTION_TIME\(\d+\) \*\/ 1 FROM items/);
    expect(server.running()).toEqual([]);
  });
});
