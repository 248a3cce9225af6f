/**
 * The one shape prazo works with, over the four MySQL client APIs users have: `mysql2` (promise and
 * callback), `mariadb` (promise and callback). Only structure is read (the drivers are optional
 * peers, never imported): a pool has `getConnection`, a connection has `query` and a `threadId`.
 *
 * Promise or callback is told per call, not per object: each method is called with a trailing
 * callback, and a returned Promise wins (`mariadb`'s promise API ignores the extra argument; a
 * callback API returns nothing, or, for `mysql2`, a `Query` emitter whose `then` only throws a hint).
 * `mysql2`'s promise objects, which refuse a callback, are known by the Promise constructor they hold.
 */

/** A connection of `mysql2` (promise or callback API) or of the `mariadb` connector. */
export interface MysqlConnection {
  query(...args: never[]): unknown;
  /** The server's id for this connection (`CONNECTION_ID()`), the target of `KILL QUERY`. */
  readonly threadId?: number | null;
}

/** A pool of `mysql2` (`createPool`, or its `.promise()`) or of `mariadb` (`createPool`). */
export interface MysqlPool {
  getConnection(...args: never[]): unknown;
  query(...args: never[]): unknown;
}

/** What prazo runs on: a pool (a connection is taken per call) or one connection of the caller's. */
export type MysqlTarget = MysqlPool | MysqlConnection;

/** Which server dialect limits a statement: MariaDB's `max_statement_time`, MySQL's hint. */
export type MysqlServer = 'mariadb' | 'mysql';

type Method = (...args: unknown[]) => unknown;

/** True for a pool (it hands out connections). */
export function isPool(target: MysqlTarget): target is MysqlPool {
  return typeof (target as MysqlPool).getConnection === 'function';
}

const isPromise = (value: unknown): value is Promise<unknown> =>
  value instanceof Promise ||
  (value !== null &&
    typeof value === 'object' &&
    typeof (value as { then?: unknown }).then === 'function' &&
    typeof (value as { on?: unknown }).on !== 'function');

/**
 * Calls `target[method](...args)` on whichever API it has; resolves with what the promise API would:
 * a callback's values after the error (`mysql2`: `[rows, fields]`; `mariadb`: `rows`).
 */
export function invoke(target: object, method: string, args: readonly unknown[]): Promise<unknown> {
  const fn = (target as Record<string, unknown>)[method];
  if (typeof fn !== 'function') return Promise.reject(new TypeError(`the MySQL client has no ${method}()`));
  return new Promise((resolve, reject) => {
    let viaCallback = true;
    const callback = (error: unknown, ...values: unknown[]): void => {
      if (!viaCallback) return;
      if (error) reject(error);
      else resolve(values.length > 1 && !isMariadbConnector(target) ? values : values[0]);
    };
    let returned: unknown;
    try {
      // mysql2's promise objects refuse a callback (they carry their Promise constructor)
      const promiseApi = typeof (target as { Promise?: unknown }).Promise === 'function';
      returned = (fn as Method).apply(target, promiseApi ? [...args] : [...args, callback]);
    } catch (error) {
      reject(error);
      return;
    }
    if (isPromise(returned)) {
      viaCallback = false;
      returned.then(resolve, reject);
    }
  });
}

/** The `mariadb` connector's connections and pools (its `info`, its `serverVersion()`). */
function isMariadbConnector(target: object): boolean {
  const t = target as { info?: unknown; serverVersion?: unknown; getConnection?: unknown };
  return typeof t.serverVersion === 'function' || (typeof t.info === 'object' && t.info !== null);
}

/** The server's version string as the driver read it at the handshake, without a round trip. */
function handshakeVersion(connection: MysqlConnection): string | undefined {
  const c = connection as {
    serverVersion?: unknown;
    info?: { isMariaDB?: () => boolean };
    connection?: { _handshakePacket?: { serverVersion?: unknown } };
    _handshakePacket?: { serverVersion?: unknown };
  };
  if (typeof c.info?.isMariaDB === 'function') return c.info.isMariaDB() ? 'mariadb' : 'mysql';
  const packet = c._handshakePacket ?? c.connection?._handshakePacket;
  return typeof packet?.serverVersion === 'string' ? packet.serverVersion : undefined;
}

const servers = new WeakMap<object, MysqlServer>();

/**
 * MariaDB or MySQL, for the statement limit's syntax: from the handshake when the driver kept it,
 * else asked once (`SELECT VERSION()`) and remembered per connection.
 */
export async function serverOf(connection: MysqlConnection): Promise<MysqlServer> {
  const known = servers.get(connection);
  if (known !== undefined) return known;
  let version = handshakeVersion(connection);
  if (version === undefined) {
    const result = await invoke(connection, 'query', ['SELECT VERSION() AS v']);
    const rows = Array.isArray(result) && Array.isArray(result[0]) ? result[0] : result;
    version = String((rows as { v?: unknown }[] | undefined)?.[0]?.v ?? '');
  }
  const server: MysqlServer = /mariadb/i.test(version) ? 'mariadb' : 'mysql';
  servers.set(connection, server);
  return server;
}
