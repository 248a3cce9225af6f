import type { QueryResult, QueryResultRow } from 'pg';
import { currentDeadline } from '../deadline/ambient.js';
import type { Deadline } from '../deadline/deadline.js';
import type { AdaptiveThrottle } from '../throttle/throttle.js';
import { throttleOf } from '../throttle/throttle.js';
import { guarded } from './guard.js';
import { type PgDeadlineOptions, type ResolvedPgOptions, resolvePgOptions } from './options.js';
import {
  beginSql,
  checkFits,
  connectionBroken,
  lease,
  leaseUnbounded,
  statementTimeoutMs,
} from './session.js';
import { admit, counted } from './throttle.js';
import type { PgClient, PgPool } from './types.js';

/**
 * Runs one query with a server-side `statement_timeout` equal to what is left of the deadline
 * (SPEC D4, D7). With less than `p99Ms` left it is not sent (DeadlineInsufficientError); when the
 * time runs out the *server* stops it, and SQLSTATE 57014 becomes DeadlineExceededError (the pg
 * error as `cause`). Outside any deadline the query runs as given: prazo never invents one.
 *
 * How the timeout is scoped, and why:
 * - idle client: `BEGIN; SET LOCAL statement_timeout = N` (one round trip), the query, `COMMIT`.
 *   `SET LOCAL` dies with the transaction *on the server*, so the setting can never leak into the
 *   next user of a pooled connection, even if this process fails between two statements. A plain
 *   `SET` + `RESET` saves one round trip but makes the pool's hygiene depend on our `finally`.
 *   A single statement is atomic anyway, so the wrapping transaction changes nothing else; only
 *   statements that refuse a transaction block (VACUUM, CREATE INDEX CONCURRENTLY) cannot use this.
 * - client already inside a transaction (pg's `getTransactionStatus() === 'T'`): the current value
 *   is saved and `set_config(..., is_local => true)` sets ours; the saved value is put back after.
 */
export async function queryWithDeadline<R extends QueryResultRow = QueryResultRow>(
  target: PgClient | PgPool,
  sql: string,
  params: unknown[] = [],
  options: PgDeadlineOptions = {},
): Promise<QueryResult<R>> {
  const resolved = resolvePgOptions('queryWithDeadline', options, currentDeadline());
  const throttle = throttleOf(target, resolved.throttle, resolved.clock, resolved.random);
  return runStatement(target, resolved, (client) => client.query<R>(sql, params), throttle);
}

/**
 * Runs one `statement` on a client of `target` (itself, or one taken from the pool) as
 * {@link queryWithDeadline} does, whatever shape the statement is sent in (a text and values, a
 * query config with its own row mode and type parsers): fail fast below the p99, a pool wait no
 * longer than the deadline, the statement under {@link withStatementTimeout}, a client whose
 * connection broke destroyed on release.
 */
export async function runStatement<T>(
  target: PgClient | PgPool,
  resolved: ResolvedPgOptions,
  statement: (client: PgClient) => Promise<T>,
  throttle?: AdaptiveThrottle,
  admitting = true,
): Promise<T> {
  const { deadline, clock, signal } = resolved;
  if (deadline === undefined) {
    if (admitting) admit(throttle, resolved.name, clock, resolved.events);
    return counted(throttle, clock, signal, async () => {
      const { client, release } = await leaseUnbounded(target);
      try {
        return await statement(client);
      } finally {
        release();
      }
    });
  }
  checkFits(deadline, resolved);
  // After D4, as in the executor: a call refused for its deadline says nothing of the server.
  if (admitting) admit(throttle, resolved.name, clock, resolved.events);
  return counted(throttle, clock, signal, async () => {
    const { client, release } = await lease(target, deadline, resolved);
    try {
      const result = await withStatementTimeout(client, deadline, resolved, () => statement(client));
      release();
      return result;
    } catch (error) {
      release(connectionBroken(error));
      throw error;
    }
  });
}

/**
 * Runs `run` (one statement on `client`) with the server's `statement_timeout` set from what is left
 * of `deadline` and a cancel request at the deadline (see {@link queryWithDeadline} for the scoping):
 * in a transaction of its own when the client is idle, with the caller's value saved and put back
 * when the client is inside the caller's transaction.
 */
export async function withStatementTimeout<T>(
  client: PgClient,
  deadline: Deadline,
  options: ResolvedPgOptions,
  run: () => Promise<T>,
): Promise<T> {
  return (await inCallerTransaction(client))
    ? inTransaction(client, deadline, options, run)
    : inOwnTransaction(client, deadline, options, run);
}

async function inOwnTransaction<T>(
  client: PgClient,
  deadline: Deadline,
  options: ResolvedPgOptions,
  run: () => Promise<T>,
): Promise<T> {
  await client.query(beginSql(deadline));
  try {
    const result = await guarded(client, deadline, options, run);
    await client.query('COMMIT');
    return result;
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw error;
  }
}

async function inTransaction<T>(
  client: PgClient,
  deadline: Deadline,
  options: ResolvedPgOptions,
  run: () => Promise<T>,
): Promise<T> {
  const saved = await client.query<{ previous: string }>(
    "SELECT current_setting('statement_timeout') AS previous, set_config('statement_timeout', $1, true)",
    [String(statementTimeoutMs(deadline))],
  );
  // A statement that fails aborts the transaction block: there is nothing to put back (the caller's
  // ROLLBACK, or ROLLBACK TO SAVEPOINT, undoes the set_config), and a restore sent then would only
  // fail with 25P02 and hide the statement's own error. pg reports the error before the server's
  // ReadyForQuery says the transaction is aborted, so the status cannot be read to decide this.
  const result = await guarded(client, deadline, options, run);
  const restored = client.query("SELECT set_config('statement_timeout', $1, true)", [
    saved.rows[0]?.previous ?? '0',
  ]);
  // pg < 8.21 gave no status: the probe said "in a transaction"; a restore that fails changes nothing
  await (typeof client.getTransactionStatus === 'function' ? restored : restored.catch(() => undefined));
  return result;
}

/**
 * Whether `client` is inside its caller's transaction. pg >= 8.21 tracks it
 * (`getTransactionStatus()`); older versions (the peer range starts at 8.11) do not, so the server is
 * asked: inside a transaction block, this statement started after the transaction did. Guessing
 * "idle" instead would wrap the query in `BEGIN` … `COMMIT` and commit the caller's transaction.
 */
async function inCallerTransaction(client: PgClient): Promise<boolean> {
  if (typeof client.getTransactionStatus === 'function') return client.getTransactionStatus() === 'T';
  const probe = await client.query<{ open: boolean }>(
    'SELECT transaction_timestamp() < statement_timestamp() AS open',
  );
  return probe.rows[0]?.open === true;
}
