import type { Clock } from '../clock/clock.js';
import { systemClock } from '../clock/system.js';
import { readOptions } from '../options/validator.js';
import { RATIO_SCALE, RETRY_BUDGET_OPTIONS, type RetryBudgetOptions } from './options.js';
import { BucketWindow } from './window.js';

export type { RetryBudgetOptions } from './options.js';

/**
 * The retry budget (SPEC R1, H3): retries as a resource shared by every request to one dependency,
 * not a right of each request. Three attempts per request look prudent one request at a time and
 * triple the load on a dependency the moment it starts failing; a budget lets almost every failure be
 * retried while failures are rare, and dries up within the first instants of an outage, turning
 * amplification into fast errors. Retries and hedges draw on the same budget, or hedges amplify the
 * incident through a path the retry panel does not show.
 *
 * Semantics of the seed's `resiliencia/orcamento-retry.js`; implementation after Finagle's and
 * tower's bucketed windows: the seed's array of timestamps costs O(rate) memory and O(n) `shift()`s.
 */

/** What the budget holds now. */
export interface RetryBudgetState {
  /** Original requests in the window. */
  readonly originals: number;
  /** Extra attempts (retries + hedges) spent in the window. */
  readonly extras: number;
  /** `extras / originals` (0 with no originals): the first-class metric of SPEC R7. */
  readonly ratio: number;
}

export interface RetryBudget {
  /**
   * Counts one original request (call it once per request, before its first attempt). O(1). `now`:
   * a reading of `clock` the caller just took (a hot path saves a clock read when it is the budget's
   * own clock; with another clock the budget reads its own).
   */
  recordOriginal(now?: number, clock?: Clock): void;
  /**
   * Authorises one extra attempt and spends it in the same call, so two requests cannot spend the
   * same balance. `false` is a valid, fast answer: do not retry. O(1). `now`, `clock`: as above.
   */
  tryConsume(now?: number, clock?: Clock): boolean;
  state(): RetryBudgetState;
}

const gcd = (a: number, b: number): number => (b === 0 ? a : gcd(b, a % b));

interface Resolved {
  readonly windowMs: number;
  readonly buckets: number;
  readonly ratioNum: number;
  readonly ratioDen: number;
  readonly floor: number;
  readonly clock: Clock;
}

function resolve(options: RetryBudgetOptions | undefined): Resolved {
  const { windowMs, maxRatio, minPerSecond, buckets, clock } = readOptions(
    'createRetryBudget',
    RETRY_BUDGET_OPTIONS,
    options,
  );
  const scaled = Math.round(maxRatio * RATIO_SCALE);
  const divisor = scaled === 0 ? RATIO_SCALE : gcd(scaled, RATIO_SCALE);
  // 3/s over 10 s is 30.000000000000004 in floats: forgive what is within 1e-9 of a whole count.
  const floor = Math.floor((minPerSecond * windowMs) / 1000 + 1e-9);
  return {
    windowMs,
    buckets,
    ratioNum: scaled / divisor,
    ratioDen: RATIO_SCALE / divisor,
    floor,
    clock: clock ?? systemClock,
  };
}

/**
 * Creates a retry budget. An extra attempt is allowed when, once spent, the window still holds
 * `extras ≤ max(floor, maxRatio × originals)`, checked on integers: the invariant holds after every
 * authorisation, not only before it. Throws `InvalidOptionsError` listing every bad option.
 *
 * @example
 * const budget = createRetryBudget(); // 10 s window, 10% extra load, 3 extras/s floor
 * budget.recordOriginal();
 * if (failed && budget.tryConsume()) retry();
 */
export function createRetryBudget(options: RetryBudgetOptions = {}): RetryBudget {
  const first = resolve(options);
  const { clock } = first;
  let { windowMs, buckets, ratioNum, ratioDen, floor } = first;
  let window = new BucketWindow(windowMs, buckets, clock.now());
  const budget: RetryBudget = {
    recordOriginal(now?: number, from?: Clock): void {
      window.advance(from === clock && now !== undefined ? now : clock.now());
      window.addOriginal();
    },
    tryConsume(now?: number, from?: Clock): boolean {
      window.advance(from === clock && now !== undefined ? now : clock.now());
      const after = window.extras() + 1;
      if (after > floor && after * ratioDen > window.originals() * ratioNum) return false;
      window.addExtra();
      return true;
    },
    state(): RetryBudgetState {
      window.advance(clock.now());
      const originals = window.originals();
      const extras = window.extras();
      return { originals, extras, ratio: originals > 0 ? extras / originals : 0 };
    },
  };
  reconfigurers.set(budget, (next) => {
    const r = resolve({ ...next, clock });
    if (r.windowMs !== windowMs || r.buckets !== buckets) {
      // A new window: the extras already spent stay counted, the originals start again, so a resize
      // can only tighten the budget, for at most one window (never a burst of retries).
      window.advance(clock.now());
      const spent = window.extras();
      window = new BucketWindow(r.windowMs, r.buckets, clock.now());
      window.addExtra(spent);
    }
    ({ windowMs, buckets, ratioNum, ratioDen, floor } = r);
  });
  return budget;
}

const reconfigurers = new WeakMap<RetryBudget, (options: RetryBudgetOptions) => void>();

/**
 * Gives a budget made by {@link createRetryBudget} new settings in place (`dependency.update`): the
 * same object, its counts kept (a changed window keeps the extras spent and restarts the originals),
 * its clock kept. The options must already be valid (they are read again here). False for a budget
 * this copy of prazo did not make.
 */
export function reconfigureRetryBudget(budget: RetryBudget, options: RetryBudgetOptions = {}): boolean {
  const reconfigure = reconfigurers.get(budget);
  if (reconfigure === undefined) return false;
  reconfigure(options);
  return true;
}

/** True for an object that already is a budget (to share one instance between dependencies). */
export function isRetryBudget(value: unknown): value is RetryBudget {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as RetryBudget).tryConsume === 'function' &&
    typeof (value as RetryBudget).recordOriginal === 'function' &&
    typeof (value as RetryBudget).state === 'function'
  );
}
