import { readOptions } from '../options/validator.js';
import { CALIBRATE_TIMEOUT_OPTIONS, type CalibrateTimeoutInput } from './options.js';

export type { CalibrateTimeoutInput } from './options.js';

/**
 * Per-attempt timeouts derived from measurement (SPEC C1–C3), after the seed's `http/calibragem.js`.
 *
 * The response timeout is `ceil(p99 × slack)`: p99 marks where waiting stops being normal behaviour,
 * the slack (1.3–1.5) absorbs the load difference between the day of measurement and the day of the
 * incident. The connect timeout is separate and capped (a connect failure is binary: the instance
 * answers or it does not). The caller's deadline bounds the *number of attempts*, never the timeout:
 * shrinking the timeout until the attempts fit turns a sane configuration into an error machine (the
 * timeout starts cutting healthy traffic, the client sees failures, retries fire, load grows). So when
 * the attempts do not fit, we keep the timeout, reduce attempts and say so, naming both numbers.
 *
 * Beyond the seed: the seed's fit test (`floor((D − O·M)/M) < T`) and its fallback
 * (`floor(D / (T + O))`) agree, but it clamped a zero result to 1 attempt silently. Here zero means the
 * deadline is *infeasible* for this dependency, reported as such (`feasible: false`, still 1 attempt,
 * because refusing to try at all is the caller's decision, e.g. with `DeadlineInsufficientError`).
 */

/** What {@link calibrateTimeout} recommends. */
export interface TimeoutCalibration {
  /**
   * Connect timeout: `min(connectCapMs, ceil(responseMs / 2))`, in ms. Half the attempt at most, so
   * that a dead instance fails its connect strictly before the attempt's own limit: it is reported as
   * a connect failure (retried at once, SPEC R4) and leaves the attempt time for an answer.
   */
  readonly connectMs: number;
  /** Per-attempt response timeout: `max(1, ceil(p99 × slack))`, in ms. Never shrunk to fit a deadline. */
  readonly responseMs: number;
  /** Attempts that fit the deadline (at most the ones asked, at least 1). */
  readonly attempts: number;
  /**
   * Null when everything fits. Otherwise names both numbers:
   * `deadline of 600 ms fits 2 attempt(s), not 3`, or, when not even one fits,
   * `deadline of 200 ms fits 0 attempt(s), not 2: infeasible for this dependency, ...`.
   */
  readonly warning: string | null;
  /** False when not even one attempt (`responseMs + overheadMs`) fits the deadline. */
  readonly feasible: boolean;
}

/** A timeout is never below this: 0 means "no timeout" to undici and most clients. */
const MIN_TIMEOUT_MS = 1;

/**
 * `ceil(p99 × slack)`, forgiving binary floating point: 180 × 1.35 is 243.00000000000003 in IEEE 754,
 * and must give 243, not 244. Products within 1e-9 (relative) of an integer are that integer.
 */
export function slackedTimeoutMs(p99Ms: number, slack: number): number {
  const product = p99Ms * slack;
  const nearest = Math.round(product);
  const exact = Math.abs(product - nearest) <= 1e-9 * Math.max(1, product) ? nearest : Math.ceil(product);
  return Math.max(MIN_TIMEOUT_MS, exact);
}

/**
 * Derives the connect and response timeouts and the number of attempts that fit (SPEC C1–C3).
 * Throws `InvalidOptionsError` (`INVALID_OPTIONS`) listing every invalid input: negative or NaN
 * numbers, a slack outside [1.3, 1.5] without `forceSlack`, a non-integer attempt count...
 *
 * @example
 * calibrateTimeout({ p99Ms: 180, userDeadlineMs: 1500 });
 * // → { connectMs: 126, responseMs: 252, attempts: 2, warning: null, feasible: true }
 */
export function calibrateTimeout(input: CalibrateTimeoutInput): TimeoutCalibration {
  const r = readOptions('calibrateTimeout', CALIBRATE_TIMEOUT_OPTIONS, input);
  const responseMs = slackedTimeoutMs(r.p99Ms, r.slack);
  const connectMs = Math.min(r.connectCapMs, Math.ceil(responseMs / 2));
  const ok = (attempts: number): TimeoutCalibration =>
    Object.freeze({ connectMs, responseMs, attempts, warning: null, feasible: true });

  const deadline = r.userDeadlineMs;
  if (deadline === undefined) return ok(r.attempts);
  const perAttemptMs = responseMs + r.overheadMs;
  if (r.attempts * perAttemptMs <= deadline) return ok(r.attempts);

  const fits = Math.min(r.attempts, Math.floor(deadline / perAttemptMs));
  const head = `deadline of ${deadline} ms fits ${fits} attempt(s), not ${r.attempts}`;
  if (fits >= 1)
    return Object.freeze({ connectMs, responseMs, attempts: fits, warning: head, feasible: true });
  const warning =
    `${head}: infeasible for this dependency, one attempt needs ${perAttemptMs} ms ` +
    `(${responseMs} ms timeout + ${r.overheadMs} ms overhead)`;
  return Object.freeze({ connectMs, responseMs, attempts: 1, warning, feasible: false });
}
