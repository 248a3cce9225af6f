import type { Deadline } from '../deadline/deadline.js';
import { withinDeadline } from '../deadline/store.js';
import { isPrazoError } from '../errors/base.js';
import { DeadlineExceededError } from '../errors/deadline.js';
import type { ResolvedPgOptions } from './options.js';
import { isPool, type PgClient, type PgPool } from './types.js';

/** The largest `statement_timeout` PostgreSQL accepts, in ms (its INT_MAX: 24.8 days). */
export const MAX_STATEMENT_TIMEOUT_MS = 2 ** 31 - 1;

/**
 * The `statement_timeout` for what is left of `deadline`, in whole ms, rounded down (the server
 * stopping a little early is safe, a little late is not) and at least 1 while the deadline is in the
 * server's range. Beyond it (a deadline more than 24.8 days away, or endless) 0, "no limit": the
 * largest value would have the server stop the statement days before the deadline (reported as
 * DEADLINE_EXCEEDED with the deadline still ahead), and a larger one is refused ("invalid value for
 * parameter"); the cancel request at the deadline (`guarded`, re-armed past a timer's range) is then
 * the limit.
 */
export function statementTimeoutMs(deadline: Deadline): number {
  const ms = Math.floor(deadline.remainingMs());
  return ms > MAX_STATEMENT_TIMEOUT_MS ? 0 : Math.max(1, ms);
}

/**
 * Whether a transaction's `statement_timeout`, set to `inForceMs` earlier, must be set again before
 * its next statement: it lags behind what is left of `deadline` by more than `graceMs` (the
 * statement would outlive the deadline on the server), or it is 0 ("no limit", set while the
 * deadline was out of range) and the deadline has come within range.
 */
export function statementTimeoutStale(inForceMs: number, deadline: Deadline, graceMs: number): boolean {
  const left = deadline.remainingMs();
  return inForceMs === 0 ? Math.floor(left) <= MAX_STATEMENT_TIMEOUT_MS : inForceMs - left > graceMs;
}

/** `BEGIN` and a transaction-scoped `statement_timeout`, in one round trip (a simple-protocol batch). */
export function beginSql(deadline: Deadline): string {
  return `BEGIN; SET LOCAL statement_timeout = ${statementTimeoutMs(deadline)}`;
}

export { checkFits } from '../deadline/store.js';

/** A client to work on, and how to give it back. */
export interface Lease {
  readonly client: PgClient;
  /** Returns a pooled client (destroying it when `broken`); a no-op for a caller's own client. */
  release(broken?: unknown): void;
}

/**
 * Takes a client from `target` when it is a pool, waiting no longer than the deadline (a pool with
 * no free connection must not hold the request past it); a client arriving too late goes back.
 */
export async function lease(
  target: PgClient | PgPool,
  deadline: Deadline,
  options: ResolvedPgOptions,
): Promise<Lease> {
  if (!isPool(target)) return { client: target, release: () => undefined };
  const client = await withinDeadline(target.connect(), deadline, options.clock, {
    giveBack: (late) => late.release(),
    expired: (elapsedMs) => new DeadlineExceededError({ dependency: `${options.name} (pool)`, elapsedMs }),
  });
  return { client, release: (broken) => client.release(broken instanceof Error ? broken : broken === true) };
}

/**
 * True when a client should not go back to a pool: its connection failed, not just its statement.
 * The server's own errors carry a `severity` (the connection is fine); prazo's errors wrap those.
 */
export function connectionBroken(error: unknown): boolean {
  if (isPrazoError(error)) return error.cause !== undefined && connectionBroken(error.cause);
  return typeof (error as { severity?: unknown } | null)?.severity !== 'string';
}

/** A client without any deadline: a pool's `connect()` waits as long as the pool lets it. */
export async function leaseUnbounded(target: PgClient | PgPool): Promise<Lease> {
  if (!isPool(target)) return { client: target, release: () => undefined };
  const client = await target.connect();
  return { client, release: (broken) => client.release(broken === true) };
}
