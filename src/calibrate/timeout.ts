import { OptionsValidator } from '../options/validator.js';
import { CALIBRATION_DEFAULTS, CALIBRATION_LIMITS } from './constants.js';

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

/** Input of {@link calibrateTimeout}. */
export interface CalibrateTimeoutInput {
  /** Healthy p99 of the dependency, end to end, in ms, from a histogram (never a mean). [0, 86400000]. */
  readonly p99Ms: number;
  /**
   * How long the answer is still worth something to the caller, in ms: (0, 2^31-1]. Optional: a
   * dependency whose callers' deadline is not known yet (a new service, a library default) is
   * calibrated without a fit check — `attempts` is kept as asked, `warning` is null, `feasible` true.
   * Check again with the deadline once it is known; per call, the executor bounds each attempt by the
   * remaining deadline anyway (SPEC R6).
   */
  readonly userDeadlineMs?: number;
  /** Attempts wanted (the original + retries). Integer in [1, 10]. Default 2. */
  readonly attempts?: number;
  /** Multiplier over p99. [1.3, 1.5] (SPEC C1), or [1, 3] with `forceSlack`. Default 1.4. */
  readonly slack?: number;
  /** Accept a slack outside [1.3, 1.5] (still within [1, 3]). Default false. */
  readonly forceSlack?: boolean;
  /** Cap of the connect timeout, in ms: (0, 60000]. Default 400 (SPEC C2). */
  readonly connectCapMs?: number;
  /** Overhead reserved per attempt (network, serialization, backoff), in ms: [0, 60000]. Default 30. */
  readonly overheadMs?: number;
}

/** What {@link calibrateTimeout} recommends. */
export interface TimeoutCalibration {
  /** Connect timeout: `min(connectCapMs, responseMs)`, in ms. */
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

interface Resolved {
  readonly p99Ms: number;
  readonly userDeadlineMs: number | undefined;
  readonly attempts: number;
  readonly slack: number;
  readonly connectCapMs: number;
  readonly overheadMs: number;
}

function resolve(input: CalibrateTimeoutInput): Resolved {
  const v = new OptionsValidator('calibrateTimeout');
  const L = CALIBRATION_LIMITS;
  const D = CALIBRATION_DEFAULTS;
  const given = (input ?? {}) as Partial<CalibrateTimeoutInput>;
  if (given.p99Ms === undefined) v.problem('`p99Ms` is required (the healthy p99 in ms, from a histogram)');
  const p99Ms = v.number('p99Ms', given.p99Ms, { default: 0, min: 0, max: L.maxP99Ms });
  const userDeadlineMs = v.number('userDeadlineMs', given.userDeadlineMs, {
    default: undefined,
    min: 0,
    exclusiveMin: true,
    max: L.maxDeadlineMs,
  });
  const attempts = v.number('attempts', given.attempts, {
    default: D.attempts,
    min: 1,
    max: L.maxAttempts,
    integer: true,
  });
  const forceSlack = v.boolean('forceSlack', given.forceSlack, false);
  const slack = v.number('slack', given.slack, {
    default: D.slack,
    min: forceSlack ? L.minForcedSlack : L.minSlack,
    max: forceSlack ? L.maxForcedSlack : L.maxSlack,
  });
  const connectCapMs = v.number('connectCapMs', given.connectCapMs, {
    default: D.connectCapMs,
    min: 0,
    exclusiveMin: true,
    max: L.maxConnectCapMs,
  });
  const overheadMs = v.number('overheadMs', given.overheadMs, {
    default: D.overheadMs,
    min: 0,
    max: L.maxOverheadMs,
  });
  v.done();
  return { p99Ms, userDeadlineMs, attempts, slack, connectCapMs, overheadMs };
}

/**
 * `ceil(p99 × slack)`, forgiving binary floating point: 180 × 1.35 is 243.00000000000003 in IEEE 754,
 * and must give 243, not 244. Products within 1e-9 (relative) of an integer are that integer.
 */
export function slackedTimeoutMs(p99Ms: number, slack: number): number {
  const product = p99Ms * slack;
  const nearest = Math.round(product);
  const exact = Math.abs(product - nearest) <= 1e-9 * Math.max(1, product) ? nearest : Math.ceil(product);
  return Math.max(CALIBRATION_LIMITS.minTimeoutMs, exact);
}

/**
 * Derives the connect and response timeouts and the number of attempts that fit (SPEC C1–C3).
 * Throws `InvalidOptionsError` (`INVALID_OPTIONS`) listing every invalid input: negative or NaN
 * numbers, a slack outside [1.3, 1.5] without `forceSlack`, a non-integer attempt count...
 *
 * @example
 * calibrateTimeout({ p99Ms: 180, userDeadlineMs: 1500 });
 * // → { connectMs: 252, responseMs: 252, attempts: 2, warning: null, feasible: true }
 */
export function calibrateTimeout(input: CalibrateTimeoutInput): TimeoutCalibration {
  const r = resolve(input);
  const responseMs = slackedTimeoutMs(r.p99Ms, r.slack);
  const connectMs = Math.min(r.connectCapMs, responseMs);
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
