import { isPrazoError } from '../errors/base.js';
import type { MysqlServer } from './driver.js';

/**
 * The server-side limit of one statement, from the time left (SPEC D7), in each dialect:
 * - MariaDB: `SET STATEMENT max_statement_time=<min> FOR <statement>`, for any statement, scoped to
 *   that statement on the server (nothing to reset, nothing to leak into the pool's next user).
 *   `<min>` is the smaller of the time left and the limit already in force on that connection
 *   (`@@max_statement_time`: a DBA's `SET SESSION`, the `SET GLOBAL` the connection started with, a
 *   user's `WITH MAX_STATEMENT_TIME`; 0 = none), computed by the server itself as it starts the
 *   statement: `SET STATEMENT` *replaces* the limit for that statement, so a plain number would
 *   lift a tighter limit than the deadline (#24). Read per statement rather than once per connection
 *   and cached: it costs no round trip (the expression rides in the statement), it cannot go stale
 *   (a `SET SESSION` sent later on the connection, through prazo or not, is seen), and it needs no
 *   state per connection;
 * - MySQL: the `MAX_EXECUTION_TIME(<ms>)` optimizer hint, which MySQL honours for read-only `SELECT`
 *   only. Every other statement is *not covered*: the client sends `KILL QUERY` at the deadline.
 * A statement is left as written, and not covered, when the prefix would change what it means or is
 * refused: transaction control and `SET` itself, several statements in one string (only the first
 * would be limited), a `SELECT` already carrying a hint block (MySQL reads only the first one).
 */
export interface LimitedStatement {
  readonly sql: string;
  /** True when the server itself ends the statement at the limit; false: only `KILL QUERY` does. */
  readonly covered: boolean;
  /** The limit prazo asked for, in ms (from the time left); a tighter one in force may end it first. */
  readonly limitMs: number;
}

/** Statements the prefix must not touch: they end no work of their own or refuse `SET STATEMENT`. */
const UNWRAPPABLE =
  /^\s*(set|begin|start|commit|rollback|savepoint|release|xa|lock|unlock|use|kill|prepare|execute|deallocate|call)\b/i;
