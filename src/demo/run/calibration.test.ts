import { describe, expect, it } from 'vitest';
import { PRAZO_STACK_DEFAULTS } from '../constants.js';
import { quantile } from '../stats.js';
import { hopCalibration, infeasibleHops } from './calibration.js';
import { resolveDemoOptions } from './options.js';

const settings = resolveDemoOptions({});
/** 1, 2, …, 400 ms: a spread whose quantiles are known. */
const spread = (offsetMs: number): number[] => Array.from({ length: 400 }, (_, i) => i + 1 + offsetMs);

describe('the demo calibration: a hop above the hedged supplier waits for its hedge (issue 15)', () => {
  const supplier = hopCalibration(spread(0), settings, undefined);
  const inventory = hopCalibration(spread(2), settings, supplier);
  const orders = hopCalibration(spread(5), settings, inventory);

  it('the supplier, the leaf, is configured with its measured p99 and C1 timeout', () => {
    expect(supplier.measuredP99Ms).toBe(Math.ceil(quantile(spread(0), 0.99)!));
    expect(supplier.p99Ms).toBe(supplier.measuredP99Ms);
    expect(supplier.responseMs).toBe(Math.ceil(supplier.p99Ms * 1.4));
    expect(supplier.hedgeMs).toBe(Math.ceil(quantile(spread(0), PRAZO_STACK_DEFAULTS.hedgePercentile)!));
    expect(supplier.rescueMs).toBe(supplier.hedgeMs + supplier.measuredP99Ms);
  });

  it('a stalled supplier attempt rescued by its hedge (sent at the delay, answering at the p99) fits the deadline inventory gets', () => {
    // Inventory's deadline for the whole supplier call is orders' attempt timeout (SPEC D5); the
    // C1 timeout from inventory's own p99 alone would cut the hedge.
    expect(Math.ceil(inventory.measuredP99Ms * 1.4)).toBeLessThan(supplier.rescueMs);
    expect(inventory.responseMs).toBeGreaterThanOrEqual(supplier.rescueMs + 2);
    expect(orders.responseMs).toBeGreaterThanOrEqual(supplier.rescueMs + 5);
    expect(orders.responseMs).toBeGreaterThanOrEqual(inventory.responseMs);
    expect(inventory.measuredP99Ms).toBe(Math.ceil(quantile(spread(2), 0.99)!));
    // Not raised further than the rescue needs (one ms of ceil at most per hop).
    expect(inventory.responseMs).toBeLessThanOrEqual(supplier.rescueMs + 2 + 2);
    // The attempts C3 fits in the gateway's deadline are unchanged (2 × (~560 + 30) ≤ 1,900).
    expect([supplier.attempts, inventory.attempts, orders.attempts]).toEqual([2, 2, 2]);
  });

  it('a hop slower than the rescue keeps its own measured p99: the rule only ever raises', () => {
    const slowHandler = hopCalibration(spread(900), settings, supplier);
    expect(slowHandler.p99Ms).toBe(slowHandler.measuredP99Ms);
    expect(slowHandler.responseMs).toBe(Math.ceil(slowHandler.measuredP99Ms * 1.4));
    // Its own overhead over the supplier (900 ms) is what a rescue through it takes on top.
    expect(slowHandler.rescueMs).toBe(
      supplier.rescueMs + (slowHandler.measuredP99Ms - supplier.measuredP99Ms),
    );
  });

  it('names the hops that cannot fit one attempt in the deadline: a loaded machine, not a calibration', () => {
    expect(infeasibleHops({ orders, inventory, supplier })).toEqual([]);
    // Measured at a load average of 9–15: the naive chain's orders p99 ~2,000 ms, inventory's ~1,070.
    const queued = hopCalibration(spread(1_600), settings, inventory);
    expect(queued.feasible).toBe(false);
    expect(infeasibleHops({ orders: queued, inventory, supplier })).toEqual([
      `orders p99 ${queued.measuredP99Ms} ms (timeout ${queued.responseMs} ms)`,
    ]);
  });

  it('refuses a hop measured on too few calls', () => {
    expect(() => hopCalibration([1, 2, 3], settings, undefined)).toThrow(/only 3 healthy calls/);
  });
});
