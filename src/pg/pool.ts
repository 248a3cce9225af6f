import { systemClock } from '../clock/system.js';
import { currentDeadline } from '../deadline/ambient.js';
import type { Deadline } from '../deadline/deadline.js';
import { EXECUTOR_OWNED, leasedStatement, leaseThrough, type StoreLease } from '../deadline/store.js';
import type { Dependency } from '../dependency/dependency.js';
import { besideDependency } from '../dependency/transport.js';
import { type OptionsOf, pickOptions, type Resolved } from '../options/declare.js';
import { readOptions } from '../options/validator.js';
import type { ThrottleState } from '../throttle/throttle.js';
import { throttleFrom } from '../throttle/throttle.js';
import { attemptOptions, PG_JUDGE, statementThrough, throughOptions } from './executor.js';
import { withStatementTimeout } from './guard.js';
import { PG_DEADLINE_OPTIONS, type ResolvedPgOptions } from './options.js';
import { runStatement } from './query.js';
import { checkFits, connectionBroken, type Lease, lease } from './session.js';
import { admit, counted } from './throttle.js';
import type { PgClient, PgPool, PgPoolClient } from './types.js';

/** Options of {@link pgDeadlinePool}: those of `queryWithDeadline` that hold for every query of a pool. */
export const PG_POOL_OPTIONS = pickOptions(
  PG_DEADLINE_OPTIONS,
  ['p99Ms', 'name', 'cancelGraceMs', 'throttle', 'random', 'events', 'clock', 'dependency'],
  besideDependency(EXECUTOR_OWNED),
);

export type PgPoolOptions = OptionsOf<typeof PG_POOL_OPTIONS>;

/** Statements a builder sends to run its own transaction: passed through as they are. */
const TRANSACTION_CONTROL =
  /^\s*(begin|start|commit|end|rollback|abort|savepoint|release|set|prepare\s+transaction)\b/i;

type Fn = (...args: unknown[]) => unknown;

/**
 * The text of a statement a guard should run under the deadline: a string, or a query config
 * (`{ text, values, rowMode, types, name }`, what Drizzle and Knex send); undefined for what passes
 * through unchanged: a submittable (a cursor, a stream), transaction control, anything else.
 */
export function guardedText(statement: unknown): string | undefined {
  const text =
    typeof statement === 'string'
      ? statement
      : statement !== null &&
          typeof statement === 'object' &&
          typeof (statement as { submit?: unknown }).submit !== 'function'
        ? (statement as { text?: unknown }).text
        : undefined;
  return typeof text === 'string' && !TRANSACTION_CONTROL.test(text) ? text : undefined;
}

/**
 * The per-call options of a guard installed once (a pool, a Knex client): the options read at
 * construction, with each call's ambient deadline and its clock.
 */
export function perDeadline(
  fixed: Resolved<typeof PG_POOL_OPTIONS.specs>,
): (deadline: Deadline) => ResolvedPgOptions {
  return (deadline) => ({ ...fixed, deadline, signal: undefined, clock: fixed.clock ?? deadline.clock });
}

/** What {@link pgDeadlinePool} adds to the pool it wraps. */
export interface PgThrottled {
  /**
   * Where the pool's adaptive throttle stands (docs/throttling.md), or undefined when it is switched
   * off: the statements counted in its window (refused ones included), those answered, and the
   * probability a new statement or connection is refused with now.
   */
  throttling():
    | { readonly requests: number; readonly accepts: number; readonly probability: number }
    | undefined;
}

