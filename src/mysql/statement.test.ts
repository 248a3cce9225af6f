import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { FakeClock } from '../clock/fake.js';
import { Deadline } from '../deadline/deadline.js';
import { isDeadlineExceeded } from '../errors/guards.js';
import { mysqlQuery } from './query.js';
import { isServerError, isStatementInterrupted, limitMs, limitStatement } from './statement.js';

/** The statement limit's text in both dialects, and the guard against a server that never answers (#17). */
describe('limitStatement (SPEC D7)', () => {
  it('MariaDB: any single statement gets SET STATEMENT max_statement_time in seconds, rounded down, never above the limit in force (#24)', () => {
    const min = (s: string) => `LEAST(${s}, IF(@@max_statement_time > 0, @@max_statement_time, ${s}))`;
    expect(limitStatement('SELECT SLEEP(5)', 'mariadb', 199.9)).toEqual({
      sql: `SET STATEMENT max_statement_time=${min('0.199')} FOR SELECT SLEEP(5)`,
      covered: true,
      limitMs: 199,
    });
    expect(limitStatement('UPDATE t SET v = 1', 'mariadb', 1_500).sql).toBe(
      `SET STATEMENT max_statement_time=${min('1.500')} FOR UPDATE t SET v = 1`,
    );
    expect(limitStatement('SELECT 1', 'mariadb', 0.2).sql).toContain(`max_statement_time=${min('0.001')} `);
  });

  it('MySQL: the MAX_EXECUTION_TIME hint on SELECT only; every other statement is left to KILL QUERY', () => {
    expect(limitStatement('  select * from t', 'mysql', 250.7)).toEqual({
      sql: '  select /*+ MAX_EXECUTION_TIME(250) */ * from t',
      covered: true,
      limitMs: 250,
    });
    expect(limitStatement('(SELECT 1) UNION (SELECT 2)', 'mysql', 50).sql).toBe(
      '(SELECT /*+ MAX_EXECUTION_TIME(50) */ 1) UNION (SELECT 2)',
    );
    for (const sql of ['UPDATE t SET v = 1', 'INSERT INTO t SELECT 1', 'DO SLEEP(1)', 'selected()']) {
      expect(limitStatement(sql, 'mysql', 100)).toEqual({ sql, covered: false, limitMs: 100 });
    }
    // an existing hint block: MySQL reads only the first, so ours is not added
    expect(limitStatement('SELECT /*+ BKA(t) */ * FROM t', 'mysql', 100).covered).toBe(false);
  });

  it('a deadline beyond 24.8 days, or endless: no limit of prazo (its largest would end the statement days early), KILL QUERY at the deadline', () => {
    const limit = 2 ** 31 - 1;
    for (const server of ['mariadb', 'mysql'] as const) {
      expect(limitStatement('SELECT 1', server, limit).covered).toBe(true);
      expect(limitStatement('SELECT 1', server, limit + 0.9).covered).toBe(true); // whole ms: still in range
      for (const ms of [limit + 1, 30 * 86_400_000, Number.POSITIVE_INFINITY]) {
        expect(limitStatement('SELECT 1', server, ms)).toEqual({
          sql: 'SELECT 1',
          covered: false,
          limitMs: limit,
        });
      }
    }
  });

  it('never prefixes transaction control, SET itself, or several statements', () => {
    for (const sql of [
      'START TRANSACTION',
      'commit',
      ' ROLLBACK',
      'SET @a = 1',
      'SELECT 1; SELECT 2',
      'KILL 3',
    ]) {
      expect(limitStatement(sql, 'mariadb', 100)).toEqual({ sql, covered: false, limitMs: 100 });
    }
    expect(limitStatement('SELECT 1;', 'mariadb', 100).covered).toBe(true);
  });

  it('property: the statement is kept whole at the end, the limit is in [1, 2^31-1] ms', () => {
    fc.assert(
      fc.property(
        fc.string(),
        fc.double({ noNaN: true }),
        fc.constantFrom('mariadb', 'mysql'),
        (sql, ms, server) => {
          const limited = limitStatement(sql, server as 'mariadb' | 'mysql', ms);
          const n = limitMs(ms);
          expect(n).toBeGreaterThanOrEqual(1);
          expect(n).toBeLessThanOrEqual(2 ** 31 - 1);
          expect(Number.isInteger(n)).toBe(true);
          if (!limited.covered) expect(limited.sql).toBe(sql);
          else if (server === 'mariadb') expect(limited.sql.endsWith(` FOR ${sql}`)).toBe(true);
          else expect(limited.sql.replace(/ \/\*\+ MAX_EXECUTION_TIME\(\d+\) \*\//, '')).toBe(sql);
        },
      ),
    );
  });

  it("tells the server's interrupted errors and statement errors from broken connections", () => {
    expect(isStatementInterrupted({ errno: 1969 })).toBe(true);
    expect(isStatementInterrupted({ errno: 3024 })).toBe(true);
    expect(isStatementInterrupted({ errno: 1317 })).toBe(true);
    expect(isStatementInterrupted({ errno: 1064 })).toBe(false);
    expect(isStatementInterrupted(null)).toBe(false);
    expect(isServerError({ sqlState: '70100', errno: 1317 })).toBe(true);
    expect(isServerError({ code: 'ECONNRESET' })).toBe(false);
    expect(isServerError({ sqlState: '08S01', fatal: true })).toBe(false);
  });
});

describe('a server that never answers (fake driver, fake clock)', () => {
  const silent = () => {
    const calls: string[] = [];
    const connection = {
      threadId: 7,
      Promise,
      _handshakePacket: { serverVersion: '8.4.3' },
      query: (sql: string) => {
        calls.push(sql);
        return new Promise(() => undefined); // never answers
      },
      release: () => calls.push('release'),
      destroy: () => calls.push('destroy'),
    };
    const killer = {
      Promise,
      query: (sql: string) => {
        calls.push(`killer: ${sql}`);
        return Promise.resolve([]);
      },
    };
    const pool = { Promise, getConnection: () => Promise.resolve(connection), query: killer.query };
    return { calls, pool, killer };
  };

  it('a write past its deadline: KILL QUERY at the deadline, gives up one grace later, destroys the connection', async () => {
    const clock = new FakeClock();
    const { calls, pool } = silent();
    const pending = mysqlQuery(pool, 'UPDATE t SET v = 1', undefined, {
      deadline: Deadline.after(200, { clock }),
      cancelGraceMs: 50,
    }).catch((e: unknown) => e);
    await clock.advanceAsync(199);
    expect(calls).toEqual(['UPDATE t SET v = 1']); // MySQL: an UPDATE takes no hint
    await clock.advanceAsync(1);
    expect(calls).toEqual(['UPDATE t SET v = 1', 'killer: KILL QUERY 7']);
    await clock.advanceAsync(49);
    expect(calls).not.toContain('destroy');
    await clock.advanceAsync(1);
    const error = await pending;
    expect(isDeadlineExceeded(error)).toBe(true);
    expect(error).toMatchObject({ outcome: 'unknown', elapsedMs: 250 });
    expect(calls).toContain('destroy');
    expect(calls).not.toContain('release');
  });

  it('a SELECT with the hint: the kill is a backup one grace after the deadline', async () => {
    const clock = new FakeClock();
    const { calls, pool } = silent();
    const pending = mysqlQuery(pool, 'SELECT 1', undefined, {
      deadline: Deadline.after(100, { clock }),
      cancelGraceMs: 30,
    }).catch((e: unknown) => e);
    await clock.advanceAsync(129);
    expect(calls).toEqual(['SELECT /*+ MAX_EXECUTION_TIME(100) */ 1']);
    await clock.advanceAsync(1);
    expect(calls.at(-1)).toBe('killer: KILL QUERY 7');
    await clock.advanceAsync(30);
    expect(isDeadlineExceeded(await pending)).toBe(true);
    expect(calls.at(-1)).toBe('destroy');
  });

  it("a connection of the caller's, with no pool to kill from: its socket is closed at the give-up", async () => {
    const clock = new FakeClock();
    const { calls, pool, killer } = silent();
    const connection = await pool.getConnection();
    const pending = mysqlQuery(connection, 'DELETE FROM t', undefined, {
      deadline: Deadline.after(100, { clock }),
      cancelGraceMs: 10,
    }).catch((e: unknown) => e);
    await clock.advanceAsync(110);
    expect(isDeadlineExceeded(await pending)).toBe(true);
    expect(calls).toEqual(['DELETE FROM t', 'destroy']);
    // with killVia, the kill goes there
    const again = mysqlQuery(connection, 'DELETE FROM t', undefined, {
      deadline: Deadline.after(100, { clock }),
      cancelGraceMs: 10,
      killVia: killer,
    }).catch((e: unknown) => e);
    await clock.advanceAsync(110);
    expect(isDeadlineExceeded(await again)).toBe(true);
    expect(calls.slice(2)).toEqual(['DELETE FROM t', 'killer: KILL QUERY 7', 'destroy']);
  });
});

/**
 * Whose limit ended the statement (#24 item 12): prazo's own fires at the deadline (rounded down to
 * the ms); a "limit exceeded" error with time still left is another limit's (the statement's own
 * `SET STATEMENT`, a DBA's session or global one) and stays the driver's error.
 */
describe("the server's limit error: the deadline's, or another limit's (fake driver, fake clock)", () => {
  const interrupting = (clock: FakeClock, afterMs: number, errno: number, server: string) => {
    const sent: string[] = [];
    const connection = {
      threadId: 9,
      Promise,
      _handshakePacket: { serverVersion: server },
      query: (sql: string) => {
        sent.push(sql);
        return new Promise((_, reject) =>
          clock.setTimer(
            () => reject(Object.assign(new Error('interrupted'), { errno, sqlState: '70100' })),
            afterMs,
          ),
        );
      },
      release: () => undefined,
      destroy: () => undefined,
    };
    return { connection, sent };
  };

  it("a statement's own SET STATEMENT max_statement_time=0.05 ending it at 52 ms of a 2 s deadline: the driver's error, not DEADLINE_EXCEEDED", async () => {
    const clock = new FakeClock();
    const { connection, sent } = interrupting(clock, 52, 1969, '10.11.6-MariaDB');
    const sql = 'SET STATEMENT max_statement_time=0.05 FOR SELECT SLEEP(1)';
    const pending = mysqlQuery(connection, sql, undefined, {
      deadline: Deadline.after(2_000, { clock }),
    }).catch((e: unknown) => e);
    await clock.advanceAsync(52);
    const error = await pending;
    expect(sent).toEqual([sql]); // left as written: SET is never prefixed
    expect(isDeadlineExceeded(error)).toBe(false);
    expect(error).toMatchObject({ errno: 1969, message: 'interrupted' });
  });

  it("a tighter limit in force (100 ms) ending a covered statement with 1.9 s left: the driver's error; prazo's own at the deadline: DEADLINE_EXCEEDED", async () => {
    for (const [server, errno] of [
      ['10.11.6-MariaDB', 1969],
      ['8.0.36', 3024],
    ] as const) {
      const clock = new FakeClock();
      const tighter = interrupting(clock, 100, errno, server);
      const early = mysqlQuery(tighter.connection, 'SELECT SLEEP(1)', undefined, {
        deadline: Deadline.after(2_000, { clock }),
      }).catch((e: unknown) => e);
      await clock.advanceAsync(100);
      const error = await early;
      expect(isDeadlineExceeded(error)).toBe(false);
      expect(error).toMatchObject({ errno });

      const own = interrupting(clock, 2_000, errno, server);
      const atDeadline = mysqlQuery(own.connection, 'SELECT SLEEP(5)', undefined, {
        deadline: Deadline.after(2_000, { clock }),
      }).catch((e: unknown) => e);
      await clock.advanceAsync(2_000);
      const stopped = await atDeadline;
      expect(isDeadlineExceeded(stopped)).toBe(true);
      expect(stopped).toMatchObject({ outcome: 'unknown', cause: expect.objectContaining({ errno }) });
    }
  });
});
