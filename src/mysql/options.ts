import { systemClock } from '../clock/system.js';
import type { Deadline } from '../deadline/deadline.js';
import {
  EXECUTOR_OWNED,
  type ResolvedStoreOptions,
  STORE_DEADLINE_SPECS,
  withDeadlineInForce,
} from '../deadline/store.js';
import type { Dependency } from '../dependency/dependency.js';
import { besideDependency, dependencyOption, executorOf } from '../dependency/transport.js';
import type { DependencyEvent } from '../dependency/types.js';
import { defineOptions, type OptionsOf, option } from '../options/declare.js';
import { readOptions } from '../options/validator.js';
import type { RandomSource } from '../retry/backoff.js';
import { THROTTLE_OPTIONS } from '../throttle/options.js';
import type { ThrottleToggle } from '../throttle/throttle.js';
import type { MysqlServer, MysqlTarget } from './driver.js';
import { emitterOf, isStoreEvents, type StoreEvents } from './events.js';

const isTarget = (value: unknown): boolean =>
  value !== null &&
  typeof value === 'object' &&
  (typeof (value as { getConnection?: unknown }).getConnection === 'function' ||
    typeof (value as { query?: unknown }).query === 'function');

/** Options of `mysqlQuery` and `mysqlTransaction`, declared once. */
export const MYSQL_DEADLINE_OPTIONS = defineOptions(
  {
    ...STORE_DEADLINE_SPECS,
    /** The dependency's name in errors and events. Default 'mysql'. */
    name: option.string({ default: 'mysql' }),
    /**
     * The server's dialect for the statement limit: `mariadb` (`SET STATEMENT max_statement_time`) or
     * `mysql` (the `MAX_EXECUTION_TIME` hint on SELECT, `KILL QUERY` for the rest). Default: read from
     * the connection's handshake.
     */
    server: option.oneOf<MysqlServer, object>(['mariadb', 'mysql']),
    /**
     * Where `KILL QUERY` is sent from: a pool or connection of its own (a pool that is full could not
     * lend one in time). Default: the target when it is a pool; a single connection has none, and a
     * statement outliving the deadline on it is left to its server-side limit and its socket closed.
     */
    killVia: option.value<MysqlTarget>('a mysql2 or mariadb pool or connection', isTarget),
    /**
     * Where the calls' events go (attempts, outcomes, fast failures), for `instrumentPrazo`:
     * `createStoreEvents(name)`. Default none.
     */
    events: option.value<StoreEvents>('events from createStoreEvents(name)', isStoreEvents),
    /**
     * Adaptive throttling (docs/throttling.md, the executor's own `AdaptiveThrottle` and options): once
     * most recent statements go unanswered (connect refused, a reset, the deadline's kill or statement
     * limit, too many connections, the server shutting down), a statement or a transaction is refused
     * at its start with probability max(0, (requests − k × accepts) / (requests + 1)), at most
     * `maxProbability`: THROTTLED at once, no connection taken, nothing sent, a `throttled` event. A
     * result or an error the server sent (a duplicate key, a syntax error) is an answer. One throttle
     * per guarded pool or Knex instance; `mysqlQuery` and `mysqlTransaction` share one per target, made
     * with the options of its first call. `false` switches it off. Default on (`true`): k 2, a 1 s
     * window, at most 90% refused, nothing refused under 10 requests in the window.
     */
    throttle: option.toggle(THROTTLE_OPTIONS),
    /** Uniform [0, 1) numbers for the throttle's spreading. Default `Math.random`; inject one for deterministic tests. */
    random: option.fn<RandomSource>(),
    /**
     * Runs each statement (a transaction: the whole of it) through this executor (made with
     * `createDependency`), as prazo/http and prazo/grpc do: one call of `execute`, one attempt, never
     * retried (`idempotent: false`). The executor owns the deadline (the given one, capped by the
     * ambient one, else its `defaultDeadlineMs`), D4 with its p99, its throttle, its concurrency limit
     * (a statement waits in its queue before it takes a pooled connection), its recorder, events and
     * traces. The store keeps its mechanics inside the attempt: the statement's server-side limit
     * (`max_statement_time`, `MAX_EXECUTION_TIME`) and the pool wait end at the attempt's end, min(the
     * deadline, start + ceil(p99 × slack)), and `KILL QUERY` stops the statement when the caller gives
     * up (or at that end, `cancelGraceMs` after it for a statement the server limits itself). The
     * server's own errors are judged by the store: a duplicate key or a syntax error is an answer (a
     * success for the recorder and the throttle), a reset or "too many connections" a failure.
     * Exclusive with `p99Ms`, `throttle`, `random` and `events` (the executor's own); `name` and
     * `clock`, if given, must be the executor's. Default: none (the store's own thin path).
     */
    dependency: dependencyOption<Dependency>(),
  },
  besideDependency(EXECUTOR_OWNED),
);

export type MysqlDeadlineOptions = OptionsOf<typeof MYSQL_DEADLINE_OPTIONS>;

export interface ResolvedMysqlOptions extends ResolvedStoreOptions {
  readonly server: MysqlServer | undefined;
  readonly killVia: MysqlTarget | undefined;
  /** Emits an event built only when someone listens; absent without `events`. */
  readonly emit: ((event: () => DependencyEvent) => void) | undefined;
  readonly throttle?: ThrottleToggle;
  readonly random?: RandomSource | undefined;
  readonly dependency?: Dependency | undefined;
}

/** Validates per call (these options are per call by nature); every problem reported together. */
export function resolveMysqlOptions(
  context: string,
  options: MysqlDeadlineOptions,
  ambient: Deadline | undefined,
): ResolvedMysqlOptions {
  const o = readOptions(context, MYSQL_DEADLINE_OPTIONS, options);
  const dependency = o.dependency;
  if (dependency === undefined)
    return { ...withDeadlineInForce(o, ambient, systemClock), emit: emitterOf(o.events) };
  // Through an executor: its name, clock and events; the deadline is resolved by `execute` (given one only).
  return { ...o, name: dependency.name, clock: executorOf(dependency)!.plan.clock, emit: undefined };
}
