import { systemClock } from '../clock/system.js';
import { currentDeadline } from '../deadline/ambient.js';
import type { Deadline } from '../deadline/deadline.js';
import {
  EXECUTOR_OWNED,
  leasedStatement,
  leaseThrough,
  type StoreAttempt,
  type StoreLease,
} from '../deadline/store.js';
import type { Dependency } from '../dependency/dependency.js';
import { besideDependency } from '../dependency/transport.js';
import type { OptionsOf } from '../options/declare.js';
import { pickOptions } from '../options/declare.js';
import { readOptions } from '../options/validator.js';
import type { ThrottleState } from '../throttle/throttle.js';
import { throttleFrom } from '../throttle/throttle.js';
import { invoke, type MysqlConnection, type MysqlPool, serverOf } from './driver.js';
import { emitterOf } from './events.js';
import { attemptOptions, MYSQL_JUDGE, statementThrough, throughOptions } from './executor.js';
import { MYSQL_DEADLINE_OPTIONS, type ResolvedMysqlOptions } from './options.js';
import {
  checkFits,
  guardStatement,
  openSession,
  Session,
  sendKill,
  sessionHandle,
  withinDeadline,
} from './session.js';
import { connectionFit, isTransactionControl } from './statement.js';
import { admit, counted } from './throttle.js';

/** Options of {@link mysqlDeadlinePool}: those of `mysqlQuery` that hold for every query of a pool. */
export const MYSQL_POOL_OPTIONS = pickOptions(
  MYSQL_DEADLINE_OPTIONS,
  [
    'p99Ms',
    'name',
    'cancelGraceMs',
    'server',
    'killVia',
    'events',
    'throttle',
    'random',
    'clock',
    'dependency',
  ],
  besideDependency(EXECUTOR_OWNED),
);

export type MysqlPoolOptions = OptionsOf<typeof MYSQL_POOL_OPTIONS>;

type Fn = (...args: unknown[]) => unknown;
const STATEMENT_METHODS = new Set(['query', 'execute']);

/** The statement's text, whether given as a string or as mysql2's `{ sql, ... }`. */
const textOf = (statement: unknown): string | undefined =>
  typeof statement === 'string'
    ? statement
    : typeof (statement as { sql?: unknown } | null)?.sql === 'string'
      ? (statement as { sql: string }).sql
      : undefined;
const withText = (statement: unknown, sql: string): unknown =>
  typeof statement === 'string' ? sql : { ...(statement as object), sql };

/**
 * The per-call options of a guard installed once (a pool, a Knex client): the fixed options read at
 * construction, with the ambient deadline of each call and its clock.
 */
export function perDeadline(fixed: MysqlPoolOptions): (deadline: Deadline) => ResolvedMysqlOptions {
  const emit = emitterOf(fixed.events);
  return (deadline) => ({
    p99Ms: fixed.p99Ms ?? MYSQL_POOL_OPTIONS.defaults.p99Ms,
    name: fixed.name ?? MYSQL_POOL_OPTIONS.defaults.name,
    cancelGraceMs: fixed.cancelGraceMs ?? MYSQL_POOL_OPTIONS.defaults.cancelGraceMs,
    server: fixed.server,
    killVia: fixed.killVia,
    emit,
    deadline,
    signal: undefined,
    clock: fixed.clock ?? deadline.clock,
  });
}

/** Splits `(statement, values?, callback?)` into its parts (a callback is the last function). */
function split(args: readonly unknown[]): { rest: unknown[]; callback: Fn | undefined } {
  const last = args.at(-1);
  return typeof last === 'function'
    ? { rest: args.slice(0, -1), callback: last as Fn }
    : { rest: [...args], callback: undefined };
}

/** What a callback API passed after its error, kept whole for the caller's own callback. */
class CallbackValues {
  constructor(readonly values: unknown[]) {}
}

/** Calls `method` the way the caller did: with a callback (all its values kept) or for a promise. */
function call(target: object, method: string, args: unknown[], viaCallback: boolean): Promise<unknown> {
  const fn = (target as Record<string, Fn>)[method]!;
  if (!viaCallback) return Promise.resolve(fn.apply(target, args));
  return new Promise((resolve, reject) => {
    fn.apply(target, [
      ...args,
      (error: unknown, ...values: unknown[]) => (error ? reject(error) : resolve(new CallbackValues(values))),
    ]);
  });
}

