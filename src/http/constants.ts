import { MAX_TIMER_DELAY_MS } from '../clock/clock.js';
import { DEPENDENCY_OPTIONS } from '../dependency/options.js';

/**
 * Defaults and bounds of `prazo/http`, in one place (each option's TSDoc points here). The defaults
 * prazo/http shares with the executor are read from the executor's declaration (`DEPENDENCY_OPTIONS`),
 * never written twice.
 */

/** Defaults of {@link createHttpClient}'s options. */
export const HTTP_DEFAULTS = Object.freeze({
  /**
   * Cap of the connect timeout in ms (SPEC C2), the executor's `connectCapMs`: establishing TCP/TLS
   * on the same network takes a few ms; 400 ms without a connection means the instance is down and
   * the call must fail fast. The default is also at most half the attempt timeout (see `validate.ts`).
   */
  connectTimeoutMs: DEPENDENCY_OPTIONS.defaults.connectCapMs,
  /**
   * Deadline given to a call that has none (no per-call and no ambient deadline), in ms (SPEC D3): the
   * executor's `defaultDeadlineMs`, 2000.
   */
  defaultDeadlineMs: DEPENDENCY_OPTIONS.defaults.defaultDeadlineMs,
  /** Happy-eyeballs: try the origin's other addresses when one does not connect (SPEC R4). */
  autoSelectFamily: true,
  /** Per-address connect attempt when the origin has several addresses, at most this, in ms. */
  addressAttemptMs: 250,
  /** Live calibration: relative move of the healthy p99 that makes the client plan with it. */
  liveChangeRatio: 0.1,
});

/** Bounds of the options above. Node timers cannot represent more than 2^31 - 1 ms. */
export const HTTP_LIMITS = Object.freeze({
  /** Largest timeout or deadline accepted, in ms (about 24.8 days). */
  maxMs: MAX_TIMER_DELAY_MS,
  /** Largest connect timeout accepted, in ms: a connect that needs more is not a connect timeout. */
  maxConnectTimeoutMs: 60_000,
  /** Node's floor for a per-address attempt (`autoSelectFamilyAttemptTimeout`), in ms. */
  minAddressAttemptMs: 10,
  /** Largest pool size accepted. */
  maxConnections: 65_536,
  /**
   * Origins an interceptor remembers beyond its configured ones (met at run time: resolved by a
   * `dependencies` function, or passing through); past it, the oldest met are forgotten first.
   */
  maxOrigins: 1_024,
});

/**
 * A timer may fire a fraction of a millisecond before the instant it was armed for (Node measures
 * timers on its loop clock, in whole ms). Within this many ms a bound counts as reached; a timer
 * firing earlier than that just re-arms for the rest. Below 1 ms, so two bounds 1 ms apart are
 * never confused.
 */
export const TIMER_TOLERANCE_MS = 0.5;
