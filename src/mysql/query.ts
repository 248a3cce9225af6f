import { currentDeadline } from '../deadline/ambient.js';
import { throttleOf } from '../throttle/throttle.js';
import { invoke, isPool, type MysqlTarget } from './driver.js';
import { statementThrough } from './executor.js';
import { type MysqlDeadlineOptions, resolveMysqlOptions } from './options.js';
import { checkFits, openSession, runStatement, type Session } from './session.js';
import { connectionFit } from './statement.js';
import { admit, counted } from './throttle.js';

/**
 * Runs one statement on MySQL or MariaDB under the ambient or given deadline (SPEC D4, D7), through
 * `mysql2` (promise or callback API) or the `mariadb` connector, on a pool or on one connection:
 * - with less than `p99Ms` left it is not sent and no connection is taken (DeadlineInsufficientError);
 * - a pool's connection is waited for no longer than the deadline;
 * - the statement carries a server-side limit from the time left (MariaDB
 *   `SET STATEMENT max_statement_time=… FOR …`; MySQL `MAX_EXECUTION_TIME` on SELECT), and the client
 *   sends `KILL QUERY` when the deadline passes for what the limit does not cover;
 * - the server's "interrupted" errors become DeadlineExceededError with `outcome: 'unknown'` (a
 *   write stopped mid-flight may or may not have taken effect: never retry it blindly);
 * - a connection whose statement may still be running, or that was sent a kill, is destroyed, never
 *   handed back to the pool.
 * Resolves with what the driver gives (`mysql2`: `[rows, fields]`; `mariadb`: `rows`). Outside any
 * deadline the statement runs as given: prazo never invents one.
 *
 * With `dependency` (an executor), the statement is one call of it (see `MYSQL_DEADLINE_OPTIONS`'s
 * `dependency`): its p99, throttle and concurrency limit decide whether and when it starts, and the
 * server-side limit is what is left of its attempt.
 */
export async function mysqlQuery<T = unknown>(
  target: MysqlTarget,
  sql: string,
  values?: unknown,
  options: MysqlDeadlineOptions = {},
): Promise<T> {
  if (typeof sql !== 'string' || sql.trim() === '')
    throw new TypeError('mysqlQuery: sql must be a non-empty string');
  const resolved = resolveMysqlOptions('mysqlQuery', options, currentDeadline());
  if (resolved.dependency !== undefined) {
    const via = resolved.killVia ?? (isPool(target) ? target : undefined);
    const send = (session: Session, limited: string) =>
      invoke(session.connection, 'query', values === undefined ? [limited] : [limited, values]);
    return statementThrough(resolved.dependency, target, resolved, sql, send, via) as Promise<T>;
  }
  const { deadline, clock, signal } = resolved;
  if (deadline !== undefined) checkFits(deadline, resolved);
  // After D4, as in the executor: a call refused for its deadline says nothing of the server.
  const throttle = throttleOf(target, resolved.throttle, clock, resolved.random);
  admit(throttle, resolved.name, clock, resolved.emit);
  return counted(throttle, clock, signal, async () => {
    const session = await openSession(target, deadline, resolved);
    try {
      const result =
        deadline === undefined
          ? await invoke(session.connection, 'query', values === undefined ? [sql] : [sql, values])
          : await runStatement(session, sql, values, deadline, resolved, target);
      session.end();
      return result as T;
    } catch (error) {
      if (!connectionFit(error)) session.taint();
      session.end();
      throw error;
    }
  });
}