/** Delivers a promise to a node-style callback, or returns it. */
function deliver(result: Promise<unknown>, callback: Fn | undefined): unknown {
  if (callback === undefined) return result;
  result.then(
    (value) => (value instanceof CallbackValues ? callback(null, ...value.values) : callback(null, value)),
    (error: unknown) => callback(error),
  );
  return undefined;
}

/**
 * A `mysql2` pool (callback or promise API) whose every statement runs under the **ambient**
 * deadline (SPEC D4, D7): what Kysely's `MysqlDialect({ pool })` and Drizzle's `drizzle(pool)` are
 * given, so that their queries get the same fail-fast, server-side limit and kill as `mysqlQuery`
 * without threading a deadline by hand. `pool.query`/`execute`, and `query`/`execute` of every
 * connection `getConnection` hands out, are guarded; a connection is taken no longer than the
 * deadline allows (and not at all below the p99); a connection that was sent a kill, or whose reply
 * never came, is destroyed when released. Outside any deadline the pool behaves as given. A call
 * that returns a stream (no callback, callback API) passes through unguarded.
 *
 * With `dependency` (an executor), every statement `pool.query`/`execute` runs is one call of it,
 * and a connection `getConnection` hands out one call for as long as it is held (a builder's
 * transaction): the executor's D4, throttle and concurrency limit decide whether and when it starts
 * (no connection is taken before), its recorder times it, and its statements run under that call's
 * attempt (the server-side limit from what is left of it, refused once it is over). `throttling()` is
 * the dependency's. Statements outside any deadline go through it too, under its `defaultDeadlineMs`.
 */
export function mysqlDeadlinePool<P extends MysqlPool>(
  pool: P,
  options: MysqlPoolOptions = {},
): P & MysqlThrottled {
  const fixed = readOptions('mysqlDeadlinePool', MYSQL_POOL_OPTIONS, options);
  if (fixed.dependency !== undefined) return executorPool(pool, fixed.dependency, fixed);
  const resolve = perDeadline(fixed);
  const name = fixed.name ?? MYSQL_POOL_OPTIONS.defaults.name;
  const clock = fixed.clock ?? systemClock;
  const emit = emitterOf(fixed.events);
  // One throttle per guarded pool: one database is one dependency. A statement of `pool.query` /
  // `execute` and `getConnection()` (a builder's transaction, or a connection it keeps) are admitted
  // under a deadline; the statements of a connection handed out are counted, never refused: a
  // transaction is decided at its start.
  const throttle = throttleFrom(fixed.throttle, clock, fixed.random);
  const promiseApi = typeof (pool as { Promise?: unknown }).Promise === 'function';

  /**
   * A statement call's parts and the deadline it runs under, or undefined when it passes through
   * unguarded: no ambient deadline, no statement text, a builder's own transaction control, or a
   * callback-API call without a callback (a stream).
   */
  const guardable = (args: unknown[]) => {
    const deadline = currentDeadline();
    const { rest, callback } = split(args);
    const text = textOf(rest[0]);
    if (
      deadline === undefined ||
      text === undefined ||
      isTransactionControl(text) ||
      (!promiseApi && callback === undefined)
    )
      return undefined;
    return { deadline, resolved: resolve(deadline), rest, callback, text };
  };

  const poolStatement =
    (method: string, original: Fn) =>
    (...args: unknown[]): unknown => {
      const parts = guardable(args);
      if (parts === undefined) return original.apply(pool, args);
      const { deadline, resolved, rest, callback, text } = parts;
      const run = async (): Promise<unknown> => {
        checkFits(deadline, resolved);
        admit(throttle, name, clock, emit); // refused: no connection taken, nothing sent
        const session = await counted(
          throttle,
          clock,
          undefined,
          () => openSession(pool, deadline, resolved),
          false,
        );
        try {
          const result = await counted(throttle, clock, undefined, () =>
            guardStatement(text, session.server, deadline, resolved, {
              execute: (sql) =>
                call(
                  session.connection,
                  method,
                  [withText(rest[0], sql), ...rest.slice(1)],
                  callback !== undefined,
                ),
              kill: () => sendKill(session, fixed.killVia ?? pool),
              taint: () => session.taint(),
              drop: () => {
                session.taint();
                session.end(true);
              },
            }),
          );
          session.end();
          return result;
        } catch (error) {
          if (!connectionFit(error)) session.taint();
          session.end();
          throw error;
        }
      };
      return deliver(run(), callback);
    };

  const wrapConnection = async (connection: MysqlConnection): Promise<MysqlConnection> => {
    const session = new Session(connection, fixed.server ?? (await serverOf(connection)), true);
    return new Proxy(connection, {
      get(target, key, receiver) {
        const value = Reflect.get(target, key, receiver) as unknown;
        if (typeof value !== 'function') return value;
        if (key === 'release') return () => session.end();
        if (key === 'destroy') return () => session.end(true);
        if (typeof key !== 'string' || !STATEMENT_METHODS.has(key)) return (value as Fn).bind(target);
        return (...args: unknown[]): unknown => {
          const parts = guardable(args);
          if (parts === undefined) return (value as Fn).apply(target, args);
          const { deadline, resolved, rest, callback, text } = parts;
          const result = counted(throttle, clock, undefined, () =>
            guardStatement(text, session.server, deadline, resolved, {
              execute: (sql) =>
                call(target, key, [withText(rest[0], sql), ...rest.slice(1)], callback !== undefined),
              kill: () => sendKill(session, fixed.killVia ?? pool),
              taint: () => session.taint(),
              drop: () => {
                session.taint();
                session.end(true);
              },
            }),
          );
          return deliver(result, callback);
        };
      },
    });
  };

  const getConnection = (original: Fn) => {
    const take = async (): Promise<MysqlConnection> => {
      const deadline = currentDeadline();
      if (deadline === undefined)
        return wrapConnection((await invoke(pool, 'getConnection', [])) as MysqlConnection);
      const resolved = resolve(deadline);
      checkFits(deadline, resolved); // below the p99: no connection is taken
      admit(throttle, name, clock, emit); // nor when refused: the transaction is decided here
      const taken = await counted(
        throttle,
        clock,
        undefined,
        () =>
          withinDeadline(invoke(pool, 'getConnection', []) as Promise<MysqlConnection>, deadline, resolved),
        false,
      );
      return wrapConnection(taken);
    };
    return (...args: unknown[]): unknown => {
      const { callback } = split(args);
      if (!promiseApi && callback === undefined) return original.apply(pool, args);
      return deliver(take(), callback);
    };
  };

  const throttling = (): ThrottleState | undefined => throttle?.state(clock.now());
  return new Proxy(pool, {
    get(target, key, receiver) {
      if (key === 'throttling') return throttling; // the wrapper's own: the pool itself is not changed
      const value = Reflect.get(target, key, receiver) as unknown;
      if (typeof value !== 'function') return value;
      if (key === 'getConnection') return getConnection(value as Fn);
      if (typeof key === 'string' && STATEMENT_METHODS.has(key)) return poolStatement(key, value as Fn);
      return (value as Fn).bind(target);
    },
  }) as P & MysqlThrottled;
}

