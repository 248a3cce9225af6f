import { describe, expect, it } from 'vitest';
import { DEMO_DEFAULTS, PRAZO_STACK_DEFAULTS as P } from '../constants.js';
import { hopCapacity, serviceCeilingMs } from './topology.js';

/**
 * Issue 23, traced in the demo's `hung` and `overload-hung` (supplier never answers): the prazo
 * stack's configuration must let a hung supplier be failed fast after its first patient wave, and
 * must not tear the gateway's pool down when that wave ends.
 */
describe('the prazo stack under a hung supplier', () => {
  it('each inner hop ends its requests before its caller does, so the caller gets an answer, not an abort', () => {
    // Before: every hop had the gateway's 1,900 ms, and the gateway's patient attempts ended by
    // aborting their requests at the instant orders would answer (13 connections destroyed at once).
    const gateway = serviceCeilingMs('gateway');
    const orders = serviceCeilingMs('orders');
    const inventory = serviceCeilingMs('inventory');
    expect(gateway).toBe(P.gatewayDeadlineMs);
    // The margin covers an answer's way back through a loaded loop (a few ms, tens under stalls).
    expect(gateway - orders).toBeGreaterThanOrEqual(40);
    expect(orders - inventory).toBeGreaterThanOrEqual(40);
    // A slow supplier's answers (~1.5 s, +10% jitter) still fit under the innermost ceiling.
    expect(inventory).toBeGreaterThan(1_650 + 100);
  });

  it("the throttle's window can be filled by the patient failures alone", () => {
    // Patient attempts against a hung supplier fail at most `maxInFlight` per deadline; the calls
    // refused CONCURRENCY_LIMITED meanwhile are not attempts. Before: minRequests 10 (the library's
    // default) against 13 / 1.9 s ≈ 6.8 a second, and a second patient wave while the throttle
    // counted the first one (traced: 6 more checkouts waiting 1.9 s at 20/s).
    const { maxInFlight } = hopCapacity('orders', DEMO_DEFAULTS.poolConnections); // the patient calls
    const failuresPerWindow = (maxInFlight * 1_000) / serviceCeilingMs('inventory');
    expect(P.throttleMinRequests).toBeLessThanOrEqual(Math.floor(failuresPerWindow));
    // ...and is still more than noise: k = 2 refuses nothing while half the attempts are answered.
    expect(P.throttleMinRequests).toBeGreaterThanOrEqual(3);
  });
});

describe('hopCapacity', () => {
  it('the hops below the gateway never refuse what it let through, hedges included', () => {
    // Before: 13 at every hop; the inventory's limit counts the supplier's hedges as attempts, so
    // 10 checkouts and their 3 hedges filled it and later checkouts were refused two hops down.
    const pool = DEMO_DEFAULTS.poolConnections;
    const gateway = hopCapacity('orders', pool).maxInFlight;
    expect(gateway).toBe(pool - P.poolReserve);
    expect(hopCapacity('inventory', pool).maxInFlight).toBe(gateway);
    const hedgesPaid =
      Math.ceil(gateway * P.budgetRatio) + Math.ceil((P.budgetMinPerSecond * P.budgetWindowMs) / 1_000);
    expect(hopCapacity('supplier', pool).maxInFlight).toBeGreaterThanOrEqual(gateway + hedgesPaid);
    // Only the gateway lets a few wait (a healthy burst); below it a queue is never needed: no more
    // than the gateway's limit is ever in flight there.
    expect(hopCapacity('orders', pool).maxQueue).toBe(P.gatewayQueue);
    expect(P.gatewayQueue).toBeGreaterThan(0);
    for (const next of ['inventory', 'supplier'] as const) {
      expect(hopCapacity(next, pool).maxQueue).toBe(0);
    }
  });
});