/**
 * A `pg.Pool` whose every query runs under the **ambient** deadline (SPEC D4, D7), the way
 * `queryWithDeadline` runs one: what Kysely's `PostgresDialect({ pool })` and Drizzle's
 * `drizzle(pool)` (node-postgres) are given, so their queries get a server-side `statement_timeout`
 * from the time left and a cancel request at the deadline, without threading it by hand. A query is
 * a text (with values) or a query config (`{ text, rowMode, types, name }`, as Drizzle sends it).
 * `connect()` fails fast below the p99 and waits no longer than the deadline; a client whose
 * connection broke is destroyed on `release()`. Transaction control the builder sends itself
 * (`begin`, `commit`, `savepoint`, ...), submittables (cursors, streams), callback calls and
 * everything outside a deadline pass through unchanged; inside a builder's transaction the timeout
 * is set for the statement and put back after (pg >= 8.21 tells prazo the transaction is open).
 *
 * With `dependency` (an executor), every statement `pool.query` runs is one call of it, and a
 * client `connect()` hands out one call for as long as it is held (Kysely takes one per query, a
 * builder's transaction one for all of it): the executor's D4, throttle and concurrency limit decide
 * whether and when it starts (no connection is taken before), its recorder times it, and its
 * statements run under that call's attempt (`statement_timeout` from what is left of it, refused
 * once it is over). `throttling()` is the dependency's. Queries outside any deadline go through it
 * too, under its `defaultDeadlineMs`.
 */
export function pgDeadlinePool<P extends PgPool>(pool: P, options: PgPoolOptions = {}): P & PgThrottled {
  const fixed = readOptions('pgDeadlinePool', PG_POOL_OPTIONS, options);
  if (fixed.dependency !== undefined) return executorPool(pool, fixed.dependency, fixed.cancelGraceMs);
  const resolve = perDeadline(fixed);
  const name = fixed.name ?? PG_POOL_OPTIONS.defaults.name;
  const clock = fixed.clock ?? systemClock;
  // One throttle per guarded pool: one database is one dependency. A statement of `pool.query`, and
  // `pool.connect()` (a builder's transaction, or a client it keeps), are admitted; the statements of
  // a connected client are counted, never refused: a transaction is decided at its start.
  const throttle = throttleFrom(fixed.throttle, clock, fixed.random);
  const guardedQuery =
    (target: object, original: Fn, onError: (error: unknown) => void, admitting: boolean) =>
    (...args: unknown[]): unknown => {
      const deadline = currentDeadline();
      if (guardedText(args[0]) === undefined || args.length > 2 || typeof args.at(-1) === 'function')
        return original.apply(target, args);
      if (deadline === undefined) {
        return (async () => {
          if (admitting) admit(throttle, name, clock, fixed.events); // a refusal rejects, as the query would have
          return counted(throttle, clock, undefined, async () => original.apply(target, args));
        })();
      }
      const resolved = resolve(deadline);
      const send = (client: PgClient) => (client.query as Fn).apply(client, args) as Promise<unknown>;
      return runStatement(target as PgPoolClient, resolved, send, throttle, admitting).catch(
        (error: unknown) => {
          onError(error);
          throw error;
        },
      );
    };
  const wrapClient = (client: PgPoolClient, release: (broken?: unknown) => void): PgPoolClient => {
    let broken = false;
    let released = false;
    return new Proxy(client, {
      get(target, key, receiver) {
        const value = Reflect.get(target, key, receiver) as unknown;
        if (typeof value !== 'function') return value;
        if (key === 'release') {
          return (destroy?: boolean | Error) => {
            if (released) return;
            released = true;
            release(destroy === undefined || destroy === false ? broken : destroy);
          };
        }
        if (key === 'query')
          return guardedQuery(
            target,
            value as Fn,
            (error) => {
              if (connectionBroken(error)) broken = true;
            },
            false,
          );
        return (value as Fn).bind(target);
      },
    });
  };

  const throttling = (): ThrottleState | undefined => throttle?.state(clock.now());
  const guardedPool = new Proxy(pool, {
    get(target, key, receiver) {
      if (key === 'throttling') return throttling; // the wrapper's own: the pool itself is not changed
      const value = Reflect.get(target, key, receiver) as unknown;
      if (typeof value !== 'function') return value;
      if (key === 'connect') {
        return async (...args: unknown[]) => {
          const deadline = currentDeadline();
          if (args.length > 0) return (value as Fn).apply(target, args);
          if (deadline === undefined) {
            admit(throttle, name, clock, fixed.events);
            return counted(throttle, clock, undefined, async () => (value as Fn).apply(target, args), false);
          }
          const resolved = resolve(deadline);
          checkFits(deadline, resolved);
          admit(throttle, name, clock, fixed.events); // a refused connect takes no connection: nothing opened
          const taken = await counted(
            throttle,
            clock,
            undefined,
            () => lease(target, deadline, resolved),
            false,
          );
          return wrapClient(taken.client as PgPoolClient, taken.release);
        };
      }
      if (key === 'query') return guardedQuery(target, value as Fn, () => undefined, true);
      return (value as Fn).bind(target);
    },
  });
  return guardedPool as P & PgThrottled;
}