/** `mysqlDeadlinePool(pool, { dependency })`: see {@link mysqlDeadlinePool}. */
function executorPool<P extends MysqlPool>(
  pool: P,
  dependency: Dependency,
  fixed: MysqlPoolOptions,
): P & MysqlThrottled {
  const options = throughOptions(dependency, fixed);
  const name = dependency.name;
  const via = fixed.killVia ?? pool;
  const promiseApi = typeof (pool as { Promise?: unknown }).Promise === 'function';

  /** A statement call's parts, or undefined when it passes through (see the thin path's `guardable`). */
  const guardable = (args: unknown[]) => {
    const { rest, callback } = split(args);
    const text = textOf(rest[0]);
    if (text === undefined || isTransactionControl(text) || (!promiseApi && callback === undefined))
      return undefined;
    return { rest, callback, text };
  };

  const poolStatement =
    (method: string, original: Fn) =>
    (...args: unknown[]): unknown => {
      const parts = guardable(args);
      if (parts === undefined) return original.apply(pool, args);
      const { rest, callback, text } = parts;
      const send = (session: Session, sql: string) =>
        call(session.connection, method, [withText(rest[0], sql), ...rest.slice(1)], callback !== undefined);
      return deliver(statementThrough(dependency, pool, options, text, send, via), callback);
    };

  /** The connection of a lease: its statements run under the lease's attempt; release ends the lease. */
  const leasedConnection = (held: StoreLease<Session>): MysqlConnection => {
    const session = held.connection;
    return new Proxy(session.connection, {
      get(target, key, receiver) {
        const value = Reflect.get(target, key, receiver) as unknown;
        if (typeof value !== 'function') return value;
        if (key === 'release' || key === 'destroy') {
          return () => {
            held.end();
            session.end(key === 'destroy');
          };
        }
        if (typeof key !== 'string' || !STATEMENT_METHODS.has(key)) return (value as Fn).bind(target);
        return (...args: unknown[]): unknown => {
          const parts = guardable(args);
          if (parts === undefined) return (value as Fn).apply(target, args);
          const { rest, callback, text } = parts;
          const execute = (sql: string) =>
            call(target, key, [withText(rest[0], sql), ...rest.slice(1)], callback !== undefined);
          const result = leasedStatement(held, MYSQL_JUDGE, name, (attempt) =>
            guardStatement(
              text,
              session.server,
              attempt.deadline,
              attemptOptions(options, attempt),
              sessionHandle(session, execute, via),
            ),
          );
          return deliver(result, callback);
        };
      },
    });
  };

  /** A connection of the pool within the attempt's end, with its server's dialect. */
  const take = async (attempt: StoreAttempt): Promise<Session> => {
    const connection = await withinDeadline(
      invoke(pool, 'getConnection', []) as Promise<MysqlConnection>,
      attempt.deadline,
      attemptOptions(options, attempt),
    );
    try {
      return new Session(connection, fixed.server ?? (await serverOf(connection)), true);
    } catch (error) {
      new Session(connection, 'mysql', true).end(true);
      throw error;
    }
  };

  const getConnection = (original: Fn) => {
    const lease = async (): Promise<MysqlConnection> =>
      leasedConnection(await leaseThrough(dependency, MYSQL_JUDGE, take, (late) => late.end()));
    return (...args: unknown[]): unknown => {
      const { callback } = split(args);
      if (!promiseApi && callback === undefined) return original.apply(pool, args);
      return deliver(lease(), callback);
    };
  };

  const throttling = () => dependency.throttling();
  return new Proxy(pool, {
    get(target, key, receiver) {
      if (key === 'throttling') return throttling;
      const value = Reflect.get(target, key, receiver) as unknown;
      if (typeof value !== 'function') return value;
      if (key === 'getConnection') return getConnection(value as Fn);
      if (typeof key === 'string' && STATEMENT_METHODS.has(key)) return poolStatement(key, value as Fn);
      return (value as Fn).bind(target);
    },
  }) as P & MysqlThrottled;
}

