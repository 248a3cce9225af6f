import { currentDeadline } from '../deadline/ambient.js';
import type { Deadline } from '../deadline/deadline.js';
import { databaseSteps, executeStore } from '../deadline/store.js';
import type { Dependency } from '../dependency/dependency.js';
import { DeadlineExceededError } from '../errors/deadline.js';
import { throttleOf } from '../throttle/throttle.js';
import { invoke, type MysqlConnection, type MysqlTarget } from './driver.js';
import { attemptOptions, MYSQL_JUDGE } from './executor.js';
import { type MysqlDeadlineOptions, type ResolvedMysqlOptions, resolveMysqlOptions } from './options.js';
import { checkFits, openSession, runStatement, type Session } from './session.js';
import { admit, counted } from './throttle.js';

/** What the function given to {@link mysqlTransaction} works with. */
export interface MysqlTransaction {
  /** The connection holding the transaction (use `query` below for deadline-aware statements). */
  readonly connection: MysqlConnection;
  /** The deadline the transaction runs under, when there is one. */
  readonly deadline: Deadline | undefined;
  /**
   * Runs one statement of the transaction with its server-side limit from the time left, refused at
   * once once the deadline has passed or the caller's signal aborted, killed on the server when the
   * time runs out. Resolves with what the driver gives.
   */
  query<T = unknown>(sql: string, values?: unknown): Promise<T>;
}

/**
 * Runs `fn` in a transaction bounded by the deadline (SPEC D4, D7): `START TRANSACTION`, every
 * statement through `tx.query` (each limited on the server by the time left), `COMMIT` when `fn`
 * resolves in time. A business error (a rejection of `fn`) rolls back and keeps the connection; an
 * abort or a passed deadline rolls back and drops it (a kill may still be in flight towards it);
 * finishing after the deadline rolls back too: the caller has been told "deadline exceeded" and may
 * retry, so the work must not also have happened. A `COMMIT` whose reply does not come by the
 * deadline rejects with `outcome: 'unknown'`. With less than `p99Ms` (the whole transaction's p99)
 * left, nothing is sent and no connection is taken.
 */
export async function mysqlTransaction<T>(
  target: MysqlTarget,
  fn: (tx: MysqlTransaction) => Promise<T>,
  options: MysqlDeadlineOptions = {},
): Promise<T> {
  const resolved = resolveMysqlOptions('mysqlTransaction', options, currentDeadline());
  if (resolved.dependency !== undefined) return transactionThrough(resolved.dependency, target, fn, resolved);
  const { deadline, signal, clock } = resolved;
  if (deadline !== undefined) checkFits(deadline, resolved);
  // Decided once, at its start: a refused transaction takes no connection and opens nothing; one
  // under way is never refused halfway (its statements are counted, each when its outcome is known).
  const throttle = throttleOf(target, resolved.throttle, clock, resolved.random);
  admit(throttle, resolved.name, clock, resolved.emit);
  const session = await counted(
    throttle,
    clock,
    signal,
    () => openSession(target, deadline, resolved),
    false,
  );
  const step: Step = (work) => counted(throttle, clock, signal, work);
  return inTransaction(session, fn, deadline, resolved, target, step);
}

/**
 * How a transaction's statements are watched: the thin path counts each on its throttle; through an
 * executor, the errors they end with are noted as the database's.
 */
type Step = <R>(work: () => Promise<R>) => Promise<R>;

/** The transaction on a session opened: `START TRANSACTION`, `fn`, `COMMIT`, each statement through `step`. */
async function inTransaction<T>(
  session: Session,
  fn: (tx: MysqlTransaction) => Promise<T>,
  deadline: Deadline | undefined,
  options: ResolvedMysqlOptions,
  target: MysqlTarget,
  step: Step,
): Promise<T> {
  const { signal } = options;
  const run = (sql: string, values?: unknown): Promise<unknown> =>
    step(() =>
      deadline === undefined
        ? invoke(session.connection, 'query', values === undefined ? [sql] : [sql, values])
        : runStatement(session, sql, values, deadline, options, target),
    );
  try {
    await run('START TRANSACTION');
    const result = await fn(transaction(session, deadline, options, run));
    if (signal?.aborted) throw signal.reason;
    if (deadline?.expired()) throw exceeded(deadline, options);
    await run('COMMIT');
    session.end();
    return result;
  } catch (error) {
    const rolledBack =
      !session.isTainted &&
      (await invoke(session.connection, 'query', ['ROLLBACK']).then(
        () => true,
        () => false,
      ));
    session.end(!rolledBack || signal?.aborted === true || deadline?.expired() === true);
    throw error;
  }
}

/**
 * The whole transaction as one call of `dependency` (its p99 is then a transaction's): the
 * connection is taken once the call has its slot, within the attempt's end, and the transaction runs
 * under that end (each statement's limit, the kill, the commit refused past it). A statement's error
 * is judged as the server's (an answer, or a failure); `fn`'s own errors are the executor's to judge.
 */
function transactionThrough<T>(
  dependency: Dependency,
  target: MysqlTarget,
  fn: (tx: MysqlTransaction) => Promise<T>,
  resolved: ResolvedMysqlOptions,
): Promise<T> {
  const { step, fromDatabase } = databaseSteps();
  return executeStore(
    dependency,
    resolved,
    MYSQL_JUDGE,
    async (attempt) => {
      const options = attemptOptions(resolved, attempt);
      const session = await step(() => openSession(target, attempt.deadline, options));
      return inTransaction(session, fn, attempt.deadline, options, target, step);
    },
    fromDatabase,
  );
}

function transaction(
  session: Session,
  deadline: Deadline | undefined,
  options: ResolvedMysqlOptions,
  run: (sql: string, values?: unknown) => Promise<unknown>,
): MysqlTransaction {
  return {
    connection: session.connection,
    deadline,
    async query<R>(sql: string, values?: unknown) {
      if (typeof sql !== 'string' || sql.trim() === '')
        throw new TypeError('tx.query: sql must be a non-empty string');
      if (options.signal?.aborted) throw options.signal.reason;
      if (deadline?.expired()) throw exceeded(deadline, options);
      return (await run(sql, values)) as R;
    },
  };
}

function exceeded(deadline: Deadline, options: ResolvedMysqlOptions): DeadlineExceededError {
  return new DeadlineExceededError({ dependency: options.name, deadlineEpochMs: deadline.epochMs() });
}