/** True for a call a guard passes through: no statement text, a callback, or more than (text, values). */
export const passesThrough = (args: readonly unknown[]): boolean =>
  guardedText(args[0]) === undefined || args.length > 2 || typeof args.at(-1) === 'function';

/** `pgDeadlinePool(pool, { dependency })`: see {@link pgDeadlinePool}. */
function executorPool<P extends PgPool>(
  pool: P,
  dependency: Dependency,
  cancelGraceMs: number | undefined,
): P & PgThrottled {
  const options = throughOptions(dependency, cancelGraceMs);
  const name = dependency.name;
  const poolQuery =
    (original: Fn) =>
    (...args: unknown[]): unknown => {
      if (passesThrough(args)) return original.apply(pool, args);
      const send = (client: PgClient) => (client.query as Fn).apply(client, args) as Promise<unknown>;
      return statementThrough(dependency, pool, options, send);
    };

  /** The client of a lease: its statements run under the lease's attempt; `release` ends the lease. */
  const leasedClient = (held: StoreLease<Lease>): PgPoolClient => {
    const { client, release } = held.connection;
    let broken = false;
    let released = false;
    return new Proxy(client as PgPoolClient, {
      get(target, key, receiver) {
        const value = Reflect.get(target, key, receiver) as unknown;
        if (typeof value !== 'function') return value;
        if (key === 'release') {
          return (destroy?: boolean | Error) => {
            if (released) return;
            released = true;
            held.end();
            release(destroy === undefined || destroy === false ? broken : destroy);
          };
        }
        if (key !== 'query') return (value as Fn).bind(target);
        return (...args: unknown[]): unknown => {
          if (passesThrough(args)) return (value as Fn).apply(target, args);
          const send = () => (value as Fn).apply(target, args) as Promise<unknown>;
          return leasedStatement(held, PG_JUDGE, name, (attempt) => {
            const guard = attemptOptions(options, attempt, () => {
              broken = true; // a cancel request may reach its next statement
            });
            return withStatementTimeout(target, attempt.deadline, guard, send);
          }).catch((error: unknown) => {
            if (connectionBroken(error)) broken = true;
            throw error;
          });
        };
      },
    });
  };

  const connect =
    (original: Fn) =>
    async (...args: unknown[]): Promise<unknown> => {
      if (args.length > 0) return original.apply(pool, args);
      const held = await leaseThrough(
        dependency,
        PG_JUDGE,
        (attempt) => lease(pool, attempt.deadline, attemptOptions(options, attempt)),
        (late) => late.release(),
      );
      return leasedClient(held);
    };

  const throttling = () => dependency.throttling();
  return new Proxy(pool, {
    get(target, key, receiver) {
      if (key === 'throttling') return throttling;
      const value = Reflect.get(target, key, receiver) as unknown;
      if (typeof value !== 'function') return value;
      if (key === 'connect') return connect(value as Fn);
      if (key === 'query') return poolQuery(value as Fn);
      return (value as Fn).bind(target);
    },
  }) as P & PgThrottled;
}