/** What {@link mysqlDeadlinePool} adds to the pool it wraps. */
export interface MysqlThrottled {
  /**
   * Where the pool's adaptive throttle stands (docs/throttling.md), or undefined when it is switched
   * off: the statements counted in its window (refused ones included), those answered, and the
   * probability a new statement or connection is refused with now.
   */
  throttling():
    | { readonly requests: number; readonly accepts: number; readonly probability: number }
    | undefined;
}

/** What {@link mysqlOptionsFrom} reads of a `prazo.config.yaml` entry (`loadConfig`'s `DependencyConfig`). */
export interface StoreEntry {
  readonly options: {
    readonly name?: string;
    readonly p99Ms?: number;
    /** The entry's `throttle:` (the executor's declaration): the store's throttle too. */
    readonly throttle?: MysqlPoolOptions['throttle'];
  };
  readonly store?: { readonly kind: string; readonly cancelGraceMs?: number };
}

/**
 * The options of `mysqlQuery`, `mysqlTransaction`, `mysqlDeadlinePool` and `knexWithDeadline` from
 * a `prazo.config.yaml` dependency with `store: { kind: mysql | mariadb }`: its name, its p99 (given
 * or measured from its histogram), its `throttle`, the store's grace and dialect.
 */
export function mysqlOptionsFrom(entry: StoreEntry): MysqlPoolOptions {
  const kind = entry.store?.kind;
  if (kind !== 'mysql' && kind !== 'mariadb') {
    throw new TypeError(
      `mysqlOptionsFrom: dependency ${JSON.stringify(entry.options.name)} is not a MySQL store ` +
        `(store.kind ${JSON.stringify(kind)}; expected mysql or mariadb)`,
    );
  }
  const grace = entry.store?.cancelGraceMs;
  return {
    ...(entry.options.name === undefined ? {} : { name: entry.options.name }),
    ...(entry.options.p99Ms === undefined ? {} : { p99Ms: entry.options.p99Ms }),
    ...(grace === undefined ? {} : { cancelGraceMs: grace }),
    ...(entry.options.throttle === undefined ? {} : { throttle: entry.options.throttle }),
    server: kind,
  };
}
