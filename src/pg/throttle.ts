import type { Clock } from '../clock/clock.js';
import { isPrazoError } from '../errors/base.js';
import { ErrorCode } from '../errors/codes.js';
import { type AdaptiveThrottle, countedBy } from '../throttle/throttle.js';
import { QUERY_CANCELED } from './constants.js';
import { emitterOf, type PgEvents } from './events.js';

/**
 * Adaptive throttling of a PostgreSQL dependency (issue 23, docs/throttling.md): the executor's own
 * `AdaptiveThrottle`, admitted where a statement or a transaction would start and counted when its
 * outcome is known. A guarded pool (`pgDeadlinePool`, `pgDeadlineKnex`) has one of its own; the
 * per-call functions (`queryWithDeadline`, `transactionWithDeadline`) share one per target (the pool
 * or client they are given: one database is one dependency), made at the first call with that call's
 * `throttle` options.
 */

/**
 * Admits a statement or a transaction at `clock.now()`, or fails it at once (nothing sent, no
 * connection taken) after a `throttled` event on `events`, the executor's own (prazo/otel counts it).
 */
export function admit(
  throttle: AdaptiveThrottle | undefined,
  name: string,
  clock: Clock,
  events?: PgEvents,
): void {
  if (throttle === undefined) return;
  const now = clock.now();
  if (throttle.admit(now)) return;
  const refusal = throttle.refusal(name, now);
  const { requests, accepts, probability } = refusal;
  emitterOf(events)?.(() => ({ type: 'throttled', dependency: name, requests, accepts, probability }));
  throw refusal;
}

/**
 * SQLSTATEs that are the server failing, not answering: connection exceptions (class 08), too many
 * connections and the rest of class 53 (insufficient resources), the server shutting down or
 * starting (57P01–57P03), and 57014 (our statement_timeout or cancel request: the server killed it).
 */
const FAILURE_STATE = /^(08|53|57P0[1-3]$|58)/;

/**
 * How the throttle counts an outcome: `true` the server answered (a result, or an error it sent with
 * its `severity`, a constraint violation or a syntax error: the executor's 4xx), `false` it did not
 * (connect refused, a reset, our timeout, the statement_timeout kill, too many connections), and
 * undefined for what says nothing of the server: refused before sending (D4, the throttle itself),
 * a pool wait that ran out locally, the caller's own abort.
 */
export function pgAccepted(error: unknown, aborted: boolean): boolean | undefined {
  if (aborted) return undefined;
  if (isPrazoError(error)) {
    if (error.code === ErrorCode.DEADLINE_INSUFFICIENT || error.code === ErrorCode.THROTTLED)
      return undefined;
    const dependency = (error as { dependency?: unknown }).dependency;
    if (typeof dependency === 'string' && dependency.endsWith(' (pool)')) return undefined;
    return false; // our deadline: DEADLINE_EXCEEDED, the server's kill as its cause
  }
  const e = error as { severity?: unknown; code?: unknown } | null;
  if (typeof e?.severity !== 'string') return false; // not the server's: the connection failed
  const code = typeof e.code === 'string' ? e.code : '';
  return code !== QUERY_CANCELED && !FAILURE_STATE.test(code);
}

/**
 * Counts `work`'s outcome on `throttle` once it is known ({@link pgAccepted}), and passes it on.
 * `success` false: only a failure is counted (taking a connection is not a statement).
 */
export function counted<T>(
  throttle: AdaptiveThrottle | undefined,
  clock: Clock,
  signal: AbortSignal | undefined,
  work: () => Promise<T>,
  success = true,
): Promise<T> {
  return countedBy(throttle, pgAccepted, clock, signal, work, success);
}
