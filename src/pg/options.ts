import type { Clock } from '../clock/clock.js';
import { systemClock } from '../clock/system.js';
import type { Deadline } from '../deadline/deadline.js';
import { OptionsValidator } from '../options/validator.js';
import { PG_DEFAULTS, PG_LIMITS } from './constants.js';

/** Options of `queryWithDeadline` and `transactionWithDeadline`. */
export interface PgDeadlineOptions {
  /** The deadline to honour. Default: the ambient one (`currentDeadline()`); none → no timeout is set. */
  readonly deadline?: Deadline;
  /**
   * The query's (or the whole transaction's) expected p99, in ms: with less time left it is not sent
   * and fails with DeadlineInsufficientError (SPEC D4). Default 0; range [0, 2^31-1].
   */
  readonly p99Ms?: number;
  /** The dependency's name in errors. Default 'postgres'. */
  readonly name?: string;
  /**
   * The caller's own cancellation (e.g. `req.prazoSignal`): when it aborts, a cancel request stops
   * the running statement on the server, and the call rejects with the signal's reason. Default none.
   */
  readonly signal?: AbortSignal;
  /**
   * Grace past the deadline before the client sends a cancel request itself, in ms; also the most a
   * transaction's `statement_timeout` may lag behind the time left before it is refreshed.
   * Default 100; range [0, 60000].
   */
  readonly cancelGraceMs?: number;
  /** Where time comes from (for the cancel timer). Default: the deadline's clock, else the system clock. */
  readonly clock?: Clock;
}

export interface ResolvedPgOptions {
  readonly deadline: Deadline | undefined;
  readonly p99Ms: number;
  readonly name: string;
  readonly signal: AbortSignal | undefined;
  readonly cancelGraceMs: number;
  readonly clock: Clock;
}

/** Validates per call (these options are per call by nature); every problem reported together. */
export function resolvePgOptions(
  context: string,
  options: PgDeadlineOptions,
  ambient: Deadline | undefined,
): ResolvedPgOptions {
  const v = new OptionsValidator(context);
  const p99Ms = v.number('p99Ms', options.p99Ms, {
    default: PG_DEFAULTS.p99Ms,
    min: 0,
    max: PG_LIMITS.maxMs,
  });
  const name = v.string('name', options.name, PG_DEFAULTS.name);
  const cancelGraceMs = v.number('cancelGraceMs', options.cancelGraceMs, {
    default: PG_DEFAULTS.cancelGraceMs,
    min: 0,
    max: PG_LIMITS.maxCancelGraceMs,
  });
  const signal = options.signal;
  if (signal !== undefined && !(signal instanceof AbortSignal)) v.problem('`signal` must be an AbortSignal');
  const given = options.deadline;
  if (given !== undefined && (given === null || typeof given.remainingMs !== 'function')) {
    v.problem('`deadline` must be a Deadline');
  }
  v.done();
  const deadline = given ?? ambient;
  return {
    deadline,
    p99Ms,
    name,
    signal,
    cancelGraceMs,
    clock: options.clock ?? deadline?.clock ?? systemClock,
  };
}
