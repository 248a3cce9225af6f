import type { Clock } from '../clock/clock.js';
import type { DependencyEvent } from '../dependency/types.js';
import { isPrazoError } from '../errors/base.js';
import { ErrorCode } from '../errors/codes.js';
import { type AdaptiveThrottle, countedBy } from '../throttle/throttle.js';

/**
 * Adaptive throttling of a MySQL or MariaDB dependency (issue 23, docs/throttling.md): the executor's
 * own `AdaptiveThrottle`, admitted where a statement or a transaction would start and counted when its
 * outcome is known. A guarded pool (`mysqlDeadlinePool`) and a Knex instance (`knexWithDeadline`) have
 * one of their own; `mysqlQuery` and `mysqlTransaction` share one per target (the pool or connection
 * they are given: one database is one dependency), made at the first call with that call's options.
 */

/**
 * Admits a statement or a transaction at `clock.now()`, or fails it at once (nothing sent, no
 * connection taken) after a `throttled` event, the executor's own (prazo/otel counts it).
 */
export function admit(
  throttle: AdaptiveThrottle | undefined,
  name: string,
  clock: Clock,
  emit: ((event: () => DependencyEvent) => void) | undefined,
): void {
  if (throttle === undefined) return;
  const now = clock.now();
  if (throttle.admit(now)) return;
  const refusal = throttle.refusal(name, now);
  const { requests, accepts, probability } = refusal;
  emit?.(() => ({ type: 'throttled', dependency: name, requests, accepts, probability }));
  throw refusal;
}

/**
 * Server errors that are the server failing, not answering: too many connections (1040, 1203), the
 * statement interrupted (1317 a kill, 1969 / 3024 the statement limit: the deadline's), the server
 * shutting down (1053), out of memory or resources (1037, 1038, 1041, 1135).
 */
const FAILURE_ERRNOS: ReadonlySet<number> = new Set([
  1037, 1038, 1040, 1041, 1053, 1135, 1203, 1317, 1969, 3024,
]);

/**
 * How the throttle counts an outcome: `true` the server answered (a result, or an error it sent with
 * its SQL state: a duplicate key, a syntax error), `false` it did not (connect refused, a reset, our
 * deadline, the statement limit's kill, too many connections), undefined for what says nothing of
 * the server: refused before sending (D4, the throttle), a pool wait that ran out locally, the
 * caller's abort.
 */
export function mysqlAccepted(error: unknown, aborted: boolean): boolean | undefined {
  if (aborted) return undefined;
  if (isPrazoError(error)) {
    if (error.code === ErrorCode.DEADLINE_INSUFFICIENT || error.code === ErrorCode.THROTTLED)
      return undefined;
    const dependency = (error as { dependency?: unknown }).dependency;
    if (typeof dependency === 'string' && dependency.endsWith(' (pool)')) return undefined;
    return false;
  }
  const e = error as { sqlState?: unknown; errno?: unknown; fatal?: unknown } | null;
  if (typeof e?.sqlState !== 'string' || e.sqlState.length !== 5 || e.fatal === true) return false;
  if (e.sqlState.startsWith('08')) return false;
  return !(typeof e.errno === 'number' && FAILURE_ERRNOS.has(e.errno));
}

/**
 * Counts `work`'s outcome on `throttle` once it is known ({@link mysqlAccepted}), and passes it on.
 * `success` false: only a failure is counted (taking a connection is not a statement).
 */
export function counted<T>(
  throttle: AdaptiveThrottle | undefined,
  clock: Clock,
  signal: AbortSignal | undefined,
  work: () => Promise<T>,
  success = true,
): Promise<T> {
  return countedBy(throttle, mysqlAccepted, clock, signal, work, success);
}
