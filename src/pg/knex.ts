import { systemClock } from '../clock/system.js';
import { currentDeadline } from '../deadline/ambient.js';
import { withinDeadline } from '../deadline/store.js';
import { DeadlineExceededError } from '../errors/deadline.js';
import { readOptions } from '../options/validator.js';
import { throttleFrom } from '../throttle/throttle.js';
import { guardedText, PG_POOL_OPTIONS, type PgPoolOptions, perDeadline } from './pool.js';
import { withStatementTimeout } from './query.js';
import { checkFits, connectionBroken } from './session.js';
import { admit, counted, pgAccepted } from './throttle.js';
import type { PgClient } from './types.js';

/** What prazo needs of a Knex instance's client (structural: knex is never imported). */
interface KnexClient {
  readonly driverName?: unknown;
  readonly config?: { readonly client?: unknown };
  acquireConnection(): Promise<unknown>;
  releaseConnection(connection: unknown): Promise<unknown>;
}

const PATCHED = Symbol.for('prazo.knexPgDeadline');
const PG_CLIENTS = new Set(['pg', 'postgres', 'postgresql']);
/** Knex's own `cancelQuery` runs `SELECT pg_cancel_backend($1)`: never limited. */
const CANCEL = /^\s*select\s+pg_cancel_backend\s*\(/i;

/**
 * Makes every query of a Knex instance on PostgreSQL (`client: 'pg'`) run under the **ambient**
 * deadline (SPEC D4, D7), as `queryWithDeadline` runs one, with no change to the queries:
 * - below the p99 no connection is taken (`acquireConnection` fails fast, DEADLINE_INSUFFICIENT), and
 *   a full pool is waited on no longer than the deadline (a connection arriving late goes back);
 * - each statement gets a server-side `statement_timeout` from the time left (`SET LOCAL` in a
 *   transaction of its own, or, inside a Knex transaction, set for the statement and put back after)
 *   and a cancel request at the deadline plus `cancelGraceMs`; SQLSTATE 57014 becomes
 *   DeadlineExceededError with the pg error as `cause`;
 * - a connection that broke is marked disposed, so Knex's pool discards it.
 * The guard sits on each connection Knex's pool hands out (its `query`), so it holds inside Knex
 * transactions too, whose client is a copy Knex makes per transaction. Knex's own transaction control
 * (`BEGIN;`, `COMMIT;`, savepoints), streams and queries outside any deadline run as before. Returns
 * the same instance; applying it twice is a no-op. For Knex on MySQL or MariaDB: `knexWithDeadline`
 * of `prazo/mysql`.
 */
export function pgDeadlineKnex<K extends object>(knex: K, options: PgPoolOptions = {}): K {
  const fixed = readOptions('pgDeadlineKnex', PG_POOL_OPTIONS, options);
  const resolve = perDeadline(fixed);
  const name = fixed.name ?? PG_POOL_OPTIONS.defaults.name;
  const clock = fixed.clock ?? systemClock;
  const client = (knex as { client?: KnexClient }).client;
  if (
    client === undefined ||
    typeof client.acquireConnection !== 'function' ||
    typeof client.releaseConnection !== 'function'
  ) {
    throw new TypeError('pgDeadlineKnex: expected a Knex instance (knex({ client: "pg", ... }))');
  }
  const dialect = String(client.driverName ?? client.config?.client ?? '');
  if (!PG_CLIENTS.has(dialect)) {
    throw new TypeError(
      `pgDeadlineKnex: Knex client "${dialect}" is not supported (pg; for mysql2 or mysql, knexWithDeadline of prazo/mysql)`,
    );
  }
  const marked = client as unknown as Record<symbol, unknown>;
  if (marked[PATCHED] === true) return knex;
  marked[PATCHED] = true;
  // One throttle per Knex instance (one database): a connection is admitted when Knex acquires it
  // (each query, or a transaction at its start); the statements on it are counted, never refused.
  const throttle = throttleFrom(fixed.throttle, clock, fixed.random);

  const original = client.acquireConnection.bind(client);
  const acquire = async (): Promise<unknown> =>
    guardConnection(await counted(throttle, clock, undefined, original, false));
  client.acquireConnection = async () => {
    const deadline = currentDeadline();
    if (deadline === undefined) {
      admit(throttle, name, clock, fixed.events);
      return acquire();
    }
    const resolved = resolve(deadline);
    checkFits(deadline, resolved);
    admit(throttle, name, clock, fixed.events); // a refused query or transaction takes no connection
    return withinDeadline(acquire(), deadline, resolved.clock, {
      giveBack: (late) => {
        client.releaseConnection(late).catch(() => undefined);
      },
      expired: (elapsedMs) => new DeadlineExceededError({ dependency: `${resolved.name} (pool)`, elapsedMs }),
    });
  };

  /**
   * Guards a pg connection's `query` once: Knex calls it as `query(config, callback)`. The
   * statement and the `statement_timeout` around it go through the connection's own `query`.
   */
  const guardConnection = (connection: unknown): unknown => {
    const conn = connection as PgClient & Record<symbol, unknown>;
    if (conn === null || typeof conn !== 'object' || typeof conn.query !== 'function' || conn[PATCHED])
      return connection;
    conn[PATCHED] = true;
    const own = conn.query as (...args: unknown[]) => unknown;
    const plain: PgClient = Object.create(conn, { query: { value: own.bind(conn) } });
    (conn as { query: unknown }).query = (...args: unknown[]): unknown => {
      const deadline = currentDeadline();
      const callback = args.at(-1);
      const text = guardedText(args[0]);
      if (typeof callback !== 'function' || text === undefined || CANCEL.test(text))
        return own.apply(conn, args);
      if (deadline === undefined) {
        if (throttle === undefined) return own.apply(conn, args);
        return own.apply(conn, [
          ...args.slice(0, -1),
          (error: unknown, result: unknown) => {
            const accepted = error ? pgAccepted(error, false) : true;
            if (accepted !== undefined) throttle.count(clock.now(), accepted);
            (callback as (e: unknown, r: unknown) => void)(error, result);
          },
        ]);
      }
      const send = () =>
        new Promise((resolveQuery, reject) => {
          own.apply(conn, [
            ...args.slice(0, -1),
            (error: unknown, result: unknown) => (error ? reject(error) : resolveQuery(result)),
          ]);
        });
      counted(throttle, clock, undefined, () =>
        withStatementTimeout(plain, deadline, resolve(deadline), send),
      ).then(
        (result) => callback(null, result),
        (error: unknown) => {
          // Knex's pool validates a connection on release and discards one marked disposed
          if (connectionBroken(error)) (conn as { __knex__disposed?: unknown }).__knex__disposed = error;
          callback(error);
        },
      );
      return undefined;
    };
    return connection;
  };
  return knex;
}
