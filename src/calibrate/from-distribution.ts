import { InvalidOptionsError } from '../errors/options.js';
import { isOptionsObject } from '../options/declare.js';
import { readOptions } from '../options/validator.js';
import { assessWindow, type WindowVerdict } from './health.js';
import {
  CALIBRATE_FROM_DISTRIBUTION_OPTIONS,
  CALIBRATE_TIMEOUT_OPTIONS,
  type CalibrateFromDistributionOptions,
  measuredP99,
} from './options.js';
import type { LatencyDistribution } from './sources/types.js';
import { calibrateTimeout, type TimeoutCalibration } from './timeout.js';

export type { CalibrateFromDistributionOptions } from './options.js';

/**
 * Calibration from a measured distribution, behind the healthy-window guard (SPEC C1, C4): the p99
 * of a degraded window, or one the histogram cannot bound, is refused rather than turned into a
 * timeout that protects nothing. A window too small to judge is calibrated but flagged.
 */
export interface DistributionCalibration {
  readonly verdict: WindowVerdict;
  /** Set when refused: why, one line per reason. */
  readonly refused: readonly string[] | null;
  /** Undefined when refused. */
  readonly calibration: TimeoutCalibration | undefined;
  /** Everything worth a human's attention (calibration warning, small window). */
  readonly warnings: readonly string[];
}

/**
 * The largest p99 a timeout is calibrated on (a day): a source can measure more (a file's bounds go
 * to 10^12 ms), and such a p99 is refused in words, not thrown at the caller as an invalid `p99Ms`
 * option they never gave.
 */
const MAX_P99_MS = CALIBRATE_TIMEOUT_OPTIONS.specs.p99Ms.max!;

export function calibrateFromDistribution(
  distribution: LatencyDistribution,
  options: CalibrateFromDistributionOptions = {},
): DistributionCalibration {
  const { baselineP99Ms, maxErrorRate, maxTimeoutRate, maxP99Jump, minSamples, ...timeout } = readOptions(
    'calibrateFromDistribution',
    CALIBRATE_FROM_DISTRIBUTION_OPTIONS,
    options,
  );
  if (!isOptionsObject(distribution)) {
    const got =
      distribution === null ? 'null' : Array.isArray(distribution) ? 'an array' : typeof distribution;
    throw new InvalidOptionsError('calibrateFromDistribution', [
      `\`distribution\` must be a latency distribution (readLatencySource, parsePrometheus...), got ${got}`,
    ]);
  }
  const thresholds = { maxErrorRate, maxTimeoutRate, maxP99Jump, minSamples };
  const verdict = assessWindow(distribution, baselineP99Ms, thresholds);
  const p99 = measuredP99(distribution.p99);
  const refusals: string[] = [];
  if (!distribution.p99Bounded) {
    refusals.push('the p99 lies beyond the largest finite bucket: the histogram cannot measure it');
  }
  if (verdict.health === 'degraded') refusals.push(...verdict.reasons);
  if (p99 !== undefined && p99 > MAX_P99_MS) {
    refusals.push(`p99 ${p99} ms is above ${MAX_P99_MS} ms (a day): no timeout is calibrated on it`);
  }
  if (refusals.length > 0 || p99 === undefined) {
    if (p99 === undefined && refusals.length === 0) refusals.push('no successful call: no p99');
    return Object.freeze({ verdict, refused: Object.freeze(refusals), calibration: undefined, warnings: [] });
  }
  const calibration = calibrateTimeout({ ...timeout, p99Ms: p99 });
  const warnings: string[] = [];
  if (verdict.health === 'insufficient')
    warnings.push(...verdict.reasons.map((r) => `${r}: p99 is unreliable`));
  if (calibration.warning !== null) warnings.push(calibration.warning);
  return Object.freeze({ verdict, refused: null, calibration, warnings: Object.freeze(warnings) });
}
