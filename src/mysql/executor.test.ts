import knexFactory from 'knex';
import { Kysely, MysqlDialect, sql } from 'kysely';
import mariadb from 'mariadb';
import mysql from 'mysql2';
import mysqlPromise from 'mysql2/promise';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { FakeClock } from '../clock/fake.js';
import { sleep } from '../clock/index.js';
import { systemClock } from '../clock/system.js';
import { runWithDeadline } from '../deadline/ambient.js';
import { Deadline } from '../deadline/deadline.js';
import { createDependency, type Dependency } from '../dependency/dependency.js';
import type { DependencyOptions } from '../dependency/options.js';
import { executorOf } from '../dependency/transport.js';
import type { DependencyEvent } from '../dependency/types.js';
import {
  isDeadlineInsufficient,
  isInvalidOptions,
  isResponseTimeout,
  isThrottled,
} from '../errors/guards.js';
import { dependencyFailureOf } from '../retry/pushback.js';
import { seededRandom } from '../testing/random.js';
import { createStoreEvents } from './events.js';
import { knexWithDeadline } from './knex.js';
import { freePort, startMariadb, type TestMariadb, timed } from './mariadb.test-helpers.js';
import { mysqlDeadlinePool } from './pool.js';
import { mysqlQuery } from './query.js';
import { mysqlTransaction } from './transaction.js';

/**
 * prazo/mysql through an executor (issue #25 item 1: "the stores use the same seam"): with
 * `dependency` each statement, transaction or held connection is one call of `dependency.execute`,
 * so the executor owns D4, the throttle, the concurrency limit, the recorder and the events (SPEC
 * D4, X7, X11), while the store keeps its mechanics inside the attempt: the pool wait and the
 * statement's `max_statement_time` end at the attempt's end, and `KILL QUERY` stops it on the server
 * when the caller gives up (SPEC D7). A real MariaDB (Debian's mariadb-server) on 127.0.0.1; where
 * exact numbers are asserted the executor runs on a FakeClock that does not move.
 */

let db: TestMariadb;
let admin: mysqlPromise.Connection;
const closers: (() => unknown)[] = [];
beforeAll(async () => {
  db = await startMariadb();
  admin = await mysqlPromise.createConnection(config());
  await admin.query('CREATE TABLE skus (sku VARCHAR(20) PRIMARY KEY, qty INT NOT NULL) ENGINE=InnoDB');
  await admin.query("INSERT INTO skus VALUES ('taken', 1)");
}, 60_000);
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});
afterAll(async () => {
  await admin?.end();
  await db?.stop();
});

function config() {
  return { host: db.host, port: db.port, user: db.user, database: db.database };
}
function promisePool(limit = 4, port = db.port): mysqlPromise.Pool {
  const pool = mysqlPromise.createPool({ ...config(), port, connectionLimit: limit });
  closers.push(() => pool.end());
  return pool;
}

/**
 * Connections the server accepted so far (every connection opened, from any client), read after
 * 100 ms: a connection asked for just before is counted by then.
 */
async function connectionsOpened(): Promise<number> {
  await sleep(systemClock, 100);
  const [rows] = await admin.query<mysqlPromise.RowDataPacket[]>("SHOW GLOBAL STATUS LIKE 'Connections'");
  return Number(rows[0]!.Value);
}
/** Statements running like `like` (not the admin's own). */
async function running(like: string): Promise<number> {
  const [rows] = await admin.query<mysqlPromise.RowDataPacket[]>(
    "SELECT id FROM information_schema.processlist WHERE info LIKE ? AND command = 'Query' AND id <> CONNECTION_ID()",
    [like],
  );
  return rows.length;
}

const events = new WeakMap<Dependency, DependencyEvent[]>();
/** The events a dependency made by {@link dependency} emitted. */
const seen = (dep: Dependency): DependencyEvent[] => events.get(dep)!;

function dependency(options: Partial<DependencyOptions> = {}): Dependency {
  const dep = createDependency({ name: 'orders-db', p99Ms: 100, ...options });
  const list: DependencyEvent[] = [];
  dep.on((e) => list.push(e));
  events.set(dep, list);
  return dep;
}

