import mariadb from 'mariadb';
import mysql from 'mysql2';
import mysqlPromise from 'mysql2/promise';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runWithDeadline } from '../deadline/ambient.js';
import { Deadline } from '../deadline/deadline.js';
import { isDeadlineExceeded, isDeadlineInsufficient, isInvalidOptions } from '../errors/guards.js';
import { isRetryable } from '../retry/classify.js';
import { createStoreEvents } from './events.js';
import { startMariadb, type TestMariadb, timed } from './mariadb.test-helpers.js';
import { mysqlQuery } from './query.js';

/**
 * Real MariaDB 10.11 (Debian's mariadb-server) on 127.0.0.1, through mysql2 (promise and callback
 * pools) and the mariadb connector; real time, generous margins (SPEC D4, D7, #17 item 1).
 */
let db: TestMariadb;
let admin: mysqlPromise.Connection;
const pools: { close(): Promise<unknown> }[] = [];
beforeAll(async () => {
  db = await startMariadb();
  admin = await mysqlPromise.createConnection(config());
  await admin.query('CREATE TABLE counters (id INT PRIMARY KEY, v INT NOT NULL) ENGINE=InnoDB');
  await admin.query('INSERT INTO counters VALUES (1, 0), (2, 0)');
});
afterAll(async () => {
  for (const pool of pools) await pool.close();
  await admin?.end();
  await db?.stop();
});

const config = () => ({ host: db.host, port: db.port, user: db.user, database: db.database });
const promisePool = (limit = 4) => {
  const pool = mysqlPromise.createPool({ ...config(), connectionLimit: limit });
  pools.push({ close: () => pool.end() });
  return pool;
};
const callbackPool = () => {
  const pool = mysql.createPool({ ...config(), connectionLimit: 4 });
  pools.push({ close: () => new Promise((r) => pool.end(() => r(undefined))) });
  return pool;
};
const mariadbPool = (limit = 4) => {
  const pool = mariadb.createPool({ ...config(), connectionLimit: limit });
  pools.push({ close: () => pool.end() });
  return pool;
};
/** What the server is running, as its process list says (the statement text, its thread id). */
const running = async (like: string) => {
  const [rows] = await admin.query<mysqlPromise.RowDataPacket[]>(
    "SELECT id, info, time_ms FROM information_schema.processlist WHERE info LIKE ? AND command = 'Query' AND id <> CONNECTION_ID()",
    [like],
  );
  return rows.map((r) => ({ id: Number(r.id), info: String(r.info), timeMs: Number(r.time_ms) }));
};
const threadAlive = async (id: number) => {
  const [rows] = await admin.query<mysqlPromise.RowDataPacket[]>(
    'SELECT id FROM information_schema.processlist WHERE id = ?',
    [id],
  );
  return rows.length > 0;
};
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/**
 * The statements still running like `like` once the server has ended one (error 1969, or a KILL QUERY
 * from another connection): its process list may show the thread a few ms more under load, so it is
 * read until it is gone, for at most 200 ms.
 */
const runningAfterEnd = async (like: string) => {
  let view = await running(like);
  for (let i = 0; i < 10 && view.length > 0; i += 1) {
    await sleep(20);
    view = await running(like);
  }
  return view;
};

