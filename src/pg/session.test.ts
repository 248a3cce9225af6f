import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { FakeClock } from '../clock/fake.js';
import { Deadline } from '../deadline/deadline.js';
import { isDeadlineExceeded, isDeadlineInsufficient } from '../errors/guards.js';
import { resolvePgOptions } from './options.js';
import { queryWithDeadline } from './query.js';
import {
  beginSql,
  checkFits,
  connectionBroken,
  statementTimeoutMs,
  statementTimeoutStale,
} from './session.js';

describe('statement_timeout from the remaining deadline (SPEC D7)', () => {
  it('property: a whole number of ms, at least 1 (0 means no limit), never above what is left', () => {
    fc.assert(
      fc.property(
        fc.double({ min: -1e6, max: 2 ** 31 - 1, noNaN: true }),
        fc.double({ min: 0, max: 1e4, noNaN: true }),
        (ms, passed) => {
          const clock = new FakeClock();
          const deadline = Deadline.after(ms, { clock });
          clock.advance(passed);
          const timeout = statementTimeoutMs(deadline);
          expect(Number.isInteger(timeout)).toBe(true);
          expect(timeout).toBeGreaterThanOrEqual(1);
          if (deadline.remainingMs() >= 1) expect(timeout).toBeLessThanOrEqual(deadline.remainingMs());
          expect(beginSql(deadline)).toBe(`BEGIN; SET LOCAL statement_timeout = ${timeout}`);
        },
      ),
    );
  });

  it('a deadline beyond 2^31-1 ms (the most PostgreSQL accepts), or endless: 0, no limit, rather than one ending the statement days early', () => {
    const clock = new FakeClock();
    expect(statementTimeoutMs(Deadline.after(2 ** 31 - 1, { clock }))).toBe(2 ** 31 - 1);
    for (const ms of [2 ** 31, 30 * 86_400_000, Number.POSITIVE_INFINITY]) {
      expect(statementTimeoutMs(Deadline.after(ms, { clock }))).toBe(0);
    }
  });

  it("a transaction's 0 (out of range) is set again once the deadline comes within range, and only then", () => {
    const clock = new FakeClock();
    const day = 86_400_000;
    const deadline = Deadline.after(30 * day, { clock });
    expect(statementTimeoutStale(0, deadline, 100)).toBe(false);
    clock.advance(5 * day);
    expect(statementTimeoutStale(0, deadline, 100)).toBe(false); // 25 days left: still out of range
    clock.advance(day);
    expect(statementTimeoutStale(0, deadline, 100)).toBe(true);
    expect(statementTimeoutMs(deadline)).toBe(24 * day);
    // In range: set again when it lags what is left by more than the grace.
    expect(statementTimeoutStale(24 * day, deadline, 100)).toBe(false);
    clock.advance(101);
    expect(statementTimeoutStale(24 * day, deadline, 100)).toBe(true);
  });

  it('refuses before any I/O when less than the p99 is left, or nothing (SPEC D4)', () => {
    const clock = new FakeClock();
    const options = resolvePgOptions('test', { p99Ms: 80, name: 'db' }, undefined);
    expect(() => checkFits(Deadline.after(100, { clock }), options)).not.toThrow();
    for (const ms of [79.9, 0, -5]) {
      let caught: unknown;
      try {
        checkFits(Deadline.after(ms, { clock }), options);
      } catch (error) {
        caught = error;
      }
      expect(isDeadlineInsufficient(caught)).toBe(true);
    }
  });

  it('keeps a pooled client after a server error, destroys it after a connection error', () => {
    expect(connectionBroken({ severity: 'ERROR', code: '57014' })).toBe(false);
    expect(connectionBroken(new Error('Connection terminated unexpectedly'))).toBe(true);
    expect(connectionBroken(undefined)).toBe(true);
  });
});

describe("a statement that fails inside the caller's transaction (fake client, fake clock)", () => {
  it('is reported as itself: no restore is sent into the aborted transaction, whose 25P02 would hide it', async () => {
    const clock = new FakeClock();
    const sent: string[] = [];
    const timeout = Object.assign(new Error('canceling statement due to statement timeout'), {
      code: '57014',
      severity: 'ERROR',
    });
    const aborted = Object.assign(new Error('current transaction is aborted'), {
      code: '25P02',
      severity: 'ERROR',
    });
    const client = {
      // pg reports an error before the ReadyForQuery that says the transaction failed: still 'T'
      getTransactionStatus: () => 'T',
      query: async (text: string) => {
        sent.push(text);
        if (sent.length === 1) return { rows: [{ previous: '0' }] }; // the saved value, ours set
        throw sent.length === 2 ? timeout : aborted;
      },
    };
    const error = await queryWithDeadline(client as never, 'SELECT pg_sleep(5)', [], {
      deadline: Deadline.after(200, { clock }),
      clock,
    }).catch((e: unknown) => e);
    expect(isDeadlineExceeded(error)).toBe(true);
    expect(error).toMatchObject({ cause: timeout });
    expect(sent).toHaveLength(2);
  });
});
