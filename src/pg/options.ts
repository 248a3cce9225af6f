import { systemClock } from '../clock/system.js';
import type { Deadline } from '../deadline/deadline.js';
import { type ResolvedStoreOptions, STORE_DEADLINE_SPECS, withDeadlineInForce } from '../deadline/store.js';
import { defineOptions, type OptionsOf, option } from '../options/declare.js';
import { readOptions } from '../options/validator.js';
import type { RandomSource } from '../retry/backoff.js';
import { THROTTLE_OPTIONS } from '../throttle/options.js';
import type { ThrottleToggle } from '../throttle/throttle.js';
import { isStoreEvents, type PgEvents } from './events.js';

/** Options of `queryWithDeadline` and `transactionWithDeadline`, declared once (the store's, and a name). */
export const PG_DEADLINE_OPTIONS = defineOptions({
  ...STORE_DEADLINE_SPECS,
  /** The dependency's name in errors. Default 'postgres'. */
  name: option.string({ default: 'postgres' }),
  /**
   * Adaptive throttling (docs/throttling.md, the executor's own `AdaptiveThrottle` and options): once
   * most recent statements go unanswered (connect refused, a reset, the deadline's kill, too many
   * connections, the server shutting down), a statement or a transaction is refused at its start
   * with probability max(0, (requests − k × accepts) / (requests + 1)), at most `maxProbability`:
   * THROTTLED at once, no connection taken, nothing sent. A result or an error the server sent (a
   * constraint, a syntax error) is an answer. One throttle per pool wrapper; the per-call functions
   * share one per target, made with the options of its first call. `false` switches it off. Default
   * on (`true`): k 2, a 1 s window, at most 90% refused, nothing refused under 10 requests in it.
   */
  throttle: option.toggle(THROTTLE_OPTIONS),
  /**
   * Where the throttle's refusals go (`throttled` events), for `instrumentPrazo`:
   * `createPgEvents(name)`. Default none.
   */
  events: option.value<PgEvents>('events from createPgEvents(name)', isStoreEvents),
  /** Uniform [0, 1) numbers for the throttle's spreading. Default `Math.random`; inject one for deterministic tests. */
  random: option.fn<RandomSource>(),
});

export type PgDeadlineOptions = OptionsOf<typeof PG_DEADLINE_OPTIONS>;

export interface ResolvedPgOptions extends ResolvedStoreOptions {
  readonly throttle?: ThrottleToggle;
  readonly random?: RandomSource | undefined;
  readonly events?: PgEvents | undefined;
}

/** Validates per call (these options are per call by nature); every problem reported together. */
export function resolvePgOptions(
  context: string,
  options: PgDeadlineOptions,
  ambient: Deadline | undefined,
): ResolvedPgOptions {
  return withDeadlineInForce(readOptions(context, PG_DEADLINE_OPTIONS, options), ambient, systemClock);
}
