import { MAX_TIMER_DELAY_MS } from '../clock/clock.js';
import type { Deadline } from '../deadline/deadline.js';
import { withinDeadline } from '../deadline/store.js';
import { isPrazoError } from '../errors/base.js';
import { DeadlineExceededError } from '../errors/deadline.js';
import type { ResolvedPgOptions } from './options.js';
import { isPool, type PgClient, type PgPool } from './types.js';

/**
 * The `statement_timeout` for what is left of `deadline`, in whole ms, rounded down (the server
 * stopping a little early is safe, a little late is not) and at least 1: 0 would mean "no limit".
 * At most 2^31-1, the largest value PostgreSQL accepts (a deadline weeks away, or endless, would
 * otherwise make every statement fail with "invalid value for parameter").
 */
export function statementTimeoutMs(deadline: Deadline): number {
  return Math.min(MAX_TIMER_DELAY_MS, Math.max(1, Math.floor(deadline.remainingMs())));
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
