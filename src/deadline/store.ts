import type { Clock } from '../clock/clock.js';
import { MAX_TIMER_DELAY_MS } from '../clock/clock.js';
import { isPrazoError } from '../errors/base.js';
import { DeadlineExceededError } from '../errors/deadline.js';
import { isTimeoutError } from '../errors/guards.js';
import { ResponseTimeoutError } from '../errors/timeout.js';
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

// ── Through an executor (the `dependency` option) ───────────────────────────────────────────────

/**
 * What a store reads of one attempt of `dependency.execute`: the part of its `AttemptContext` a store
 * needs, declared here because `deadline/` sits below `dependency/` (read structurally).
 */
export interface StoreAttempt {
  /** Aborts when the attempt must stop: its timeout, the deadline, or the caller giving up. */
  readonly signal: AbortSignal;
  /** The attempt's own end: min(the call's deadline, its start + its timeout). */
  readonly deadline: Deadline;
  /** The attempt's time limit from its start, in ms. */
  readonly timeoutMs: number;
  /** True when the call's deadline, not the attempt timeout, set `timeoutMs`. */
  readonly byDeadline: boolean;
}

/** How the executor is told what a result means (its `ResultVerdict`). */
export interface StoreVerdict {
  readonly retryable: boolean;
  readonly outcome?: 'success' | 'error';
}

/** The executor as a store drives it (`Dependency`, read structurally). */
export interface StoreExecutor {
  readonly name: string;
  execute<T>(
    operation: (attempt: StoreAttempt) => Promise<T>,
    options: {
      readonly idempotent: boolean;
      readonly deadline?: Deadline | undefined;
      readonly signal?: AbortSignal | undefined;
      readonly classify?: (result: T) => StoreVerdict;
    },
  ): Promise<T>;
}

/** How a store judges a database's error, and names a failure for its caller. */
export interface StoreJudge {
  /** True when the server answered with `error` (a constraint, a syntax error): not a failure. */
  answered(error: unknown): boolean;
  /** The error a caller gets for the dependency's failure (marked for prazo's pushback, SPEC X6). */
  failed(error: unknown, dependency: string): unknown;
}

/** The store options the executor owns: refused beside a `dependency` (`besideDependency`). */
export const EXECUTOR_OWNED = ['p99Ms', 'throttle', 'random', 'events'] as const;

/**
 * A database's error a statement ended with, handed to the executor as the operation's *result*, so
 * that the store judges it (the executor's `classifyError` would take a reset socket or "too many
 * connections" for an answer): an answer is a success for the recorder and the throttle (the
 * server answered, as an HTTP 4xx does), a failure is an error, not accepted, never retried
 * (`idempotent: false`). The caller gets the error as the driver gave it.
 */
export class StoreFailure {
  constructor(
    readonly error: unknown,
    readonly answered: boolean,
  ) {}
}

const SUCCEEDED: StoreVerdict = Object.freeze({ retryable: false, outcome: 'success' });
const FAILED: StoreVerdict = Object.freeze({ retryable: true, outcome: 'error' });

/**
 * The executor's `classify` for a store's results: a failure {@link StoreFailure} is an error, not
 * accepted; a result, or an answer, a success.
 */
export function storeVerdict(result: unknown): StoreVerdict {
  return result instanceof StoreFailure && !result.answered ? FAILED : SUCCEEDED;
}

/**
 * The error an attempt's operation rejects with when the store's own bound (the server's limit, the
 * cancel at the attempt's end, the pool wait) ran out: the one the executor gives for its attempt
 * timer, so the caller sees the same error whichever came first — DeadlineExceededError when the
 * deadline set the attempt's end, ResponseTimeoutError when its timeout did (the store's error as
 * `cause`). Once the attempt is over its reason stands.
 */
export function attemptTimeout(attempt: StoreAttempt, error: unknown, dependency: string): unknown {
  if (attempt.signal.aborted) return attempt.signal.reason;
  // The attempt's deadline ends at its start + `timeoutMs`: what is left of it says how long it ran.
  const elapsedMs = attempt.timeoutMs - attempt.deadline.remainingMs();
  if (!attempt.byDeadline)
    return new ResponseTimeoutError({ dependency, elapsedMs, timeoutMs: attempt.timeoutMs, cause: error });
  const outcome = (error as { outcome?: unknown }).outcome === 'unknown' ? 'unknown' : undefined;
  return new DeadlineExceededError({
    dependency,
    elapsedMs,
    deadlineEpochMs: Math.floor(attempt.deadline.epochMs()), // the call's: it set this attempt's end
    ...(outcome === undefined ? {} : { outcome }),
    cause: error,
  });
}

