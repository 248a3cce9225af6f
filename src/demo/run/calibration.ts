import { CALIBRATE_TIMEOUT_OPTIONS } from '../../calibrate/options.js';
import { calibrateTimeout } from '../../calibrate/timeout.js';
import { PRAZO_STACK_DEFAULTS } from '../constants.js';
import { quantile } from '../stats.js';

/**
 * What a calibration of the demo's hops is, and how one hop's is derived from its healthy samples
 * (SPEC C1–C3). The measuring itself, a load on the healthy naive chain, is a phase of the run
 * (`calibrate` in demo.ts): this file imports nothing else of run/, so that the options and the
 * progress events that carry a calibration sit above it.
 */

/** The three hops a client calls: gateway → orders, orders → inventory, inventory → supplier. */
export type HopName = 'orders' | 'inventory' | 'supplier';
export const HOPS: readonly HopName[] = ['orders', 'inventory', 'supplier'];

export interface HopCalibration {
  /** Successful calls measured. */
  readonly samples: number;
  readonly p50Ms: number;
  readonly p95Ms: number;
  /** The quantile the supplier is hedged after (`PRAZO_STACK_DEFAULTS.hedgePercentile`, H1). */
  readonly hedgeMs: number;
  /**
   * The p99 prazo is configured with: the hop's healthy p99 as its caller measured it (SPEC C1), or,
   * for a hop above the hedged one, at least what its timeout needs to cover the rescue below
   * (`rescueMs`).
   */
  readonly p99Ms: number;
  /** The hop's healthy p99 as measured (equal to `p99Ms` unless the rescue below raised it). */
  readonly measuredP99Ms: number;
  /**
   * By when a call to this hop answers 99 times in 100 even when its first attempt stalls, in ms:
   * the supplier's hedge delay plus its p99 (a hedge sent at the delay answers within the p99), and
   * for a hop above, that plus the hop's own overhead. The hop above is timed to wait for it.
   */
  readonly rescueMs: number;
  /** What `calibrateTimeout` derives from it for the gateway's deadline (SPEC C1–C3). */
  readonly responseMs: number;
  readonly connectMs: number;
  readonly attempts: number;
  readonly warning: string | null;
  /** Whether one attempt at the calibrated timeout fits the gateway's deadline (C3). */
  readonly feasible: boolean;
}

export type Calibration = Readonly<Record<HopName, HopCalibration>>;

/**
 * The hops whose calibration cannot fit one attempt in the gateway's deadline, described. On a
 * healthy machine none: the hops' p99s are 250–530 ms. On the shared 2-core machine at a load
 * average of 9–15 the naive chain measured an orders p99 of ~2,000 ms (its queues, not the
 * dependency), and every prazo checkout then failed at once with DEADLINE_INSUFFICIENT: a run of 0%
 * that says nothing about prazo (issue 23's `recover`, seeds 1–3 of one session).
 */
export function infeasibleHops(calibration: Calibration): string[] {
  return HOPS.filter((hop) => !calibration[hop].feasible).map(
    (hop) => `${hop} p99 ${calibration[hop].measuredP99Ms} ms (timeout ${calibration[hop].responseMs} ms)`,
  );
}

const SLACK = CALIBRATE_TIMEOUT_OPTIONS.specs.slack.default;

/**
 * One hop's calibration. `below` is the hop it calls (none for the supplier, the leaf); of the run's
 * settings only the user's deadline is read.
 *
 * **A hop above a hedged one waits for the hedge.** Only the supplier is hedged (and retried: retry
 * at one layer, SPEC X6; the services above answer its failures with pushback and are not retried).
 * A supplier call whose first attempt stalls is rescued by the hedge sent after the hedge delay
 * (the p97.5), which answers within the supplier's p99 99 times in 100: the call answers by
 * `hedgeMs + p99Ms` (~420 ms), past the supplier's own attempt timeout (~290). Each hop above sends
 * its attempt timeout down as the deadline (SPEC D5), so with the C1 timeout of every hop from its
 * own healthy p99 (~290 ms each), inventory had ~290 ms for the whole call, the hedge ~80 ms — about
 * the supplier's median — and one rescue in three failed: the checkout failed with 1.6 s of the
 * user's 2 s still left. The same cut failed healthy checkouts whose supplier answer fell past ~290
 * ms (0.4% of them: 1 in 200 of a 10 s run). So a hop above is configured with at least the p99
 * whose C1 timeout covers the rescue below plus its own overhead (its p99 minus the one below's):
 * ~400–530 ms by the calibrations measured, about the gateway pool's Little's-law limit (500 ms,
 * SPEC C6). The price: a stalled *service* above the supplier (no scenario stalls one) would hold its
 * caller that long, not ~300 ms; a failing supplier does not (its own attempt timeout answers first).
 */
export function hopCalibration(
  samples: readonly number[],
  settings: { readonly userDeadlineMs: number },
  below: HopCalibration | undefined,
): HopCalibration {
  if (samples.length < 20) {
    throw new Error(
      `calibration measured only ${samples.length} healthy calls on a hop; the machine may be overloaded`,
    );
  }
  const measuredP99Ms = Math.ceil(quantile(samples, 0.99)!);
  const hedgeMs = Math.ceil(quantile(samples, PRAZO_STACK_DEFAULTS.hedgePercentile)!);
  // What the hop's own answers add to the one below's (its handler, its network hop).
  const overheadMs = below === undefined ? 0 : Math.max(0, measuredP99Ms - below.measuredP99Ms);
  const rescueMs = below === undefined ? hedgeMs + measuredP99Ms : below.rescueMs + overheadMs;
  const p99Ms = below === undefined ? measuredP99Ms : Math.max(measuredP99Ms, Math.ceil(rescueMs / SLACK));
  const timeouts = calibrateTimeout({
    p99Ms,
    userDeadlineMs: Math.min(PRAZO_STACK_DEFAULTS.gatewayDeadlineMs, settings.userDeadlineMs),
    attempts: PRAZO_STACK_DEFAULTS.attempts,
  });
  return {
    samples: samples.length,
    p50Ms: Math.round(quantile(samples, 0.5)!),
    p95Ms: Math.ceil(quantile(samples, 0.95)!),
    hedgeMs,
    p99Ms,
    measuredP99Ms,
    rescueMs,
    responseMs: timeouts.responseMs,
    connectMs: timeouts.connectMs,
    attempts: timeouts.attempts,
    warning: timeouts.warning,
    feasible: timeouts.feasible,
  };
}
