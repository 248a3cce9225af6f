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
import { defineOptions, type OptionsOf, option } from '../options/declare.js';
import { readOptions } from '../options/validator.js';
import type { RandomSource } from '../retry/backoff.js';
import { THROTTLE_OPTIONS } from '../throttle/options.js';
import type { ThrottleToggle } from '../throttle/throttle.js';
import { isStoreEvents, type PgEvents } from './events.js';

/** Options of `queryWithDeadline` and `transactionWithDeadline`, declared once (the store's, and a name). */
export const PG_DEADLINE_OPTIONS = defineOptions(
  {
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
    /**
     * Runs each statement (a transaction: the whole of it) through this executor (made with
     * `createDependency`), as prazo/http and prazo/grpc do: one call of `execute`, one attempt, never
     * retried (`idempotent: false`). The executor owns the deadline (the given one, capped by the
     * ambient one, else its `defaultDeadlineMs`), D4 with its p99, its throttle, its concurrency limit
     * (a statement waits in its queue before it takes a pooled connection), its recorder, events and
     * traces. The store keeps its mechanics inside the attempt: the `statement_timeout` it sets and
     * the pool wait end at the attempt's end, min(the deadline, start + ceil(p99 × slack)), and a
     * cancel request stops the statement when the caller gives up (`cancelGraceMs` past that end when
     * the server's limit did not). The server's own errors are judged by the store: a constraint or a
     * syntax error is an answer (a success for the recorder and the throttle), a reset or "too many
     * connections" a failure. Exclusive with `p99Ms`, `throttle`, `random` and `events` (the
     * executor's own); `name` and `clock`, if given, must be the executor's. Default: none (the
     * store's own thin path).
     */
    dependency: dependencyOption<Dependency>(),
  },
  besideDependency(EXECUTOR_OWNED),
);

export type PgDeadlineOptions = OptionsOf<typeof PG_DEADLINE_OPTIONS>;

export interface ResolvedPgOptions extends ResolvedStoreOptions {
  readonly throttle?: ThrottleToggle;
  readonly random?: RandomSource | undefined;
  readonly events?: PgEvents | undefined;
  readonly dependency?: Dependency | undefined;
  /** Hears of each cancel request sent (a connection sent one is not handed back to the pool). */
  readonly onCancel?: (() => void) | undefined;
}

/** Validates per call (these options are per call by nature); every problem reported together. */
export function resolvePgOptions(
  context: string,
  options: PgDeadlineOptions,
  ambient: Deadline | undefined,
): ResolvedPgOptions {
  const read = readOptions(context, PG_DEADLINE_OPTIONS, options);
  const dependency = read.dependency;
  if (dependency === undefined) return withDeadlineInForce(read, ambient, systemClock);
  // Through an executor: its name and clock; the deadline is resolved by `execute` (given one only).
  return { ...read, name: dependency.name, clock: executorOf(dependency)!.plan.clock };
}
