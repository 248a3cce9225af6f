import { abandonSignal, executeStore, type StoreAttempt, type StoreJudge } from '../deadline/store.js';
import type { Dependency } from '../dependency/dependency.js';
import { executorOf } from '../dependency/transport.js';
import { markDependencyFailure } from '../retry/pushback.js';
import { withStatementTimeout } from './guard.js';
import { PG_DEADLINE_OPTIONS, type ResolvedPgOptions } from './options.js';
import { connectionBroken, lease } from './session.js';
import { pgAccepted } from './throttle.js';
import type { PgClient, PgPool } from './types.js';

/**
 * prazo/pg through an executor (the `dependency` option; docs/ARCHITECTURE.md, "The executor's
 * seam"): each statement, or a whole transaction, is one call of `dependency.execute` with one
 * attempt (`idempotent: false`), and a connection a builder holds (`pool.connect()`, Knex's
 * `acquireConnection`) one call for as long as it is held (`leaseThrough`, deadline/store.ts). The
 * executor owns D4, the throttle, the concurrency limit, the recorder, events and traces; inside the
 * attempt the store keeps its own mechanics, bounded by the attempt's end (`attempt.deadline`): the
 * pool wait, `SET LOCAL statement_timeout`, and a cancel request when the caller gives up (or
 * `cancelGraceMs` past that end).
 */

/** How prazo/pg judges the server's errors through an executor: the throttle's rule (`pgAccepted`). */
export const PG_JUDGE: StoreJudge = Object.freeze({
  answered: (error: unknown) => pgAccepted(error, false) === true,
  failed: markDependencyFailure,
});

/**
 * The options a statement of `attempt` runs its guard with: the attempt's end as the deadline, the
 * caller giving up (not a timeout: the guard's own timer) as the signal, no p99 of its own (D4 is the
 * executor's), and `onCancel` told of a cancel request sent.
 */
export function attemptOptions(
  resolved: ResolvedPgOptions,
  attempt: StoreAttempt,
  onCancel?: () => void,
): ResolvedPgOptions {
  return {
    ...resolved,
    p99Ms: 0,
    deadline: attempt.deadline,
    signal: abandonSignal(attempt),
    onCancel,
  };
}

/** The options every statement of a guarded pool or Knex instance runs with through `dependency`. */
export function throughOptions(dependency: Dependency, cancelGraceMs: number | undefined): ResolvedPgOptions {
  return {
    name: dependency.name,
    p99Ms: 0,
    cancelGraceMs: cancelGraceMs ?? PG_DEADLINE_OPTIONS.defaults.cancelGraceMs,
    clock: executorOf(dependency)!.plan.clock,
    deadline: undefined,
    signal: undefined,
    dependency,
  };
}

/**
 * One statement on `target` (a pool: a connection is taken within the attempt's end) as one call of
 * `dependency`, the deadline and the caller's signal those of `resolved`. A connection sent a cancel
 * request is destroyed, never handed back (the cancel could reach its next statement).
 */
export function statementThrough<T>(
  dependency: Dependency,
  target: PgClient | PgPool,
  resolved: ResolvedPgOptions,
  statement: (client: PgClient) => Promise<T>,
): Promise<T> {
  return executeStore(dependency, resolved, PG_JUDGE, async (attempt) => {
    let cancelled = false;
    const options = attemptOptions(resolved, attempt, () => {
      cancelled = true;
    });
    const { client, release } = await lease(target, attempt.deadline, options);
    try {
      const result = await withStatementTimeout(client, attempt.deadline, options, () => statement(client));
      release(cancelled);
      return result;
    } catch (error) {
      release(cancelled || connectionBroken(error));
      throw error;
    }
  });
}
