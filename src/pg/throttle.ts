import type { Clock } from '../clock/clock.js';
import { isPrazoError } from '../errors/base.js';
import { ErrorCode } from '../errors/codes.js';
import { ThrottledError } from '../errors/throttle.js';
import type { RandomSource } from '../retry/backoff.js';
import type { ThrottleOptions } from '../throttle/options.js';
import { AdaptiveThrottle } from '../throttle/throttle.js';
import { QUERY_CANCELED } from './constants.js';
import { emitterOf, type PgEvents } from './events.js';

/**
 * Adaptive throttling of a PostgreSQL dependency (issue 23, docs/throttling.md): the executor's own
 * `AdaptiveThrottle`, admitted where a statement or a transaction would start and counted when its
 * outcome is known. A guarded pool (`pgDeadlinePool`, `pgDeadlineKnex`) has one of its own; the
 * per-call functions (`queryWithDeadline`, `transactionWithDeadline`) share one per target (the pool
 * or client they are given: one database is one dependency), made at the first call with that call's
 * `throttle` options.
 */

const BY_TARGET = new WeakMap<object, AdaptiveThrottle>();

/** What `throttle` reads as: `false` off, `true` / undefined the defaults, or the throttle's options. */
export type ThrottleToggle = boolean | ThrottleOptions | undefined;

/** A new throttle for a guard built once, or none when switched off. */
export function newThrottle(
  option: ThrottleToggle,
  clock: Clock,
  random: RandomSource | undefined,
): AdaptiveThrottle | undefined {
  if (option === false) return undefined;
  return new AdaptiveThrottle(option === true ? undefined : option, clock, random ?? Math.random);
}

/** The throttle the per-call functions share for `target`, made at its first call. */
export function throttleOf(
  target: object,
  option: ThrottleToggle,
  clock: Clock,
  random: RandomSource | undefined,
): AdaptiveThrottle | undefined {
  if (option === false) return undefined;
  let throttle = BY_TARGET.get(target);
  if (throttle === undefined) {
    throttle = newThrottle(option, clock, random)!;
    BY_TARGET.set(target, throttle);
  }
  return throttle;
}

/**
 * Admits a statement or a transaction at `clock.now()`, or fails it at once (nothing sent, no
 * connection taken) after a `throttled` event on `events`, the executor's own (prazo/otel counts it).
 */
export function admit(
  throttle: AdaptiveThrottle | undefined,
  name: string,
  clock: Clock,
  events?: PgEvents,
): void {
  if (throttle === undefined) return;
  const now = clock.now();
  if (throttle.admit(now)) return;
  const { requests, accepts, probability } = throttle.state(now);
  emitterOf(events)?.(() => ({ type: 'throttled', dependency: name, requests, accepts, probability }));
  throw new ThrottledError({ dependency: name, requests, accepts, probability, windowMs: throttle.windowMs });
}

/**
 * SQLSTATEs that are the server failing, not answering: connection exceptions (class 08), too many
 * connections and the rest of class 53 (insufficient resources), the server shutting down or
 * starting (57P01–57P03), and 57014 (our statement_timeout or cancel request: the server killed it).
 */
const FAILURE_STATE = /^(08|53|57P0[1-3]$|58)/;

/**
 * How the throttle counts an outcome: `true` the server answered (a result, or an error it sent with
 * its `severity`, a constraint violation or a syntax error: the executor's 4xx), `false` it did not
 * (connect refused, a reset, our timeout, the statement_timeout kill, too many connections), and
 * undefined for what says nothing of the server: refused before sending (D4, the throttle itself),
 * a pool wait that ran out locally, the caller's own abort.
 */
export function pgAccepted(error: unknown, aborted: boolean): boolean | undefined {
  if (aborted) return undefined;
  if (isPrazoError(error)) {
    if (error.code === ErrorCode.DEADLINE_INSUFFICIENT || error.code === ErrorCode.THROTTLED)
      return undefined;
    const dependency = (error as { dependency?: unknown }).dependency;
    if (typeof dependency === 'string' && dependency.endsWith(' (pool)')) return undefined;
    return false; // our deadline: DEADLINE_EXCEEDED, the server's kill as its cause
  }
  const e = error as { severity?: unknown; code?: unknown } | null;
  if (typeof e?.severity !== 'string') return false; // not the server's: the connection failed
  const code = typeof e.code === 'string' ? e.code : '';
  return code !== QUERY_CANCELED && !FAILURE_STATE.test(code);
}

/**
 * Counts `work`'s outcome on `throttle` when it is known, and passes it on. `success` false: only a
 * failure is counted (taking a connection is not a statement; failing to is the server not answering).
 */
export async function counted<T>(
  throttle: AdaptiveThrottle | undefined,
  clock: Clock,
  signal: AbortSignal | undefined,
  work: () => Promise<T>,
  success = true,
): Promise<T> {
  if (throttle === undefined) return work();
  try {
    const result = await work();
    if (success) throttle.count(clock.now(), true);
    return result;
  } catch (error) {
    const accepted = pgAccepted(error, signal?.aborted === true);
    if (accepted !== undefined) throttle.count(clock.now(), accepted);
    throw error;
  }
}
