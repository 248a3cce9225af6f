import { type Fields, isRecord } from './fields.js';
import type { Path } from './problem.js';
import { DEPENDENCY_RANGES, HEDGE_RANGES, RETRY_BUDGET_RANGES } from './ranges.js';
import type { HedgeSettings, RetryBudgetSettings } from './settings.js';

/** `retryBudget: { windowMs, maxRatio, minPerSecond }` (SPEC R1). Ranges are checked by the budget itself. */
export function readRetryBudget(
  f: Fields,
  o: Record<string, unknown>,
  at: Path,
): RetryBudgetSettings | undefined {
  const rb = f.record(o, 'retryBudget', at);
  if (rb === undefined) return undefined;
  const p = [...at, 'retryBudget'];
  f.unknownKeys(rb, p, ['windowMs', 'maxRatio', 'minPerSecond']);
  const R = RETRY_BUDGET_RANGES;
  return compact({
    windowMs: f.number(rb, 'windowMs', p, { min: R.minWindowMs, max: R.maxWindowMs, unit: 'ms' }),
    maxRatio: f.number(rb, 'maxRatio', p, { min: 0, max: R.maxRatio }),
    minPerSecond: f.number(rb, 'minPerSecond', p, { min: 0, max: R.maxPerSecond, unit: 'extra attempts/s' }),
  });
}

/**
 * `hedge: true | false | { enabled, percentile | maxExtraLoad, minDelayMs, maxDelayMs }` (SPEC H1–H3).
 * `enabled: false` keeps the settings in the file but turns hedging off.
 */
export function readHedge(
  f: Fields,
  o: Record<string, unknown>,
  at: Path,
): boolean | HedgeSettings | undefined {
  const h = o.hedge;
  if (h === undefined || typeof h === 'boolean') return h;
  const p = [...at, 'hedge'];
  if (!isRecord(h)) {
    f.error(p, 'must be true, false or a mapping { enabled, percentile, minDelayMs, maxDelayMs }');
    return undefined;
  }
  f.unknownKeys(h, p, ['enabled', 'percentile', 'maxExtraLoad', 'minDelayMs', 'maxDelayMs']);
  if (f.boolean(h, 'enabled', p) === false) return false;
  if (h.percentile !== undefined && h.maxExtraLoad !== undefined) {
    f.error([...p, 'maxExtraLoad'], 'give either `percentile` or `maxExtraLoad`, not both');
  }
  const H = HEDGE_RANGES;
  const settings = compact({
    percentile: f.number(h, 'percentile', p, { min: H.minPercentile, max: H.maxPercentile }),
    maxExtraLoad: f.number(h, 'maxExtraLoad', p, { min: 0, exclusiveMin: true, max: H.maxExtraLoad }),
    minDelayMs: f.number(h, 'minDelayMs', p, { min: 0, max: H.maxDelayMs, unit: 'ms' }),
    maxDelayMs: f.number(h, 'maxDelayMs', p, { min: 0, max: H.maxDelayMs, unit: 'ms' }),
  });
  const floor = settings.minDelayMs ?? H.defaultMinDelayMs;
  if (settings.maxDelayMs !== undefined && settings.maxDelayMs < floor) {
    f.error([...p, 'maxDelayMs'], `must not be below minDelayMs (${floor} ms)`);
  }
  return settings;
}

/** `pool: { size, rps }`: checked against the timeout with Little's law (SPEC C6). */
export function readPool(
  f: Fields,
  o: Record<string, unknown>,
  at: Path,
): { size: number; rps: number } | undefined {
  const pool = f.record(o, 'pool', at);
  if (pool === undefined) return undefined;
  const p = [...at, 'pool'];
  f.unknownKeys(pool, p, ['size', 'rps']);
  const size = f.number(pool, 'size', p, { min: 1, max: 1e6, integer: true, required: true });
  const rps = f.number(pool, 'rps', p, {
    min: 0,
    exclusiveMin: true,
    max: 1e7,
    required: true,
    unit: 'req/s',
  });
  return size === undefined || rps === undefined ? undefined : { size, rps };
}

/** `backoff: { baseMs, capMs }`: full-jitter backoff ceilings (SPEC R6). */
export function readBackoff(
  f: Fields,
  o: Record<string, unknown>,
  at: Path,
): { baseMs?: number; capMs?: number } | undefined {
  const b = f.record(o, 'backoff', at);
  if (b === undefined) return undefined;
  const p = [...at, 'backoff'];
  f.unknownKeys(b, p, ['baseMs', 'capMs']);
  const max = DEPENDENCY_RANGES.maxBackoffMs;
  return compact({
    baseMs: f.number(b, 'baseMs', p, { min: 0, max, unit: 'ms' }),
    capMs: f.number(b, 'capMs', p, { min: 0, max, unit: 'ms' }),
  });
}

/** Drops undefined members so library defaults apply (and objects print cleanly). */
export function compact<T extends object>(o: T): T {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as T;
}