describe('mysqlQuery on real MariaDB (SPEC D7)', () => {
  const drivers = {
    'mysql2 promise pool': () => promisePool(),
    'mysql2 callback pool': () => callbackPool(),
    'mariadb connector pool': () => mariadbPool(),
  };
  for (const [driver, make] of Object.entries(drivers)) {
    it(`${driver}: SELECT SLEEP(5) under a 200 ms deadline ends on the server by 300 ms and leaves the process list`, async () => {
      const pool = make();
      await mysqlQuery(pool, 'SELECT 1'); // a warm connection: the measure is the statement's
      const { error, ms } = await timed(() =>
        mysqlQuery(pool, 'SELECT SLEEP(5) AS slept', undefined, {
          deadline: Deadline.after(200),
          name: 'orders-db',
        }),
      );
      // The server has ended it (error 1969 came back).
      const serverView = await runningAfterEnd('%SLEEP(5)%');
      expect(isDeadlineExceeded(error)).toBe(true);
      expect(error).toMatchObject({
        dependency: 'orders-db',
        outcome: 'unknown',
        cause: expect.objectContaining({ errno: 1969 }),
      });
      expect(ms).toBeGreaterThan(150);
      expect(ms).toBeLessThan(300);
      expect(serverView).toEqual([]);
      // the server ended it itself: the connection is clean and goes on serving
      expect(await mysqlQuery(pool, 'SELECT 2 AS two')).toBeTruthy();
    });
  }

  it("a statement MariaDB's own limit ended (1969) leaves a healthy connection: the pool hands out the same thread, no reconnect", async () => {
    const pool = promisePool(2);
    const idOf = async () =>
      Number(((await pool.query('SELECT CONNECTION_ID() AS id')) as unknown as [[{ id: number }]])[0][0].id);
    const before = await idOf();
    const error = await mysqlQuery(pool, 'SELECT SLEEP(5)', undefined, {
      deadline: Deadline.after(200),
      cancelGraceMs: 1_000, // the backup kill (which would rightly drop it) far enough out for a loaded machine
    }).catch((e: unknown) => e);
    expect(error).toMatchObject({ cause: expect.objectContaining({ errno: 1969 }) });
    expect(await idOf()).toBe(before);
    expect(await threadAlive(before)).toBe(true);
  });

  it('control: a client-side timeout only (mysql2 `timeout`) leaves SLEEP(5) running on the server for 4 s', async () => {
    const connection = await mysqlPromise.createConnection(config());
    const thread = connection.threadId;
    const started = performance.now();
    const error = await connection.query({ sql: 'SELECT SLEEP(5)', timeout: 200 }).catch((e: unknown) => e);
    expect(String((error as Error).message)).toMatch(/timeout/i);
    expect(performance.now() - started).toBeLessThan(1_000);
    connection.destroy();
    await sleep(4_000 - (performance.now() - started));
    const still = await running('SELECT SLEEP(5)');
    expect(still.map((r) => r.id)).toContain(thread);
    expect(still.find((r) => r.id === thread)!.timeMs).toBeGreaterThanOrEqual(3_900);
    await admin.query(`KILL ${thread}`);
  });

  it('reads the result as the driver gives it, with values, under a roomy deadline', async () => {
    const [rows] = await mysqlQuery<[{ n: number }[], unknown]>(promisePool(), 'SELECT ? + 1 AS n', [41], {
      deadline: Deadline.after(5_000),
    });
    expect(rows).toEqual([{ n: 42 }]);
    const mrows = await mysqlQuery<{ n: number }[]>(mariadbPool(), 'SELECT ? + 1 AS n', [1], {
      deadline: Deadline.after(5_000),
    });
    expect(mrows[0]!.n).toBe(2);
    const [crows] = await mysqlQuery<[{ n: number }[]]>(callbackPool(), 'SELECT 3 AS n');
    expect(crows).toEqual([{ n: 3 }]);
  });

  it('takes the ambient deadline without threading it by hand', async () => {
    const pool = promisePool();
    const { error, ms } = await timed(() =>
      runWithDeadline(Deadline.after(200), () => mysqlQuery(pool, 'SELECT SLEEP(5)')),
    );
    expect(isDeadlineExceeded(error)).toBe(true);
    expect(ms).toBeLessThan(1_000);
  });

  it('below the p99 nothing is sent and no connection is taken (DEADLINE_INSUFFICIENT)', async () => {
    const pool = promisePool();
    let taken = 0;
    const counting = new Proxy(pool, {
      get: (t, k) => {
        if (k !== 'getConnection') return Reflect.get(t, k);
        return () => {
          taken++;
          return t.getConnection();
        };
      },
    });
    const error = await mysqlQuery(counting, 'SELECT 1', undefined, {
      deadline: Deadline.after(50),
      p99Ms: 80,
    }).catch((e: unknown) => e);
    expect(isDeadlineInsufficient(error)).toBe(true);
    expect(error).toMatchObject({ remainingMs: expect.any(Number), neededMs: 80, dependency: 'mysql' });
    expect(taken).toBe(0);
    const expired = await mysqlQuery(counting, 'SELECT 1', undefined, { deadline: Deadline.after(0) }).catch(
      (e: unknown) => e,
    );
    expect(isDeadlineInsufficient(expired)).toBe(true);
    expect(taken).toBe(0);
  });

  it('an exhausted pool does not hold the call past its deadline; the late connection goes back', async () => {
    const pool = promisePool(1);
    const held = await pool.getConnection();
    const { error, ms } = await timed(() =>
      mysqlQuery(pool, 'SELECT 1', undefined, { deadline: Deadline.after(150), name: 'orders-db' }),
    );
    expect(isDeadlineExceeded(error)).toBe(true);
    expect((error as Error).message).toContain('orders-db (pool)');
    expect((error as { outcome?: string }).outcome).toBeUndefined(); // never sent
    expect(ms).toBeLessThan(800);
    held.release();
    await sleep(50);
    // the connection that arrived late went back: the single-connection pool still serves
    expect(await mysqlQuery(pool, 'SELECT 1', undefined, { deadline: Deadline.after(2_000) })).toBeTruthy();
  });

  it('MySQL dialect (hint only on SELECT): an UPDATE past its deadline is killed on the server, the error says its outcome is unknown, never retried', async () => {
    const pool = promisePool();
    const before = await running('%counters%');
    expect(before).toEqual([]);
    const { error, ms } = await timed(() =>
      mysqlQuery(pool, 'UPDATE counters SET v = v + 1 + SLEEP(5) WHERE id = 1', undefined, {
        deadline: Deadline.after(200),
        server: 'mysql', // MariaDB ignores the MySQL hint: only KILL QUERY can stop it
        name: 'orders-db',
      }),
    );
    expect(isDeadlineExceeded(error)).toBe(true);
    expect(error).toMatchObject({ outcome: 'unknown', cause: expect.objectContaining({ errno: 1317 }) });
    expect((error as Error).message).toMatch(/outcome is unknown.*do not retry it blindly/);
    expect(isRetryable(error)).toBe(false);
    expect(ms).toBeLessThan(700);
    expect(await running('%counters%')).toEqual([]);
    const [rows] = await admin.query<mysqlPromise.RowDataPacket[]>('SELECT v FROM counters WHERE id = 1');
    expect(rows[0]!.v).toBe(0); // InnoDB rolled the interrupted statement back
  });

  it('a killed connection is destroyed, not handed back to the pool (a late kill must not reach its next user)', async () => {
    const pool = promisePool(1);
    const [[{ id }]] = (await pool.query('SELECT CONNECTION_ID() AS id')) as unknown as [[{ id: number }]];
    const error = await mysqlQuery(pool, 'DO SLEEP(5)', undefined, {
      deadline: Deadline.after(150),
      server: 'mysql', // DO is not covered by the hint: KILL QUERY at the deadline
    }).catch((e: unknown) => e);
    expect(isDeadlineExceeded(error)).toBe(true);
    await sleep(100);
    expect(await threadAlive(id)).toBe(false);
    const [[next]] = (await pool.query('SELECT CONNECTION_ID() AS id')) as unknown as [[{ id: number }]];
    expect(next.id).not.toBe(id);
  });

  it('KILL QUERY from someone else with time left stays the driver error, not a deadline', async () => {
    const pool = promisePool();
    const pending = mysqlQuery(pool, 'SELECT SLEEP(5)', undefined, {
      deadline: Deadline.after(10_000),
    }).catch((e: unknown) => e);
    let victim: { id: number } | undefined;
    for (let i = 0; i < 100 && victim === undefined; i++) {
      victim = (await running('%SLEEP(5)%'))[0];
      if (victim === undefined) await sleep(20);
    }
    await admin.query(`KILL QUERY ${victim!.id}`);
    const error = await pending;
    expect(isDeadlineExceeded(error)).toBe(false);
    expect(error).toMatchObject({ errno: 1317 });
  });

  it('the caller aborting stops the statement on the server and rejects with its reason', async () => {
    const pool = mariadbPool();
    const controller = new AbortController();
    const reason = new Error('client went away');
    setTimeout(() => controller.abort(reason), 150);
    const { error, ms } = await timed(() =>
      mysqlQuery(pool, 'SELECT SLEEP(5)', undefined, {
        deadline: Deadline.after(10_000),
        signal: controller.signal,
      }),
    );
    expect(error).toBe(reason);
    expect(ms).toBeLessThan(1_000);
    await sleep(50);
    expect(await running('%SLEEP(5)%')).toEqual([]);
  });

  it('a statement the prefix cannot carry still runs, under a kill at the deadline (several statements)', async () => {
    const pool = mysqlPromise.createPool({ ...config(), connectionLimit: 2, multipleStatements: true });
    pools.push({ close: () => pool.end() });
    const { error, ms } = await timed(() =>
      mysqlQuery(pool, 'SELECT 1; SELECT SLEEP(5)', undefined, { deadline: Deadline.after(200) }),
    );
    expect(isDeadlineExceeded(error)).toBe(true);
    expect(ms).toBeLessThan(700);
    expect(await runningAfterEnd('%SLEEP(5)%')).toEqual([]);
  });

  it('emits the executor events: attempts, their outcome and phase, fast failures (for instrumentPrazo)', async () => {
    const pool = promisePool();
    const events = createStoreEvents('orders-db');
    const seen: { type: string; outcome?: string; phase?: string; latencyMs?: number }[] = [];
    const subscription = events.on((e) => seen.push(e as never));
    const options = { events, name: 'orders-db' };
    await mysqlQuery(pool, 'SELECT 1', undefined, { ...options, deadline: Deadline.after(2_000) });
    await mysqlQuery(pool, 'SELECT SLEEP(5)', undefined, { ...options, deadline: Deadline.after(150) }).catch(
      () => undefined,
    );
    await mysqlQuery(pool, 'SELECT * FROM nowhere', undefined, {
      ...options,
      deadline: Deadline.after(2_000),
    }).catch(() => undefined);
    await mysqlQuery(pool, 'SELECT 1', undefined, {
      ...options,
      deadline: Deadline.after(10),
      p99Ms: 50,
    }).catch(() => undefined);
    expect(seen.map((e) => [e.type, e.outcome, e.phase])).toEqual([
      ['attempt', undefined, undefined],
      ['attempt-end', 'success', undefined],
      ['attempt', undefined, undefined],
      ['attempt-end', 'timeout', 'deadline'],
      ['attempt', undefined, undefined],
      ['attempt-end', 'error', undefined],
      ['deadline-insufficient', undefined, undefined],
    ]);
    expect(seen[3]!.latencyMs).toBeGreaterThan(100); // the work the server did and threw away
    subscription.dispose();
    await mysqlQuery(pool, 'SELECT 1', undefined, { ...options, deadline: Deadline.after(2_000) });
    expect(seen).toHaveLength(7);
  });

  it('refuses hostile options, every problem together, with did-you-mean', async () => {
    const pool = promisePool();
    const error = await mysqlQuery(pool, 'SELECT 1', undefined, {
      p99: 10,
      cancelGraceMs: -1,
      server: 'oracle',
      killVia: 'root@localhost',
    } as never).catch((e: unknown) => e);
    expect(isInvalidOptions(error)).toBe(true);
    const message = (error as Error).message;
    expect(message).toContain('p99Ms');
    expect(message).toContain('cancelGraceMs');
    expect(message).toContain('server');
    expect(message).toContain('killVia');
    for (const sql of [undefined, '', '   ', 42]) {
      await expect(mysqlQuery(pool, sql as never)).rejects.toThrow(/non-empty string/);
    }
  });
});

