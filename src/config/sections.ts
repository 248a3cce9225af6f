import { type ResolvedHealthThresholds, resolveHealthThresholds } from '../calibrate/health.js';
import { createDeadlineReader, type IncomingDeadlineOptions } from '../deadline/headers.js';
import { compact } from './dependency-parts.js';
import type { Fields } from './fields.js';
import { fold } from './fold.js';
import type { Path } from './problem.js';

/**
 * `service: { name, defaultMs, maxMs, clockSkewMs }`: how this service treats incoming deadlines
 * (SPEC D2, D3, D8), validated by `createDeadlineReader` itself so the file and the runtime agree.
 */
export interface ServiceConfig extends IncomingDeadlineOptions {
  readonly name?: string;
}

export function readService(f: Fields, root: Record<string, unknown>): ServiceConfig | undefined {
  const s = f.record(root, 'service', []);
  if (s === undefined) return undefined;
  const at: Path = ['service'];
  f.unknownKeys(s, at, ['name', 'defaultMs', 'maxMs', 'clockSkewMs']);
  const options = compact({
    defaultMs: f.number(s, 'defaultMs', at, { unit: 'ms' }),
    maxMs: f.number(s, 'maxMs', at, { unit: 'ms' }),
    clockSkewMs: f.number(s, 'clockSkewMs', at, { unit: 'ms' }),
  });
  const name = f.string(s, 'name', at);
  if (fold(f.problems, at, () => createDeadlineReader(options)) === undefined) return undefined;
  return Object.freeze(name === undefined ? options : { ...options, name });
}

/**
 * `calibration: { maxErrorRate, maxTimeoutRate, maxP99Jump, minSamples }`: the healthy-window guard's
 * thresholds (SPEC C4) for histogram sources in this file.
 */
export function readCalibration(f: Fields, root: Record<string, unknown>): ResolvedHealthThresholds {
  const c = f.record(root, 'calibration', []) ?? {};
  const at: Path = ['calibration'];
  f.unknownKeys(c, at, ['maxErrorRate', 'maxTimeoutRate', 'maxP99Jump', 'minSamples']);
  const given = compact({
    maxErrorRate: f.number(c, 'maxErrorRate', at),
    maxTimeoutRate: f.number(c, 'maxTimeoutRate', at),
    maxP99Jump: f.number(c, 'maxP99Jump', at),
    minSamples: f.number(c, 'minSamples', at),
  });
  return (
    fold(f.problems, at, () => resolveHealthThresholds(given, 'calibration')) ?? resolveHealthThresholds()
  );
}
