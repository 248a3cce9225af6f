import type { RetryBudgetOptions } from '../budget/budget.js';
import type { HedgeOptions } from '../hedge/policy.js';
import { type Fields, isRecord } from './fields.js';
import type { Path } from './problem.js';

/** `retryBudget: { windowMs, maxRatio, minPerSecond }` (SPEC R1). Ranges are checked by the budget itself. */
export function readRetryBudget(
  f: Fields,
  o: Record<string, unknown>,
  at: Path,
): RetryBudgetOptions | undefined {
  const rb = f.record(o, 'retryBudget', at);
  if (rb === undefined) return undefined;
  const p = [...at, 'retryBudget'];
  f.unknownKeys(rb, p, ['windowMs', 'maxRatio', 'minPerSecond']);
  return {
    windowMs: f.number(rb, 'windowMs', p, { unit: 'ms' }),
    maxRatio: f.number(rb, 'maxRatio', p),
    minPerSecond: f.number(rb, 'minPerSecond', p),
  };
}

/**
 * `hedge: true | false | { enabled, percentile | maxExtraLoad, minDelayMs, maxDelayMs }` (SPEC H1–H3).
 * `enabled: false` keeps the settings in the file but turns hedging off.
 */
export function readHedge(
  f: Fields,
  o: Record<string, unknown>,
  at: Path,
): boolean | HedgeOptions | undefined {
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
  return {
    percentile: f.number(h, 'percentile', p),
    maxExtraLoad: f.number(h, 'maxExtraLoad', p),
    minDelayMs: f.number(h, 'minDelayMs', p, { unit: 'ms' }),
    maxDelayMs: f.number(h, 'maxDelayMs', p, { unit: 'ms' }),
  };
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

/** Drops undefined members so library defaults apply (and objects print cleanly). */
export function compact<T extends object>(o: T): T {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as T;
}
