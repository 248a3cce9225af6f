import { systemClock } from '../clock/system.js';
import { currentDeadline } from '../deadline/ambient.js';
import type { Deadline } from '../deadline/deadline.js';
import { leasedStatement, leaseKnexConnections } from '../deadline/store.js';
import type { Dependency } from '../dependency/dependency.js';
import { readOptions } from '../options/validator.js';
import { throttleFrom } from '../throttle/throttle.js';
import { type MysqlConnection, type MysqlServer, serverOf } from './driver.js';
import { emitterOf } from './events.js';
import { attemptOptions, MYSQL_JUDGE, throughOptions } from './executor.js';
import type { ResolvedMysqlOptions } from './options.js';
import { MYSQL_POOL_OPTIONS, type MysqlPoolOptions, perDeadline } from './pool.js';
import { checkFits, guardStatement } from './session.js';
import { isTransactionControl } from './statement.js';
import { admit, counted } from './throttle.js';

/** What prazo needs of a Knex instance's client (structural: knex is never imported). */
interface KnexClient {
  readonly config?: { readonly client?: unknown };
  _query(connection: unknown, query: unknown): Promise<unknown>;
  acquireConnection(): Promise<unknown>;
  releaseConnection(connection: unknown): Promise<unknown>;
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
 *
 * With `dependency` (an executor), each connection Knex acquires (one per query, or one for a whole
 * transaction) is one call of it for as long as Knex holds it: its D4, throttle and concurrency
 * limit decide whether and when the connection is taken (within the attempt's end), its recorder
 * times the query (or the transaction) to `releaseConnection`, and the statements on the connection
 * run under that call's attempt (the server-side limit from what is left of it, refused once it is
 * over).
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
  if (fixed.dependency !== undefined) {
    executorKnex(client, fixed.dependency, fixed);
    return knex;
  }

  const resolve = perDeadline(fixed);
  const name = fixed.name ?? MYSQL_POOL_OPTIONS.defaults.name;
  const clock = fixed.clock ?? systemClock;
  const emit = emitterOf(fixed.events);
  // One throttle per Knex instance (one database): a connection is admitted when Knex acquires it
  // under a deadline (each query, or a transaction at its start); its statements are counted, never
  // refused.
  const throttle = throttleFrom(fixed.throttle, clock, fixed.random);

  const guardConnection = (connection: unknown): unknown =>
    guardQueries(connection, client, fixed.server, () => {
      const deadline = currentDeadline();
      if (deadline === undefined) return undefined;
      return (guard) => counted(throttle, clock, undefined, () => guard(deadline, resolve(deadline)));
    });

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

/**
 * `knexWithDeadline(knex, { dependency })`: each connection Knex acquires is a lease of `dependency`
 * (deadline/store.ts `leaseThrough`), ended when Knex releases it; the statements on it run under
 * the lease's attempt, killed through Knex's own `cancelQuery`.
 */
function executorKnex(client: KnexClient, dependency: Dependency, fixed: MysqlPoolOptions): void {
  const options = throughOptions(dependency, fixed);
  const name = dependency.name;
  leaseKnexConnections(client, dependency, MYSQL_JUDGE, options.clock, (connection, leaseOf) =>
    guardQueries(connection, client, fixed.server, (raw) => {
      const held = leaseOf(raw);
      if (held === undefined) return undefined;
      return (guard) =>
        leasedStatement(held, MYSQL_JUDGE, name, (attempt) =>
          guard(attempt.deadline, attemptOptions(options, attempt)),
        );
    }),
  );
}

/** How one statement runs: `guard` (the statement under a deadline and options) inside the caller's bookkeeping. */
type Runner = (
  guard: (deadline: Deadline, options: ResolvedMysqlOptions) => Promise<unknown>,
) => Promise<unknown>;

/**
 * Guards a connection's `query` once: Knex calls it as `query({ sql, ...options }, bindings,
 * callback)`; the limited statement goes through the connection's own `query`, killed through Knex's
 * own `cancelQuery`. `runnerOf` says, per statement, how it runs (undefined: it passes through).
 */
function guardQueries(
  connection: unknown,
  client: KnexClient,
  fixedServer: MysqlServer | undefined,
  runnerOf: (raw: object) => Runner | undefined,
): unknown {
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
    const callback = args.at(-1);
    const [statement, ...rest] = args.slice(0, -1);
    const text = typeof statement === 'string' ? statement : (statement as { sql?: unknown } | null)?.sql;
    const runner =
      typeof callback !== 'function' ||
      typeof text !== 'string' ||
      KILL.test(text) ||
      isTransactionControl(text)
        ? undefined
        : runnerOf(raw);
    if (runner === undefined) return own.apply(raw, args);
    let tainted = false;
    const guarded = async (): Promise<unknown[]> => {
      const server = fixedServer ?? (await serverOf(raw));
      return (await runner((deadline, options) =>
        guardStatement(text as string, server, deadline, options, {
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
}