/**
 * A limit already in force on the server (a DBA's session, global or per-user `max_statement_time`)
 * or in the statement itself is not prazo's to lift: prazo's limit is the *smaller* of it and the
 * time left, and when the other one fires first its error is the server's, not the deadline's (#24
 * items 11, 12).
 */
describe('limits already in force on MariaDB (#24)', () => {
  const slowest = 'SELECT SLEEP(1) AS slept';
  const expectServerLimit = (outcome: { error: unknown; ms: number }) => {
    expect(isDeadlineExceeded(outcome.error)).toBe(false);
    expect(outcome.error).toMatchObject({ errno: 1969 }); // the driver's own error, unchanged
    expect(outcome.ms).toBeLessThan(600); // ~100 ms; without the minimum it ran the full ~1,000 ms
  };

  it("a session limit of 100 ms (SET SESSION max_statement_time) ends a 1 s statement at ~100 ms under a 2 s deadline, with the server's error", async () => {
    const mysql2Connection = await mysqlPromise.createConnection(config());
    const connector = await mariadb.createConnection(config());
    try {
      await mysql2Connection.query('SET SESSION max_statement_time = 0.1');
      await connector.query('SET SESSION max_statement_time = 0.1');
      for (const connection of [mysql2Connection, connector]) {
        const outcome = await timed(() =>
          mysqlQuery(connection, slowest, undefined, { deadline: Deadline.after(2_000) }),
        );
        expectServerLimit(outcome);
      }
    } finally {
      await mysql2Connection.end();
      await connector.end();
    }
  });

  it('a global limit of 100 ms (SET GLOBAL, read by the connections opened after it) and a per-user one (GRANT … WITH MAX_STATEMENT_TIME) hold the same way', async () => {
    await admin.query('SET GLOBAL max_statement_time = 0.1');
    try {
      for (const pool of [promisePool(), mariadbPool(), callbackPool()]) {
        const outcome = await timed(() =>
          mysqlQuery(pool, slowest, undefined, { deadline: Deadline.after(2_000) }),
        );
        expectServerLimit(outcome);
      }
    } finally {
      await admin.query('SET GLOBAL max_statement_time = 0');
    }
    await admin.query("CREATE USER IF NOT EXISTS 'limited'@'%' WITH MAX_STATEMENT_TIME 0.1");
    await admin.query("GRANT ALL ON prazo.* TO 'limited'@'%'");
    const limited = mysqlPromise.createPool({ ...config(), user: 'limited', connectionLimit: 1 });
    pools.push({ close: () => limited.end() });
    expectServerLimit(
      await timed(() => mysqlQuery(limited, slowest, undefined, { deadline: Deadline.after(2_000) })),
    );
  });

  it('a limit looser than the deadline does not stretch it: session 5 s, deadline 200 ms → DEADLINE_EXCEEDED at ~200 ms', async () => {
    const connection = await mysqlPromise.createConnection(config());
    try {
      await connection.query('SET SESSION max_statement_time = 5');
      const { error, ms } = await timed(() =>
        mysqlQuery(connection, 'SELECT SLEEP(5)', undefined, { deadline: Deadline.after(200) }),
      );
      expect(isDeadlineExceeded(error)).toBe(true);
      expect(error).toMatchObject({ outcome: 'unknown', cause: expect.objectContaining({ errno: 1969 }) });
      expect(ms).toBeGreaterThan(150);
      expect(ms).toBeLessThan(600);
    } finally {
      await connection.end();
    }
  });

  it("a statement's own SET STATEMENT max_statement_time=0.05 firing with 1.9 s left is the server's error, not DEADLINE_EXCEEDED", async () => {
    for (const pool of [promisePool(), mariadbPool()]) {
      const { error, ms } = await timed(() =>
        mysqlQuery(pool, 'SET STATEMENT max_statement_time=0.05 FOR SELECT SLEEP(1)', undefined, {
          deadline: Deadline.after(2_000),
        }),
      );
      expect(isDeadlineExceeded(error)).toBe(false);
      expect(error).toMatchObject({ errno: 1969 });
      expect(ms).toBeLessThan(600);
    }
  });
});
