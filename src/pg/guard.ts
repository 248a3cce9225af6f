import type { Deadline } from '../deadline/deadline.js';
import { armDeadlineTimer } from '../deadline/timer.js';
import { DeadlineExceededError } from '../errors/deadline.js';
import { subscribeAbort, unsubscribeAbort } from '../signal/shared-abort.js';
import { sendCancelRequest } from './cancel.js';
import { QUERY_CANCELED } from './constants.js';
import type { ResolvedPgOptions } from './options.js';
import { beginSql, statementTimeoutMs } from './session.js';
import type { PgClient } from './types.js';

/** True for a pg error with SQLSTATE 57014 (`statement_timeout` or a cancel request). */
export function isQueryCanceled(error: unknown): boolean {
  return (error as { code?: unknown } | null)?.code === QUERY_CANCELED;
}

/**
 * Runs one statement on `client` under `deadline` with real, server-side cancellation (SPEC D7):
 * - the server's `statement_timeout` (set by the caller) is the first line: it fires on the server;
 * - one timer at `deadline + cancelGraceMs` sends a cancel request if no answer came by then (armed
 *   with `armDeadlineTimer`: a deadline beyond a timer's 24.8 days is waited for in full);
 * - the caller's signal aborting sends a cancel request at once.
 * SQLSTATE 57014 then becomes the caller's abort reason, or DeadlineExceededError (pg error as cause).
 */
export async function guarded<T>(
  client: PgClient,
  deadline: Deadline,
  options: ResolvedPgOptions,
  run: () => Promise<T>,
): Promise<T> {
  const { clock, signal, name, cancelGraceMs } = options;
  if (signal?.aborted) throw signal.reason;
  const started = clock.now();
  const cancel = (): void => {
    options.onCancel?.();
    sendCancelRequest(client);
  };
  // Re-armed a timer's range at a time (a timer clamps at 24.8 days): a statement under a 30-day
  // deadline is not cancelled at 24.8 days, and one under an endless deadline arms nothing.
  const timer = armDeadlineTimer(clock, () => deadline.remainingMs() + cancelGraceMs, cancel, {
    unref: true,
  });
  if (signal !== undefined) subscribeAbort(signal, cancel);
  try {
    return await run();
  } catch (error) {
    if (!isQueryCanceled(error)) throw error;
    if (signal?.aborted) throw signal.reason;
    if (!ranOutOfTime(error, deadline, cancelGraceMs)) throw error; // someone else cancelled it
    throw new DeadlineExceededError({
      dependency: name,
      elapsedMs: clock.now() - started,
      deadlineEpochMs: deadline.epochMs(),
      cause: error,
    });
  } finally {
    timer.clear();
    if (signal !== undefined) unsubscribeAbort(signal, cancel);
  }
}

/**
 * Whether a 57014 is ours: `statement_timeout` fires a little before the deadline (the value is
 * rounded down and set before the statement starts), hence the grace; the English message is a
 * second hint when `lc_messages` allows it. Another session's `pg_cancel_backend` stays a pg error.
 */
function ranOutOfTime(error: unknown, deadline: Deadline, graceMs: number): boolean {
  const message = (error as { message?: unknown }).message;
  return (
    deadline.remainingMs() <= Math.max(graceMs, 1) ||
    (typeof message === 'string' && message.includes('statement timeout'))
  );
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
