import type { Clock } from '../clock/clock.js';
import { MAX_TIMER_DELAY_MS } from '../clock/clock.js';
import { systemClock } from '../clock/system.js';
import type { Deadline } from '../deadline/deadline.js';
import type { DependencyEvent } from '../dependency/types.js';
import { defineOptions, type OptionsOf, option } from '../options/declare.js';
import { readOptions } from '../options/validator.js';
import type { MysqlServer, MysqlTarget } from './driver.js';
import { emitterOf, isStoreEvents, type StoreEvents } from './events.js';

const isTarget = (value: unknown): boolean =>
  value !== null &&
  typeof value === 'object' &&
  (typeof (value as { getConnection?: unknown }).getConnection === 'function' ||
    typeof (value as { query?: unknown }).query === 'function');

/** Options of `mysqlQuery` and `mysqlTransaction`, declared once. */
export const MYSQL_DEADLINE_OPTIONS = defineOptions({
  /** The deadline to honour. Default: the ambient one (`currentDeadline()`); none → no limit is set. */
  deadline: option.value<Deadline>('a Deadline', option.hasMethods('remainingMs', 'toHeaders')),
  /**
   * The statement's (or the whole transaction's) expected p99, in ms: with less time left nothing is
   * sent, no connection is taken, and the call fails with DeadlineInsufficientError (SPEC D4).
   * Default 0; [0, 2^31-1].
   */
  p99Ms: option.number({ default: 0, unit: 'ms', min: 0, max: MAX_TIMER_DELAY_MS }),
  /** The dependency's name in errors and events. Default 'mysql'. */
  name: option.string({ default: 'mysql' }),
  /**
   * The caller's own cancellation (e.g. `req.prazoSignal`): when it aborts, `KILL QUERY` stops the
   * running statement on the server and the call rejects with the signal's reason. Default none.
   */
  signal: option.signal(),
  /**
   * Grace past the deadline before the client sends `KILL QUERY` for a statement the server limits
   * itself, and again before it gives up waiting for any reply (the connection is then destroyed,
   * never returned to the pool). Default 100; [0, 60000].
   */
  cancelGraceMs: option.number({ default: 100, unit: 'ms', min: 0, max: 60_000 }),
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
  /** Where time comes from (for the timers). Default: the deadline's clock, else the system clock. */
  clock: option.clock(),
});

export type MysqlDeadlineOptions = OptionsOf<typeof MYSQL_DEADLINE_OPTIONS>;

export interface ResolvedMysqlOptions {
  readonly deadline: Deadline | undefined;
  readonly p99Ms: number;
  readonly name: string;
  readonly signal: AbortSignal | undefined;
  readonly cancelGraceMs: number;
  readonly server: MysqlServer | undefined;
  readonly killVia: MysqlTarget | undefined;
  readonly clock: Clock;
  /** Emits an event built only when someone listens; absent without `events`. */
  readonly emit: ((event: () => DependencyEvent) => void) | undefined;
}

/** Validates per call (these options are per call by nature); every problem reported together. */
export function resolveMysqlOptions(
  context: string,
  options: MysqlDeadlineOptions,
  ambient: Deadline | undefined,
): ResolvedMysqlOptions {
  const o = readOptions(context, MYSQL_DEADLINE_OPTIONS, options);
  const deadline = o.deadline ?? ambient;
  return {
    ...o,
    deadline,
    clock: o.clock ?? deadline?.clock ?? systemClock,
    emit: emitterOf(o.events),
  };
}