/** Waits (real time) until `check` holds, at most `ms`. */
async function until(check: () => Promise<boolean> | boolean, ms = 5_000): Promise<void> {
  const started = systemClock.now();
  while (!(await check())) {
    if (systemClock.now() - started > ms) throw new Error('condition not met in time');
    await sleep(systemClock, 10);
  }
}

/** The `max_statement_time` the statement ran under, in ms (MariaDB reads the statement's own). */
const LIMIT = 'SELECT @@max_statement_time * 1000 AS ms';
const limitOf = (result: unknown): number => {
  const rows = (Array.isArray(result) && Array.isArray(result[0]) ? result[0] : result) as { ms: unknown }[];
  return Number(rows[0]!.ms);
};

describe('mysqlQuery({ dependency }) and mysqlTransaction({ dependency })', () => {
  it('runs as one executor call: latency recorded in its recorder, its attempt events, the result as the driver gives it', async () => {
    const dep = dependency();
    const pool = promisePool();
    const [rows] = await mysqlQuery<[{ n: number }[]]>(pool, 'SELECT ? AS n', [7], {
      dependency: dep,
      deadline: Deadline.after(5_000),
    });
    expect(rows).toEqual([{ n: 7 }]);
    expect(dep.recorder.currentWindow()).toMatchObject({ count: 1, successes: 1, errors: 0, timeouts: 0 });
    expect(seen(dep).map((e) => e.type)).toEqual(['attempt', 'attempt-end']);
    expect(seen(dep)[1]).toMatchObject({ dependency: 'orders-db', outcome: 'success', kind: 'original' });
    // The mariadb connector the same way.
    const connector = mariadb.createPool({ ...config(), connectionLimit: 2 });
    closers.push(() => connector.end());
    const viaConnector = await mysqlQuery<{ n: number }[]>(connector, 'SELECT 8 AS n', undefined, {
      dependency: dep,
    });
    expect(viaConnector[0]).toMatchObject({ n: 8 });
    expect(dep.recorder.currentWindow().successes).toBe(2);
  });

  it("the max_statement_time sent is the attempt's end: ceil(p99 × slack), or the deadline when it comes first (SPEC C1, D7)", async () => {
    const clock = new FakeClock(); // it does not move: the numbers are exact
    const dep = dependency({ clock });
    const attemptMs = dep.timeouts.responseMs;
    expect(attemptMs).toBeGreaterThan(100);
    const pool = promisePool();
    const far = await mysqlQuery(pool, LIMIT, undefined, {
      dependency: dep,
      deadline: Deadline.after(9_000, { clock }),
    });
    expect(limitOf(far)).toBeCloseTo(attemptMs, 6); // not 9 000: the attempt ends first
    const near = await mysqlQuery(pool, LIMIT, undefined, {
      dependency: dep,
      deadline: Deadline.after(attemptMs - 7, { clock }),
    });
    expect(limitOf(near)).toBeCloseTo(attemptMs - 7, 6);
    const ambient = await runWithDeadline(Deadline.after(attemptMs - 11, { clock }), () =>
      mysqlQuery(pool, LIMIT, undefined, { dependency: dep }),
    );
    expect(limitOf(ambient)).toBeCloseTo(attemptMs - 11, 6);
    // A transaction: each of its statements under the one attempt.
    const inTx = await mysqlTransaction(pool, async (tx) => limitOf(await tx.query(LIMIT)), {
      dependency: dep,
      deadline: Deadline.after(9_000, { clock }),
    });
    expect(inTx).toBeCloseTo(attemptMs, 6);
  });

  it('D4 refusal takes no connection: less than the p99 left fails at once, nothing opened on the server', async () => {
    const dep = dependency({ p99Ms: 200 });
    const pool = promisePool();
    const before = await connectionsOpened();
    const refused = await mysqlQuery(pool, 'SELECT 1', undefined, {
      dependency: dep,
      deadline: Deadline.after(50),
    }).catch((e: unknown) => e);
    expect(isDeadlineInsufficient(refused)).toBe(true);
    const tx = await mysqlTransaction(pool, async () => 'ran', {
      dependency: dep,
      deadline: Deadline.after(50),
    }).catch((e: unknown) => e);
    expect(isDeadlineInsufficient(tx)).toBe(true);
    expect(await connectionsOpened()).toBe(before);
    expect(seen(dep).map((e) => e.type)).toEqual(['deadline-insufficient', 'deadline-insufficient']);
    expect(dep.recorder.currentWindow().count).toBe(0);
  });

  it('a concurrency limit of 1 queues the second statement before it takes a pooled connection (SPEC X7)', async () => {
    const dep = dependency({ p99Ms: 1_000, concurrencyLimit: { maxInFlight: 1, maxQueue: 4 } });
    const pool = promisePool(4);
    const deadline = Deadline.after(10_000);
    const before = await connectionsOpened();
    const ended: string[] = [];
    const first = mysqlQuery(pool, 'SELECT SLEEP(0.4)', undefined, { dependency: dep, deadline }).then(() =>
      ended.push('first'),
    );
    const second = mysqlQuery(pool, 'SELECT 2', undefined, { dependency: dep, deadline }).then(() =>
      ended.push('second'),
    );
    await until(async () => (await running('%SLEEP(0.4)%')) === 1);
    // The second waits in the executor's queue: no connection taken for it, nothing sent.
    expect(dep.concurrency()).toMatchObject({ inFlight: 1, queued: 1 });
    expect(await connectionsOpened()).toBe(before + 1);
    await Promise.all([first, second]);
    expect(ended).toEqual(['first', 'second']);
    expect(dep.concurrency()).toMatchObject({ inFlight: 0, queued: 0 });
  });

  it("the caller's abort kills the statement on the server and frees the slot at once", async () => {
    // The attempt's own end (ceil(3 s × slack)) is past SLEEP's 5 s minus the checks' 2 s: only
    // the caller's abort can stop it that early.
    const dep = dependency({ p99Ms: 3_000, concurrencyLimit: { maxInFlight: 1, maxQueue: 4 } });
    const pool = promisePool();
    const controller = new AbortController();
    const reason = new Error('the caller left');
    const sleeping = mysqlQuery(pool, 'SELECT SLEEP(5)', undefined, {
      dependency: dep,
      deadline: Deadline.after(20_000),
      signal: controller.signal,
    }).catch((e: unknown) => e);
    await until(async () => (await running('%SLEEP(5)%')) === 1);
    controller.abort(reason);
    const outcome = await timed(() => sleeping);
    expect(outcome.value).toBe(reason);
    expect(outcome.ms).toBeLessThan(200);
    expect(dep.concurrency()).toMatchObject({ inFlight: 0, queued: 0 });
    await until(async () => (await running('%SLEEP(5)%')) === 0, 2_000); // KILL QUERY reached it
    const next = await timed(() =>
      mysqlQuery(pool, 'SELECT 1', undefined, { dependency: dep, deadline: Deadline.after(10_000) }),
    );
    expect(next.error).toBeUndefined();
    expect(next.ms).toBeLessThan(1_000);
    expect(
      seen(dep)
        .filter((e) => e.type === 'attempt-end')
        .map((e) => (e as { outcome: string }).outcome),
    ).toEqual(['cancelled', 'success']);
  });

  it("a statement past the attempt's end: the executor's timeout, the statement ended on the server, recorded as a timeout", async () => {
    const dep = dependency({ p99Ms: 150 });
    const pool = promisePool();
    const outcome = await timed(() =>
      mysqlQuery(pool, 'SELECT SLEEP(3)', undefined, { dependency: dep, deadline: Deadline.after(5_000) }),
    );
    expect(isResponseTimeout(outcome.error)).toBe(true); // the attempt's timeout, not the deadline
    expect(outcome.ms).toBeLessThan(1_000);
    expect(dep.recorder.currentWindow()).toMatchObject({ count: 1, timeouts: 1 });
    await until(async () => (await running('%SLEEP(3)%')) === 0, 2_000);
  });

  it("a duplicate key is the caller's answer: the driver's error, a success for the recorder, the throttle stays shut", async () => {
    const dep = dependency({ random: seededRandom(3) });
    const pool = promisePool();
    for (let i = 0; i < 30; i += 1) {
      const error = await mysqlQuery(pool, "INSERT INTO skus VALUES ('taken', 2)", undefined, {
        dependency: dep,
      }).catch((e: unknown) => e);
      expect(error).toMatchObject({ errno: 1062 }); // as mysql2 gave it
      expect(dependencyFailureOf(error)).toBeUndefined(); // the request's, not the dependency's
    }
    expect(dep.throttling()).toMatchObject({ requests: 30, accepts: 30, probability: 0 });
    expect(dep.recorder.currentWindow()).toMatchObject({ count: 30, successes: 30, errors: 0 });
    await expect(mysqlQuery(pool, 'SELEC 1', undefined, { dependency: dep })).rejects.toMatchObject({
      errno: 1064,
    });
    // A duplicate inside a transaction is an answer too; a business error of its own code the caller's.
    await expect(
      mysqlTransaction(pool, (tx) => tx.query("INSERT INTO skus VALUES ('taken', 3)"), { dependency: dep }),
    ).rejects.toMatchObject({ errno: 1062 });
    await expect(
      mysqlTransaction(
        pool,
        async () => {
          throw new Error('out of stock');
        },
        { dependency: dep },
      ),
    ).rejects.toThrow('out of stock');
    expect(dep.throttling()).toMatchObject({ requests: 33, accepts: 33, probability: 0 });
  });

  it('a server that is not there is the dependency failing: not accepted, an error, marked for pushback, then THROTTLED with no connection tried', async () => {
    const dep = dependency({ random: seededRandom(5) });
    const pool = promisePool(4, await freePort()); // nothing listens there
    const errors: unknown[] = [];
    for (let i = 0; i < 40; i += 1)
      errors.push(
        await mysqlQuery(pool, 'SELECT 1', undefined, { dependency: dep }).catch((e: unknown) => e),
      );
    const refused = errors.filter((e) => (e as { code?: unknown }).code === 'ECONNREFUSED');
    const throttled = errors.filter((e) => isThrottled(e));
    expect(refused.length + throttled.length).toBe(40);
    expect(throttled.length).toBeGreaterThan(10);
    expect(dependencyFailureOf(refused[0])).toMatchObject({
      kind: 'unavailable',
      error: { dependency: 'orders-db' },
    });
    expect(dep.throttling()!.accepts).toBe(0);
    expect(dep.recorder.currentWindow()).toMatchObject({ successes: 0, errors: refused.length });
  });

  it('refuses what the executor owns beside it, a name or clock not its own, and typos: every problem in one error', async () => {
    const dep = dependency();
    const pool = promisePool();
    const all = await mysqlQuery(pool, 'SELECT 1', undefined, {
      dependency: dep,
      p99Ms: 50,
      throttle: false,
      random: Math.random,
      events: createStoreEvents('orders-db'),
      name: 'billing-db',
      clock: new FakeClock(),
    }).catch((e: unknown) => e);
    expect(isInvalidOptions(all)).toBe(true);
    expect((all as { problems: string[] }).problems).toHaveLength(6);
    const message = String((all as Error).message);
    for (const key of ['p99Ms', 'throttle', 'random', 'events', 'name', 'clock'])
      expect(message).toContain(key);
    const typo = await mysqlTransaction(pool, async () => 1, { dependancy: dep } as never).catch(
      (e: unknown) => e,
    );
    expect(isInvalidOptions(typo)).toBe(true);
    expect(String((typo as Error).message)).toMatch(/did you mean .*dependency/);
    const clock = executorOf(dep)!.plan.clock;
    await mysqlQuery(pool, 'SELECT 1', undefined, { dependency: dep, name: 'orders-db', clock });
    expect(dep.recorder.currentWindow().count).toBe(1);
  });
});

