import { currentDeadline } from '../deadline/ambient.js';
import type { Deadline } from '../deadline/deadline.js';
import { type OptionsOf, pickOptions, type Resolved } from '../options/declare.js';
import { readOptions } from '../options/validator.js';
import { PG_DEADLINE_OPTIONS, type ResolvedPgOptions } from './options.js';
import { runStatement } from './query.js';
import { checkFits, connectionBroken, lease } from './session.js';
import type { PgClient, PgPool, PgPoolClient } from './types.js';

/** Options of {@link pgDeadlinePool}: those of `queryWithDeadline` that hold for every query of a pool. */
export const PG_POOL_OPTIONS = pickOptions(PG_DEADLINE_OPTIONS, ['p99Ms', 'name', 'cancelGraceMs', 'clock']);

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
 */
export function pgDeadlinePool<P extends PgPool>(pool: P, options: PgPoolOptions = {}): P {
  const resolve = perDeadline(readOptions('pgDeadlinePool', PG_POOL_OPTIONS, options));
  const guardedQuery =
    (target: object, original: Fn, onError: (error: unknown) => void) =>
    (...args: unknown[]): unknown => {
      const deadline = currentDeadline();
      if (
        deadline === undefined ||
        guardedText(args[0]) === undefined ||
        args.length > 2 ||
        typeof args.at(-1) === 'function'
      )
        return original.apply(target, args);
      const resolved = resolve(deadline);
      const send = (client: PgClient) => (client.query as Fn).apply(client, args) as Promise<unknown>;
      return runStatement(target as PgPoolClient, resolved, send).catch((error: unknown) => {
        onError(error);
        throw error;
      });
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
          return guardedQuery(target, value as Fn, (error) => {
            if (connectionBroken(error)) broken = true;
          });
        return (value as Fn).bind(target);
      },
    });
  };

  return new Proxy(pool, {
    get(target, key, receiver) {
      const value = Reflect.get(target, key, receiver) as unknown;
      if (typeof value !== 'function') return value;
      if (key === 'connect') {
        return async (...args: unknown[]) => {
          const deadline = currentDeadline();
          if (deadline === undefined || args.length > 0) return (value as Fn).apply(target, args);
          const resolved = resolve(deadline);
          checkFits(deadline, resolved);
          const taken = await lease(target, deadline, resolved);
          return wrapClient(taken.client as PgPoolClient, taken.release);
        };
      }
      if (key === 'query') return guardedQuery(target, value as Fn, () => undefined);
      return (value as Fn).bind(target);
    },
  });
}
