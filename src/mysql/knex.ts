import { systemClock } from '../clock/system.js';
import { currentDeadline } from '../deadline/ambient.js';
import { readOptions } from '../options/validator.js';
import { throttleFrom } from '../throttle/throttle.js';
import { type MysqlConnection, serverOf } from './driver.js';
import { emitterOf } from './events.js';
import { MYSQL_POOL_OPTIONS, type MysqlPoolOptions, perDeadline } from './pool.js';
import { checkFits, guardStatement } from './session.js';
import { isTransactionControl } from './statement.js';
import { admit, counted } from './throttle.js';

/** What prazo needs of a Knex instance's client (structural: knex is never imported). */
interface KnexClient {
  readonly config?: { readonly client?: unknown };
  _query(connection: unknown, query: unknown): Promise<unknown>;
  acquireConnection(): Promise<unknown>;
  cancelQuery(connection: unknown): Promise<unknown>;
}

const PATCHED = Symbol.for('prazo.knexDeadline');
/** Knex's own `cancelQuery` sends its `KILL QUERY` past the deadline: it must go through as it is. */
const KILL = /^\s*kill\b/i;

type Fn = (...args: unknown[]) => unknown;

/**
 * Makes every query of a Knex instance on MySQL or MariaDB (`client: 'mysql2'` or `'mysql'`) run
 * under the **ambient** deadline (SPEC D4, D7), with no change to the queries themselves:
 * - below the p99 no connection is taken (`acquireConnection` fails fast, DEADLINE_INSUFFICIENT);
 * - each statement carries the server-side limit from the time left, as with `mysqlQuery`;
 * - at the deadline (or one grace after it, for a statement the limit covers) Knex's own
 *   `cancelQuery` sends `KILL QUERY` from a fresh connection (a full pool cannot stall it);
 * - a connection that was sent a kill or whose reply never came is destroyed, so Knex's pool
 *   discards it instead of handing it to the next query.
 * The guard sits on each connection Knex's pool hands out (its `query`), so it holds inside Knex
 * transactions too, whose client is a copy Knex makes per transaction. Queries outside any deadline
 * run as before. Returns the same instance; applying it twice is a no-op. For Knex on PostgreSQL:
 * `pgDeadlineKnex` of `prazo/pg`.
 */
export function knexWithDeadline<K extends object>(knex: K, options: MysqlPoolOptions = {}): K {
  const fixed = readOptions('knexWithDeadline', MYSQL_POOL_OPTIONS, options);
  const client = (knex as { client?: KnexClient }).client;
  if (
    client === undefined ||
    typeof client._query !== 'function' ||
    typeof client.acquireConnection !== 'function' ||
    typeof client.cancelQuery !== 'function'
  ) {
    throw new TypeError('knexWithDeadline: expected a Knex instance (knex({ client: "mysql2", ... }))');
  }
  const dialect = String(client.config?.client ?? '');
  if (!/^mysql2?$/.test(dialect)) {
    throw new TypeError(
      `knexWithDeadline: Knex client "${dialect}" is not supported (mysql2 or mysql; for pg, pgDeadlineKnex of prazo/pg)`,
    );
  }
  const marked = client as unknown as Record<symbol, unknown>;
  if (marked[PATCHED] === true) return knex;
  marked[PATCHED] = true;

  const resolve = perDeadline(fixed);
  const name = fixed.name ?? MYSQL_POOL_OPTIONS.defaults.name;
  const clock = fixed.clock ?? systemClock;
  const emit = emitterOf(fixed.events);
  // One throttle per Knex instance (one database): a connection is admitted when Knex acquires it
  // under a deadline (each query, or a transaction at its start); its statements are counted, never
  // refused.
  const throttle = throttleFrom(fixed.throttle, clock, fixed.random);

  /**
   * Guards a connection's `query` once: Knex calls it as `query({ sql, ...options }, bindings,
   * callback)`; the limited statement goes through the connection's own `query`.
   */
  const guardConnection = (connection: unknown): unknown => {
    const raw = connection as MysqlConnection & Record<symbol, unknown> & { destroy?: () => void };
    if (raw === null || typeof raw !== 'object' || typeof raw.query !== 'function' || raw[PATCHED])
      return connection;
    raw[PATCHED] = true;
    const own = raw.query as Fn;
    const destroy = (): void => {
      try {
        raw.destroy?.();
      } catch {
        // already closed
      }
    };
    (raw as { query: unknown }).query = (...args: unknown[]): unknown => {
      const deadline = currentDeadline();
      const callback = args.at(-1);
      const [statement, ...rest] = args.slice(0, -1);
      const text = typeof statement === 'string' ? statement : (statement as { sql?: unknown } | null)?.sql;
      if (
        deadline === undefined ||
        typeof callback !== 'function' ||
        typeof text !== 'string' ||
        KILL.test(text) ||
        isTransactionControl(text)
      )
        return own.apply(raw, args);
      let tainted = false;
      const guarded = async (): Promise<unknown[]> => {
        const server = fixed.server ?? (await serverOf(raw));
        return (await counted(throttle, clock, undefined, () =>
          guardStatement(text, server, deadline, resolve(deadline), {
            execute: (sql) =>
              new Promise((done, fail) => {
                const limited = typeof statement === 'string' ? sql : { ...(statement as object), sql };
                own.apply(raw, [
                  limited,
                  ...rest,
                  (error: unknown, ...values: unknown[]) => (error ? fail(error) : done(values)),
                ]);
              }),
            kill: () => {
              client.cancelQuery(raw).catch(() => undefined);
              return true;
            },
            taint: () => {
              tainted = true;
            },
            drop: destroy,
          }),
        )) as unknown[];
      };
      guarded().then(
        (values) => {
          if (tainted) destroy(); // Knex's pool validates it on release and discards it
          (callback as Fn)(null, ...values);
        },
        (error: unknown) => {
          if (tainted) destroy();
          (callback as Fn)(error);
        },
      );
      return undefined;
    };
    return connection;
  };

  const acquire = client.acquireConnection.bind(client);
  client.acquireConnection = async () => {
    const deadline = currentDeadline();
    if (deadline === undefined) return guardConnection(await acquire());
    checkFits(deadline, resolve(deadline));
    admit(throttle, name, clock, emit); // a refused query or transaction takes no connection
    return guardConnection(await counted(throttle, clock, undefined, acquire, false));
  };
  return knex;
}
