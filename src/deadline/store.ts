import type { Clock } from '../clock/clock.js';
import { MAX_TIMER_DELAY_MS } from '../clock/clock.js';
import { option } from '../options/declare.js';
import type { Deadline } from './deadline.js';
import { assertFits, type FitTarget } from './fits.js';
import { armDeadlineTimer } from './timer.js';

/**
 * What every store integration (`prazo/pg`, `prazo/mysql`) does the same way before a statement is
 * sent, written once: the options a store call shares, the fail-fast below the p99, and a bounded
 * wait for a pooled connection. What differs per store (how the server is told the limit, how a
 * running statement is stopped, when a connection is unfit for the pool) stays in its integration.
 */

/**
 * The options every store call declares; each store adds its `name` (its default differs) and its
 * own. Spread into the store's `defineOptions` literal, so a bound changes here for all of them.
 */
export const STORE_DEADLINE_SPECS = {
  /** The deadline to honour. Default: the ambient one (`currentDeadline()`); none → no limit is set. */
  deadline: option.value<Deadline>('a Deadline', option.hasMethods('remainingMs', 'toHeaders')),
  /**
   * The statement's (or the whole transaction's) expected p99, in ms: with less time left nothing is
   * sent, no connection is taken, and the call fails with DeadlineInsufficientError (SPEC D4).
   * Default 0; [0, 2^31-1].
   */
  p99Ms: option.number({ default: 0, unit: 'ms', min: 0, max: MAX_TIMER_DELAY_MS }),
  /**
   * The caller's own cancellation (e.g. `req.prazoSignal`): when it aborts, the running statement is
   * stopped on the server (a cancel request on PostgreSQL, `KILL QUERY` on MySQL and MariaDB) and the
   * call rejects with the signal's reason. Default none.
   */
  signal: option.signal(),
  /**
   * Grace past the deadline before the client stops a statement the server limits itself (a cancel
   * request, `KILL QUERY`); on MySQL also the wait after that before the client gives up on the reply
   * (the connection is then destroyed, never pooled); in a PostgreSQL transaction the most its
   * `statement_timeout` may lag behind the time left before it is refreshed. Default 100; [0, 60000].
   */
  cancelGraceMs: option.number({ default: 100, unit: 'ms', min: 0, max: 60_000 }),
  /** Where time comes from (for the timers). Default: the deadline's clock, else the system clock. */
  clock: option.clock(),
} as const;

/** What {@link checkFits} reads of a store's resolved options. */
export type FitOptions = FitTarget;

/**
 * Fails fast, before any I/O and before a connection is taken, when less than the p99 is left
 * (SPEC D4, the one rule of `fits.ts`); `onInsufficient` hears of it first (a store's events).
 */
export function checkFits(
  deadline: Deadline,
  options: FitOptions,
  onInsufficient?: (remainingMs: number) => void,
): void {
  assertFits(options, deadline.remainingMs(), onInsufficient);
}

/** What {@link withinDeadline} does with a connection that missed the deadline, and the error it gives. */
export interface BoundedWait<T> {
  /** A connection that arrived after the caller left: give it back to its pool. */
  giveBack(late: T): void;
  /** The rejection at the deadline, from how long the wait lasted (ms). */
  expired(elapsedMs: number): Error;
}

/**
 * Waits for `pending` (a pool's connection) no longer than what is left of `deadline`: a pool with no
 * free connection must not hold the call past it. A connection arriving too late is given back, never
 * leaked; a pool error after the deadline is dropped (the caller already has its answer).
 */
export function withinDeadline<T>(
  pending: Promise<T>,
  deadline: Deadline,
  clock: Clock,
  wait: BoundedWait<T>,
): Promise<T> {
  return new Promise((resolve, reject) => {
    let late = false;
    const started = clock.now();
    // A deadline beyond a timer's range (24.8 days) or endless is not cut short (timer.ts).
    const timer = armDeadlineTimer(
      clock,
      () => deadline.remainingMs(),
      () => {
        late = true;
        reject(wait.expired(clock.now() - started));
      },
      { unref: true },
    );
    pending.then(
      (value) => {
        timer.clear();
        if (late) wait.giveBack(value);
        else resolve(value);
      },
      (error: unknown) => {
        timer.clear();
        if (!late) reject(error);
      },
    );
  });
}

/** A store call's options once read: the deadline in force (given or ambient) and its clock. */
export interface ResolvedStoreOptions extends FitOptions {
  readonly deadline: Deadline | undefined;
  readonly signal: AbortSignal | undefined;
  readonly cancelGraceMs: number;
  readonly clock: Clock;
}

/**
 * Options as read by a store's validator, with the deadline in force (the given one, else the
 * ambient one) and the clock it runs on (the given one, else the deadline's, else `fallback`).
 */
export function withDeadlineInForce<O extends { readonly deadline?: Deadline; readonly clock?: Clock }>(
  read: O,
  ambient: Deadline | undefined,
  fallback: Clock,
): O & { readonly deadline: Deadline | undefined; readonly clock: Clock } {
  const deadline = read.deadline ?? ambient;
  return { ...read, deadline, clock: read.clock ?? deadline?.clock ?? fallback };
}