/** A second statement after a `;` (a conservative test: a `;` inside a string literal counts too). */
const SEVERAL = /;\s*\S/;
const SELECT = /^(\s*\(*\s*select)\b/i;

/**
 * `seconds`, or the connection's own `max_statement_time` when that is tighter (0 means none there),
 * as a MariaDB expression: `SET STATEMENT` takes one, and `@@max_statement_time` in it is the value
 * in force before the statement's own override.
 */
const mariadbMinimum = (seconds: string): string =>
  `LEAST(${seconds}, IF(@@max_statement_time > 0, @@max_statement_time, ${seconds}))`;

/**
 * The longest limit prazo sets, in ms (2^31-1, 24.8 days): within what both servers accept (MySQL's
 * hint takes up to 2^32-1 ms, MariaDB's `max_statement_time` up to a year).
 */
export const MAX_LIMIT_MS = 2 ** 31 - 1;

/** The limit in whole ms, rounded down and at least 1 (0 means "no limit" to both servers). */
export function limitMs(remainingMs: number): number {
  return Math.min(MAX_LIMIT_MS, Math.max(1, Math.floor(remainingMs)));
}

/**
 * `sql` with the server's limit for `remainingMs` when it takes one (see {@link LimitedStatement}).
 * A deadline beyond {@link MAX_LIMIT_MS} (weeks away, or endless) sets none: the limit at its
 * largest would end the statement days before the deadline (as the driver's "interrupted" error,
 * since prazo cannot call it the deadline's), so the statement is left as written, not covered, and
 * `KILL QUERY` at the deadline (a timer re-armed past its 24.8-day range) is its limit.
 */
export function limitStatement(sql: string, server: MysqlServer, remainingMs: number): LimitedStatement {
  const ms = limitMs(remainingMs);
  if (
    Math.floor(remainingMs) > MAX_LIMIT_MS ||
    UNWRAPPABLE.test(sql) ||
    SEVERAL.test(sql.trimEnd().replace(/;$/, ''))
  )
    return { sql, covered: false, limitMs: ms };
  if (server === 'mariadb') {
    const s = (ms / 1000).toFixed(3);
    return {
      sql: `SET STATEMENT max_statement_time=${mariadbMinimum(s)} FOR ${sql}`,
      covered: true,
      limitMs: ms,
    };
  }
  const select = SELECT.exec(sql);
  if (select === null || /^\s*\/\*\+/.test(sql.slice(select[0].length)))
    return { sql, covered: false, limitMs: ms };
  return {
    sql: `${select[1]} /*+ MAX_EXECUTION_TIME(${ms}) */${sql.slice(select[0].length)}`,
    covered: true,
    limitMs: ms,
  };
}

/**
 * The server's own "interrupted" errors (`errno`): MariaDB's `max_statement_time` (1969), MySQL's
 * `MAX_EXECUTION_TIME` (3024), and `KILL QUERY` (1317, both servers).
 */
export const INTERRUPTED_ERRNOS: ReadonlySet<number> = new Set([1969, 3024, 1317]);

/**
 * How long before the deadline prazo's own limit may still fire, in ms. The limit is the time left
 * rounded down to the ms, and the server counts it from when it starts the statement (after it was
 * sent), so it cannot end the statement more than 1 ms before the deadline; the rest is slack for
 * the server's conversion to microseconds and for its clock running at another rate than ours (an
 * NTP-slewed clock is at most 500 ppm off: 1 ms in 1 s of limit). An "interrupted by the limit"
 * error (1969, 3024) with more time than this left is another limit's: one in force on the server
 * (a DBA's session or global `max_statement_time`, a user's) or the statement's own
 * (`SET STATEMENT max_statement_time=… FOR …`), and it stays the driver's error (#24).
 */
export function ownLimitSlackMs(limitMs: number): number {
  return 3 + limitMs / 1_000;
}

/** True for an error the server raised because the statement was interrupted (limit or KILL). */
export function isStatementInterrupted(error: unknown): boolean {
  const errno = (error as { errno?: unknown } | null)?.errno;
  return typeof errno === 'number' && INTERRUPTED_ERRNOS.has(errno);
}

/**
 * True when an error came from the server about the statement (it carries a SQL state): the
 * connection is fine. Anything else (a socket error, a protocol error) means it is not.
 */
export function isServerError(error: unknown): boolean {
  const e = error as { sqlState?: unknown; sqlMessage?: unknown; fatal?: unknown } | null;
  return typeof e?.sqlState === 'string' && e.sqlState.length === 5 && e.fatal !== true;
}

/**
 * True when the connection is fit for the pool after `error`: the server answered with an error of
 * its own (the statement is over, the socket is fine), also when prazo wraps it: a statement the
 * server's limit ended (1969, 3024) has finished there, so its connection need not cost a reconnect.
 * A kill sent for it taints the session separately (the kill may land on its next statement).
 */
export function connectionFit(error: unknown): boolean {
  return isServerError(error) || (isPrazoError(error) && isServerError(error.cause));
}

/** Transaction control a builder sends itself (Kysely, Knex, Drizzle): passed through unguarded. */
const TRANSACTION_CONTROL =
  /^\s*(begin|start\s+transaction|commit|rollback|savepoint|release\s+savepoint|xa)\b/i;

/**
 * True for a builder's own transaction control: it must reach the server whatever the time left
 * (a ROLLBACK refused after the deadline would leave the transaction open, its locks held, on a
 * connection going back to the pool), and it ends no work of its own to limit.
 */
export function isTransactionControl(sql: string): boolean {
  return TRANSACTION_CONTROL.test(sql);
}
