import { systemClock } from '../clock/system.js';
import type { Deadline } from '../deadline/deadline.js';
import { type ResolvedStoreOptions, STORE_DEADLINE_SPECS, withDeadlineInForce } from '../deadline/store.js';
import { defineOptions, type OptionsOf, option } from '../options/declare.js';
import { readOptions } from '../options/validator.js';

/** Options of `queryWithDeadline` and `transactionWithDeadline`, declared once (the store's, and a name). */
export const PG_DEADLINE_OPTIONS = defineOptions({
  ...STORE_DEADLINE_SPECS,
  /** The dependency's name in errors. Default 'postgres'. */
  name: option.string({ default: 'postgres' }),
});

export type PgDeadlineOptions = OptionsOf<typeof PG_DEADLINE_OPTIONS>;

export type ResolvedPgOptions = ResolvedStoreOptions;

/** Validates per call (these options are per call by nature); every problem reported together. */
export function resolvePgOptions(
  context: string,
  options: PgDeadlineOptions,
  ambient: Deadline | undefined,
): ResolvedPgOptions {
  return withDeadlineInForce(readOptions(context, PG_DEADLINE_OPTIONS, options), ambient, systemClock);
}