describe('mysqlDeadlinePool({ dependency }) and knexWithDeadline({ dependency })', () => {
  it('pool.query is one call each; a connection from getConnection() is one call until released, its statements under its attempt', async () => {
    const clock = new FakeClock();
    const dep = dependency({ clock });
    const attemptMs = dep.timeouts.responseMs;
    const pool = mysqlDeadlinePool(promisePool(), { dependency: dep });
    expect(pool.throttling()).toEqual(dep.throttling());
    expect(limitOf(await pool.query(LIMIT))).toBeCloseTo(attemptMs, 6);
    const connection = await pool.getConnection();
    expect(dep.recorder.currentWindow().count).toBe(1); // the lease is not over yet
    await connection.query('START TRANSACTION'); // the builder's own control passes through
    expect(limitOf(await connection.query(LIMIT))).toBeLessThanOrEqual(attemptMs);
    await connection.query('COMMIT');
    connection.release();
    await until(() => dep.recorder.currentWindow().count === 2);
    expect(seen(dep).filter((e) => e.type === 'attempt-end')).toHaveLength(2);
  });

  it('below the p99 neither pool.query nor getConnection() takes a connection; a limit of 1 holds the next query until the connection is released', async () => {
    const dep = dependency({ p99Ms: 200, concurrencyLimit: { maxInFlight: 1, maxQueue: 4 } });
    const pool = mysqlDeadlinePool(promisePool(), { dependency: dep });
    const before = await connectionsOpened();
    await runWithDeadline(Deadline.after(50), async () => {
      await expect(pool.query('SELECT 1')).rejects.toSatisfy(isDeadlineInsufficient);
      await expect(pool.getConnection()).rejects.toSatisfy(isDeadlineInsufficient);
    });
    expect(await connectionsOpened()).toBe(before);
    await runWithDeadline(Deadline.after(10_000), async () => {
      const connection = await pool.getConnection();
      let ran = false;
      const queued = pool.query('SELECT 1').then(() => {
        ran = true;
      });
      await sleep(systemClock, 150);
      expect(ran).toBe(false);
      expect(dep.concurrency()).toMatchObject({ inFlight: 1, queued: 1 });
      expect(await connectionsOpened()).toBe(before + 1); // the queued query took no connection
      connection.release();
      await queued;
      expect(ran).toBe(true);
    });
  });

  it('Kysely (getConnection per query) and Knex (acquireConnection): one call per query, the limit its attempt, D4 refusing before any connection', async () => {
    const clock = new FakeClock();
    const dep = dependency({ clock });
    const attemptMs = dep.timeouts.responseMs;
    const raw = mysql.createPool({ ...config(), connectionLimit: 2 }); // Kysely's MysqlDialect: the callback API
    const kysely = new Kysely<{ skus: { sku: string; qty: number } }>({
      dialect: new MysqlDialect({ pool: mysqlDeadlinePool(raw, { dependency: dep }) as never }),
    });
    closers.push(() => kysely.destroy());
    const viaKysely = await sql<{ ms: number }>`SELECT @@max_statement_time * 1000 AS ms`.execute(kysely);
    expect(Number(viaKysely.rows[0]!.ms)).toBeCloseTo(attemptMs, 6);
    const knex = knexFactory({ client: 'mysql2', connection: config(), pool: { min: 0, max: 2 } });
    closers.push(() => knex.destroy());
    knexWithDeadline(knex, { dependency: dep });
    const [viaKnex] = (await knex.raw(LIMIT)) as [{ ms: number }[]];
    expect(Number(viaKnex[0]!.ms)).toBeCloseTo(attemptMs, 6);
    const inserted = await knex.transaction(async (trx) => {
      await trx.raw("INSERT INTO skus VALUES ('knex', 1)");
      return ((await trx.raw('SELECT qty FROM skus WHERE sku = ?', ['knex'])) as [unknown[]])[0];
    });
    expect(inserted).toEqual([{ qty: 1 }]);
    await until(() => dep.recorder.currentWindow().count === 3);
    expect(dep.recorder.currentWindow()).toMatchObject({ count: 3, successes: 3 });
    const before = await connectionsOpened();
    await expect(
      runWithDeadline(Deadline.after(50, { clock }), async () => knex.raw('SELECT 1').then((r) => r)),
    ).rejects.toSatisfy(isDeadlineInsufficient);
    await expect(
      runWithDeadline(Deadline.after(50, { clock }), () => sql`SELECT 1`.execute(kysely)),
    ).rejects.toSatisfy(isDeadlineInsufficient);
    expect(await connectionsOpened()).toBe(before);
  });

  it('refuses the thin path options beside a dependency, with did-you-mean for typos', () => {
    const dep = dependency();
    expect(() => mysqlDeadlinePool(promisePool(), { dependency: dep, p99Ms: 10, throttle: false })).toThrow(
      /p99Ms[\s\S]*throttle|throttle[\s\S]*p99Ms/,
    );
    expect(() => mysqlDeadlinePool(promisePool(), { dependencyy: dep } as never)).toThrow(/did you mean/);
    const knex = knexFactory({ client: 'mysql2', connection: config() });
    closers.push(() => knex.destroy());
    expect(() =>
      knexWithDeadline(knex, { dependency: dep, events: createStoreEvents('x'), name: 'y' }),
    ).toThrow(/events[\s\S]*name|name[\s\S]*events/);
  });
});
