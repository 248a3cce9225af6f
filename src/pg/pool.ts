import { currentDeadline } from '../deadline/ambient.js';
import { type OptionsOf, pickOptions } from '../options/declare.js';
import { readOptions } from '../options/validator.js';
import { PG_DEADLINE_OPTIONS } from './options.js';
import { queryWithDeadline } from './query.js';
import { checkFits, connectionBroken, lease } from './session.js';
import type { PgPool, PgPoolClient } from './types.js';

/** Options of {@link pgDeadlinePool}: those of `queryWithDeadline` that hold for every query of a pool. */
export const PG_POOL_OPTIONS = pickOptions(PG_DEADLINE_OPTIONS, ['p99Ms', 'name', 'cancelGraceMs', 'clock']);

export type PgPoolOptions = OptionsOf<typeof PG_POOL_OPTIONS>;

/** Statements a builder sends to run its own transaction: passed through as they are. */
const TRANSACTION_CONTROL =
  /^\s*(begin|start|commit|end|rollback|abort|savepoint|release|set|prepare\s+transaction)\b/i;

type Fn = (...args: unknown[]) => unknown;

/**
 * A `pg.Pool` whose every text query runs under the **ambient** deadline (SPEC D4, D7), the way
 * `queryWithDeadline` runs one: what Kysely's `PostgresDialect({ pool })` is given, so its queries
 * get a server-side `statement_timeout` from the time left and a cancel request at the deadline,
 * without threading it by hand. `connect()` fails fast below the p99 and waits no longer than the
 * deadline; a client whose connection broke is destroyed on `release()`. Transaction control the
 * builder sends itself (`begin`, `commit`, `savepoint`, ...), query objects (cursors, configs) and
 * everything outside a deadline pass through unchanged; inside a builder's transaction the timeout
 * is set for the statement and put back after (pg >= 8.21 tells prazo the transaction is open).
 */
export function pgDeadlinePool<P extends PgPool>(pool: P, options: PgPoolOptions = {}): P {
  const fixed = readOptions('pgDeadlinePool', PG_POOL_OPTIONS, options);
  const guardedQuery =
    (target: object, original: Fn, onError: (error: unknown) => void) =>
    (...args: unknown[]): unknown => {
      const [text, values] = args;
      const deadline = currentDeadline();
      if (
        deadline === undefined ||
        typeof text !== 'string' ||
        TRANSACTION_CONTROL.test(text) ||
        args.length > 2
      )
        return original.apply(target, args);
      const params = Array.isArray(values) ? values : [];
      return queryWithDeadline(target as PgPoolClient, text, params, { ...fixed, deadline }).catch(
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
          const resolved = {
            ...fixed,
            deadline,
            signal: undefined,
            clock: fixed.clock ?? deadline.clock,
          };
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
