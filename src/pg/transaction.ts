import type { QueryResult, QueryResultRow } from 'pg';
import { currentDeadline } from '../deadline/ambient.js';
import type { Deadline } from '../deadline/deadline.js';
import { databaseSteps, executeStore } from '../deadline/store.js';
import type { Dependency } from '../dependency/dependency.js';
import { DeadlineExceededError } from '../errors/deadline.js';
import { throttleOf } from '../throttle/throttle.js';
import { attemptOptions, PG_JUDGE } from './executor.js';
import { guarded } from './guard.js';
import { type PgDeadlineOptions, type ResolvedPgOptions, resolvePgOptions } from './options.js';
import {
  beginSql,
  checkFits,
  type Lease,
  lease,
  leaseUnbounded,
  statementTimeoutMs,
  statementTimeoutStale,
} from './session.js';
import { admit, counted } from './throttle.js';
import type { PgClient, PgPool } from './types.js';

/** What the function given to {@link transactionWithDeadline} works with. */
export interface PgTransaction {
  /** The client holding the transaction (use `query` below for deadline-aware statements). */
  readonly client: PgClient;
  /** The deadline the transaction runs under, when there is one. */
  readonly deadline: Deadline | undefined;
  /**
   * Runs one statement of the transaction: refused at once once the deadline has passed; its
   * `statement_timeout` refreshed first when it lags the time left by more than `cancelGraceMs`;
   * cancelled on the server when the time runs out or the caller's signal aborts.
   */
  query<R extends QueryResultRow = QueryResultRow>(sql: string, params?: unknown[]): Promise<QueryResult<R>>;
}

/**
 * Runs `fn` in a transaction bounded by the deadline (SPEC D4, D7): `BEGIN` with
 * `SET LOCAL statement_timeout` from the time left, every statement through `tx.query`, `COMMIT`
 * when `fn` resolves in time. Any failure rolls back; so does finishing after the deadline: the
 * caller has been told "deadline exceeded" and may retry, so the work must not also have happened.
 * `target` is a client or a pool (a pooled client is returned, destroyed if its connection broke).
 * With less than `p99Ms` (the whole transaction's p99) left, nothing is sent.
 */
export async function transactionWithDeadline<T>(
  target: PgClient | PgPool,
  fn: (tx: PgTransaction) => Promise<T>,
  options: PgDeadlineOptions = {},
): Promise<T> {
  const resolved = resolvePgOptions('transactionWithDeadline', options, currentDeadline());
  if (resolved.dependency !== undefined) return transactionThrough(resolved.dependency, target, fn, resolved);
  const { deadline, clock, signal } = resolved;
  if (deadline !== undefined) checkFits(deadline, resolved);
  // Decided once, at BEGIN: a refused transaction takes no connection and opens nothing; one under
  // way is never refused halfway (its statements are counted, each when its outcome is known).
  const throttle = throttleOf(target, resolved.throttle, clock, resolved.random);
  admit(throttle, resolved.name, clock, resolved.events);
  const step: Step = (work) => counted(throttle, clock, signal, work);
  const taken = await counted(
    throttle,
    clock,
    signal,
    () => (deadline === undefined ? leaseUnbounded(target) : lease(target, deadline, resolved)),
    false,
  );
  return inTransaction(taken, fn, deadline, resolved, step, () => false);
}

/**
 * How a transaction's statements are watched: the thin path counts each on its throttle; through an
 * executor, the errors they end with are noted as the database's.
 */
type Step = <R>(work: () => Promise<R>) => Promise<R>;

/**
 * The transaction on a client taken (`BEGIN` with the deadline's `statement_timeout`, `fn`,
 * `COMMIT`; any failure rolls back), each statement through `step`. `cancelled`: a cancel request
 * was sent on the client (it is then not handed back).
 */
async function inTransaction<T>(
  { client, release }: Lease,
  fn: (tx: PgTransaction) => Promise<T>,
  deadline: Deadline | undefined,
  options: ResolvedPgOptions,
  step: Step,
  cancelled: () => boolean,
): Promise<T> {
  try {
    await step(() => client.query(deadline === undefined ? 'BEGIN' : beginSql(deadline)));
    const tx = transaction(client, deadline, options, step);
    const result = await fn(tx);
    if (deadline?.expired()) throw exceeded(deadline, options);
    await step(() => client.query('COMMIT'));
    release();
    return result;
  } catch (error) {
    const rolledBack = await client.query('ROLLBACK').then(
      () => true,
      () => false,
    );
    // A clean ROLLBACK leaves a healthy connection: a business error in `fn` must not cost the pool a
    // reconnect. After an abort or a passed deadline a cancel request may still be in flight towards
    // this backend, so that connection is not handed to the next user.
    const cancelMayLinger = options.signal?.aborted === true || deadline?.expired() === true || cancelled();
    release(!rolledBack || cancelMayLinger);
    throw error;
  }
}

/**
 * The whole transaction as one call of `dependency` (its p99 is then a transaction's): the
 * connection is taken once the call has its slot, within the attempt's end, and the transaction runs
 * under that end (`statement_timeout`, the cancel, the commit refused past it). A statement's error
 * is judged as the server's (an answer, or a failure); `fn`'s own errors are the executor's to judge.
 */
function transactionThrough<T>(
  dependency: Dependency,
  target: PgClient | PgPool,
  fn: (tx: PgTransaction) => Promise<T>,
  resolved: ResolvedPgOptions,
): Promise<T> {
  const { step, fromDatabase } = databaseSteps();
  return executeStore(
    dependency,
    resolved,
    PG_JUDGE,
    async (attempt) => {
      let cancelled = false;
      const options = attemptOptions(resolved, attempt, () => {
        cancelled = true;
      });
      const taken = await step(() => lease(target, attempt.deadline, options));
      return inTransaction(taken, fn, attempt.deadline, options, step, () => cancelled);
    },
    fromDatabase,
  );
}

function transaction(
  client: PgClient,
  deadline: Deadline | undefined,
  options: ResolvedPgOptions,
  step: Step,
): PgTransaction {
  if (deadline === undefined) {
    return { client, deadline, query: (sql, params = []) => step(() => client.query(sql, params)) };
  }
  let inForceMs = statementTimeoutMs(deadline);
  return {
    client,
    deadline,
    async query<R extends QueryResultRow>(sql: string, params: unknown[] = []) {
      if (options.signal?.aborted) throw options.signal.reason;
      if (deadline.expired()) throw exceeded(deadline, options);
      if (statementTimeoutStale(inForceMs, deadline, options.cancelGraceMs)) {
        inForceMs = statementTimeoutMs(deadline);
        await client.query("SELECT set_config('statement_timeout', $1, true)", [String(inForceMs)]);
      }
      return step(() => guarded(client, deadline, options, () => client.query<R>(sql, params)));
    },
  };
}

function exceeded(deadline: Deadline, options: ResolvedPgOptions): DeadlineExceededError {
  return new DeadlineExceededError({ dependency: options.name, deadlineEpochMs: deadline.epochMs() });
}