/**
 * The signal a store's guard stops a running statement on at once: `attempt`'s, when it aborts for
 * anything but a timeout (the caller gave up). A timeout is left to the guard's own timer at the
 * attempt's end (plus `cancelGraceMs` for a statement the server limits itself), as without an
 * executor: the server's limit ends it first, and a connection sent no cancel stays fit for the pool.
 */
export function abandonSignal(attempt: StoreAttempt): AbortSignal {
  const controller = new AbortController();
  const signal = attempt.signal;
  const abandoned = (): void => {
    if (!isTimeoutError(signal.reason)) controller.abort(signal.reason);
  };
  if (signal.aborted) abandoned();
  else signal.addEventListener('abort', abandoned, { once: true });
  return controller.signal;
}

/**
 * Runs one store call (a statement, or a whole transaction) as one call of `executor` (SPEC D4, D7,
 * X7): `execute(work, { idempotent: false, deadline, signal })`, so the executor owns D4 with its
 * p99, the throttle, the concurrency limit (`work` starts, and takes a pooled connection, only once
 * it has a slot), the recorder, events and traces. `work` bounds what it does by the attempt's end
 * (`attempt.deadline`). How it ends:
 * - a result: a success;
 * - a database's error (`fromDatabase`, default: any error not prazo's own): a {@link StoreFailure}
 *   the store judges ({@link storeVerdict}), thrown to the caller as the driver gave it (a failure
 *   marked by `judge.failed`);
 * - a timeout of the store's own bound: {@link attemptTimeout};
 * - anything else (prazo's errors, the caller's own code): thrown, judged by the executor.
 */
export async function executeStore<T>(
  executor: StoreExecutor,
  terms: { readonly deadline?: Deadline | undefined; readonly signal?: AbortSignal | undefined },
  judge: StoreJudge,
  work: (attempt: StoreAttempt) => Promise<T>,
  fromDatabase: (error: unknown) => boolean = (error) => !isPrazoError(error),
): Promise<T> {
  const name = executor.name;
  const result = await executor.execute<T | StoreFailure>(
    async (attempt) => {
      try {
        return await work(attempt);
      } catch (error) {
        if (attempt.signal.aborted) throw attempt.signal.reason; // over: the executor's verdict stands
        if (isTimeoutError(error)) throw attemptTimeout(attempt, error, name);
        if (!fromDatabase(error)) throw error;
        return new StoreFailure(error, judge.answered(error));
      }
    },
    { idempotent: false, deadline: terms.deadline, signal: terms.signal, classify: storeVerdict },
  );
  if (!(result instanceof StoreFailure)) return result;
  throw result.answered ? result.error : judge.failed(result.error, name);
}

/**
 * A connection held across statements (a builder's transaction, or Kysely taking one per query) as
 * one call of the executor: its attempt starts when the connection is asked for (after D4, the
 * throttle and a slot of the limit), takes it within the attempt's end, and ends when it is given
 * back ({@link end}): the attempt's latency is the lease's. Its statements run under the attempt's
 * end ({@link attempt}); the lease ends failed when one of them failed (the database's failure, not
 * an answer), a success otherwise.
 */
export class StoreLease<C> {
  #failure: StoreFailure | undefined;
  readonly #settle: (result: StoreFailure | undefined) => void;

  constructor(
    readonly connection: C,
    readonly attempt: StoreAttempt,
    settle: (result: StoreFailure | undefined) => void,
  ) {
    this.#settle = settle;
  }

