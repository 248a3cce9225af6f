import type { Clock } from '../clock/clock.js';
import { MAX_TIMER_DELAY_MS } from '../clock/clock.js';
import { systemClock } from '../clock/system.js';
import type { Deadline } from '../deadline/deadline.js';
import { defineOptions, type OptionsOf, option } from '../options/declare.js';
import { readOptions } from '../options/validator.js';

/** Options of `queryWithDeadline` and `transactionWithDeadline`, declared once. */
export const PG_DEADLINE_OPTIONS = defineOptions({
  /** The deadline to honour. Default: the ambient one (`currentDeadline()`); none → no timeout is set. */
  deadline: option.value<Deadline>('a Deadline', option.hasMethods('remainingMs', 'toHeaders')),
  /**
   * The query's (or the whole transaction's) expected p99, in ms: with less time left it is not sent
   * and fails with DeadlineInsufficientError (SPEC D4). Default 0; [0, 2^31-1].
   */
  p99Ms: option.number({ default: 0, unit: 'ms', min: 0, max: MAX_TIMER_DELAY_MS }),
  /** The dependency's name in errors. Default 'postgres'. */
  name: option.string({ default: 'postgres' }),
  /**
   * The caller's own cancellation (e.g. `req.prazoSignal`): when it aborts, a cancel request stops
   * the running statement on the server, and the call rejects with the signal's reason. Default none.
   */
  signal: option.signal(),
  /**
   * Grace past the deadline before the client sends a cancel request itself, in ms; also the most a
   * transaction's `statement_timeout` may lag behind the time left before it is refreshed.
   * Default 100; [0, 60000].
   */
  cancelGraceMs: option.number({ default: 100, unit: 'ms', min: 0, max: 60_000 }),
  /** Where time comes from (for the cancel timer). Default: the deadline's clock, else the system clock. */
  clock: option.clock(),
});

export type PgDeadlineOptions = OptionsOf<typeof PG_DEADLINE_OPTIONS>;

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
  const o = readOptions(context, PG_DEADLINE_OPTIONS, options);
  const deadline = o.deadline ?? ambient;
  return { ...o, deadline, clock: o.clock ?? deadline?.clock ?? systemClock };
}
