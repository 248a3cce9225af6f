import { abandonSignal, executeStore, type StoreAttempt, type StoreJudge } from '../deadline/store.js';
import type { Dependency } from '../dependency/dependency.js';
import { executorOf } from '../dependency/transport.js';
import { markDependencyFailure } from '../retry/pushback.js';
import type { MysqlServer, MysqlTarget } from './driver.js';
import { MYSQL_DEADLINE_OPTIONS, type ResolvedMysqlOptions } from './options.js';
import { guardStatement, openSession, type Session, sessionHandle } from './session.js';
import { connectionFit } from './statement.js';
import { mysqlAccepted } from './throttle.js';

/**
 * prazo/mysql through an executor (the `dependency` option; docs/ARCHITECTURE.md, "The executor's
 * seam"): each statement, or a whole transaction, is one call of `dependency.execute` with one
 * attempt (`idempotent: false`), and a connection a builder holds (`pool.getConnection()`, Knex's
 * `acquireConnection`) one call for as long as it is held (`leaseThrough`, deadline/store.ts). The
 * executor owns D4, the throttle, the concurrency limit, the recorder, events and traces; inside the
 * attempt the store keeps its own mechanics, bounded by the attempt's end (`attempt.deadline`): the
 * pool wait, the statement's server-side limit, and `KILL QUERY` when the caller gives up (or at
 * that end, `cancelGraceMs` after it for a statement the server limits itself).
 */

/** How prazo/mysql judges the server's errors through an executor: the throttle's rule (`mysqlAccepted`). */
export const MYSQL_JUDGE: StoreJudge = Object.freeze({
  answered: (error: unknown) => mysqlAccepted(error, false) === true,
  failed: markDependencyFailure,
});

/**
 * The options a statement of `attempt` runs its guard with: the attempt's end as the deadline, the
 * caller giving up (not a timeout: the guard's own timer) as the signal, no p99 of its own (D4 is the
 * executor's) and no events (the executor's).
 */
export function attemptOptions(resolved: ResolvedMysqlOptions, attempt: StoreAttempt): ResolvedMysqlOptions {
  return {
    ...resolved,
    p99Ms: 0,
    deadline: attempt.deadline,
    signal: abandonSignal(attempt),
    emit: undefined,
  };
}

/** The options every statement of a guarded pool or Knex instance runs with through `dependency`. */
export function throughOptions(
  dependency: Dependency,
  fixed: {
    readonly cancelGraceMs?: number | undefined;
    readonly server?: MysqlServer | undefined;
    readonly killVia?: MysqlTarget | undefined;
  },
): ResolvedMysqlOptions {
  return {
    name: dependency.name,
    p99Ms: 0,
    cancelGraceMs: fixed.cancelGraceMs ?? MYSQL_DEADLINE_OPTIONS.defaults.cancelGraceMs,
    server: fixed.server,
    killVia: fixed.killVia,
    emit: undefined,
    clock: executorOf(dependency)!.plan.clock,
    deadline: undefined,
    signal: undefined,
    dependency,
  };
}

/**
 * One statement on `target` (a pool: a connection is taken within the attempt's end) as one call of
 * `dependency`, the deadline and the caller's signal those of `resolved`: `execute` sends the
 * statement (its text limited for the server) on the session's connection, `KILL QUERY` goes from
 * `killVia`, else the pool. A connection that may still run it, or was sent a kill, is destroyed.
 */
export function statementThrough(
  dependency: Dependency,
  target: MysqlTarget,
  resolved: ResolvedMysqlOptions,
  sql: string,
  execute: (session: Session, limited: string) => Promise<unknown>,
  via: MysqlTarget | undefined,
): Promise<unknown> {
  return executeStore(dependency, resolved, MYSQL_JUDGE, async (attempt) => {
    const options = attemptOptions(resolved, attempt);
    const session = await openSession(target, attempt.deadline, options);
    try {
      const handle = sessionHandle(session, (limited) => execute(session, limited), via);
      const result = await guardStatement(sql, session.server, attempt.deadline, options, handle);
      session.end();
      return result;
    } catch (error) {
      if (!connectionFit(error)) session.taint();
      session.end();
      throw error;
    }
  });
}