  /** A statement of the lease ended with the database's `error`; `answered`: an answer, not a failure. */
  noted(error: unknown, answered: boolean): void {
    if (!answered && this.#failure === undefined) this.#failure = new StoreFailure(error, false);
  }

  /** The connection went back: the attempt ends (a no-op once it timed out). */
  end(): void {
    this.#settle(this.#failure);
  }
}

/**
 * Opens a {@link StoreLease} through `executor`: `take` gets the connection within the attempt's end;
 * `giveBack` returns one that arrived after the attempt was over. Rejects as `executeStore` does
 * when no connection is handed out (D4, the throttle, the limit, the pool wait, a connect failure).
 */
export function leaseThrough<C>(
  executor: StoreExecutor,
  judge: StoreJudge,
  take: (attempt: StoreAttempt) => Promise<C>,
  giveBack: (late: C) => void,
): Promise<StoreLease<C>> {
  return new Promise((resolve, reject) => {
    let handed = false;
    executeStore(executor, {}, judge, async (attempt) => {
      const connection = await take(attempt);
      if (attempt.signal.aborted) {
        giveBack(connection); // the attempt ended while the pool was waited on
        throw attempt.signal.reason;
      }
      return new Promise<StoreFailure | undefined>((settle) => {
        handed = true;
        resolve(new StoreLease(connection, attempt, settle));
      });
    }).catch((error: unknown) => {
      if (!handed) reject(error);
    });
  });
}

/**
 * Tells a database's errors from a transaction body's own: `step` runs one of the transaction's
 * database steps and marks what it throws (unless prazo's), `fromDatabase` says whether an error was
 * so marked (the store judges those; the executor, the others).
 */
export function databaseSteps(): {
  readonly step: <R>(work: () => Promise<R>) => Promise<R>;
  readonly fromDatabase: (error: unknown) => boolean;
} {
  const marked = new WeakSet<object>();
  return {
    step: (work) =>
      work().catch((error: unknown) => {
        if (error !== null && typeof error === 'object' && !isPrazoError(error)) marked.add(error);
        throw error;
      }),
    fromDatabase: (error) => error !== null && typeof error === 'object' && marked.has(error),
  };
}

/** The two methods of a Knex client that a store's `dependency` path takes over. */
export interface KnexConnections {
  acquireConnection(): Promise<unknown>;
  releaseConnection(connection: unknown): Promise<unknown>;
}

/**
 * Knex through `executor`: each connection Knex acquires is a {@link StoreLease} (taken once the call
 * has its slot, from Knex's pool within the attempt's end), ended when Knex releases it; `guard`
 * wraps the connection's statements, reading their lease with the `lease` it is given.
 */
export function leaseKnexConnections(
  client: KnexConnections,
  executor: StoreExecutor,
  judge: StoreJudge,
  clock: Clock,
  guard: (connection: unknown, lease: (connection: object) => StoreLease<unknown> | undefined) => unknown,
): void {
  const leases = new WeakMap<object, StoreLease<unknown>>();
  const acquire = client.acquireConnection.bind(client);
  const release = client.releaseConnection.bind(client);
  const giveBack = (late: unknown): void => {
    release(late).catch(() => undefined);
  };
  const leaseOf = (connection: object): StoreLease<unknown> | undefined => leases.get(connection);
  const dependency = `${executor.name} (pool)`;
  client.acquireConnection = async () => {
    const held = await leaseThrough(
      executor,
      judge,
      async (attempt) =>
        guard(
          await withinDeadline(acquire(), attempt.deadline, clock, {
            giveBack,
            expired: (elapsedMs) => new DeadlineExceededError({ dependency, elapsedMs }),
          }),
          leaseOf,
        ),
      giveBack,
    );
    leases.set(held.connection as object, held);
    return held.connection;
  };
  client.releaseConnection = (connection: unknown) => {
    const held = leases.get(connection as object);
    if (held !== undefined) {
      leases.delete(connection as object);
      held.end();
    }
    return release(connection);
  };
}

/**
 * Runs one statement of a lease (`work`, bounded by the attempt's end): refused at once once the
 * attempt is over (its reason: the executor's timeout, or the caller's abort); a database's error is
 * noted on the lease and thrown as the driver gave it; the store's timeout becomes
 * {@link attemptTimeout}.
 */
export async function leasedStatement<T, C>(
  lease: StoreLease<C>,
  judge: StoreJudge,
  dependency: string,
  work: (attempt: StoreAttempt) => Promise<T>,
): Promise<T> {
  const attempt = lease.attempt;
  if (attempt.signal.aborted) throw attempt.signal.reason;
  try {
    return await work(attempt);
  } catch (error) {
    if (isTimeoutError(error)) throw attemptTimeout(attempt, error, dependency);
    if (!isPrazoError(error)) lease.noted(error, judge.answered(error));
    throw error;
  }
}
