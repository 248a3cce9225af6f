import { currentDeadline } from '../deadline/ambient.js';
import { readOptions } from '../options/validator.js';
import { type MysqlConnection, serverOf } from './driver.js';
import { MYSQL_POOL_OPTIONS, type MysqlPoolOptions, perDeadline } from './pool.js';
import { checkFits, guardStatement } from './session.js';

/** What prazo needs of a Knex instance's client (structural: knex is never imported). */
interface KnexClient {
  readonly config?: { readonly client?: unknown };
  _query(connection: unknown, query: unknown): Promise<unknown>;
  acquireConnection(): Promise<unknown>;
  cancelQuery(connection: unknown): Promise<unknown>;
}

const PATCHED = Symbol.for('prazo.knexDeadline');

/**
 * Makes every query of a Knex instance on MySQL or MariaDB (`client: 'mysql2'` or `'mysql'`) run
 * under the **ambient** deadline (SPEC D4, D7), with no change to the queries themselves:
 * - below the p99 no connection is taken (`acquireConnection` fails fast, DEADLINE_INSUFFICIENT);
 * - each statement carries the server-side limit from the time left, as with `mysqlQuery`;
 * - at the deadline (or one grace after it, for a statement the limit covers) Knex's own
 *   `cancelQuery` sends `KILL QUERY` from a fresh connection (a full pool cannot stall it);
 * - a connection that was sent a kill or whose reply never came is destroyed, so Knex's pool
 *   discards it instead of handing it to the next query.
 * Queries outside any deadline run as before. Returns the same instance; applying it twice is a
 * no-op.
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

  const acquire = client.acquireConnection.bind(client);
  client.acquireConnection = async () => {
    const deadline = currentDeadline();
    if (deadline !== undefined) checkFits(deadline, resolve(deadline));
    return acquire();
  };

  const query = client._query.bind(client);
  client._query = async (connection: unknown, obj: unknown) => {
    const deadline = currentDeadline();
    const text = typeof obj === 'string' ? obj : (obj as { sql?: unknown } | null)?.sql;
    // Knex's own cancelQuery runs its KILL through here too, past the deadline: it must go through
    if (deadline === undefined || typeof text !== 'string' || /^\s*kill\b/i.test(text))
      return query(connection, obj);
    const resolved = resolve(deadline);
    const raw = connection as MysqlConnection & { destroy?: () => void };
    const server = fixed.server ?? (await serverOf(raw));
    let tainted = false;
    const destroy = (): void => {
      try {
        raw.destroy?.();
      } catch {
        // already closed
      }
    };
    try {
      return await guardStatement(text, server, deadline, resolved, {
        execute: (sql) => query(connection, typeof obj === 'string' ? sql : { ...(obj as object), sql }),
        kill: () => {
          client.cancelQuery(connection).catch(() => undefined);
          return true;
        },
        taint: () => {
          tainted = true;
        },
        drop: destroy,
      });
    } finally {
      if (tainted) destroy(); // Knex's pool validates it on release and discards it
    }
  };
  return knex;
}
