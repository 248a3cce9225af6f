import type { QueryResult, QueryResultRow } from 'pg';
import { currentDeadline } from '../deadline/ambient.js';
import type { AdaptiveThrottle } from '../throttle/throttle.js';
import { throttleOf } from '../throttle/throttle.js';
import { statementThrough } from './executor.js';
import { withStatementTimeout } from './guard.js';
import { type PgDeadlineOptions, type ResolvedPgOptions, resolvePgOptions } from './options.js';
import { checkFits, connectionBroken, lease, leaseUnbounded } from './session.js';
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
 *
 * With `dependency` (an executor), the statement is one call of it (see `PG_DEADLINE_OPTIONS`'s
 * `dependency`): its p99, throttle and concurrency limit decide whether and when it starts, and the
 * `statement_timeout` is what is left of its attempt.
 */
export async function queryWithDeadline<R extends QueryResultRow = QueryResultRow>(
  target: PgClient | PgPool,
  sql: string,
  params: unknown[] = [],
  options: PgDeadlineOptions = {},
): Promise<QueryResult<R>> {
  const resolved = resolvePgOptions('queryWithDeadline', options, currentDeadline());
  const send = (client: PgClient) => client.query<R>(sql, params);
  if (resolved.dependency !== undefined) return statementThrough(resolved.dependency, target, resolved, send);
  const throttle = throttleOf(target, resolved.throttle, resolved.clock, resolved.random);
  return runStatement(target, resolved, send, throttle);
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
