import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { FakeClock } from '../clock/fake.js';
import { createDependency } from './dependency.js';
import { coded, drive, fakeCall, mulberry32 } from './dependency.test-helpers.js';
import type { DependencyEvent } from './types.js';

/**
 * Load on the dependency, on the fake clock (SPEC R1, R5, V4): what the seed promises of a retry
 * budget — almost every failure retried while failures are rare, and no amplification in an outage.
 */

function counted(clock: FakeClock, fails: (attempt: number) => boolean, ms = 5) {
  let calls = 0;
  const operation = (ctx: Parameters<typeof fakeCall>[1]) => {
    calls += 1;
    const fail = fails(calls);
    return fakeCall(clock, ctx, ms, () => {
      if (fail) throw coded('ECONNREFUSED');
      return 'ok';
    });
  };
  return { operation, calls: () => calls };
}

describe('an outage where every attempt fails (100 req/s for 60 s)', () => {
  it('naive 3 attempts: 3× the load; with the budget: at most 1.1×; with the throttle too: ~0.1×', async () => {
    const run = async (maxRatio: number, throttle = false) => {
      const clock = new FakeClock();
      const dep = createDependency({
        name: 'supplier',
        p99Ms: 50,
        attempts: 3,
        clock,
        random: mulberry32(1),
        retryBudget: { maxRatio, minPerSecond: 3 },
        throttle, // the budget alone first (the throttle would refuse most of these calls)
      });
      const { operation, calls } = counted(clock, () => true);
      const result = await drive(clock, 100, 60, () => dep.execute(operation, { idempotent: true }));
      return { load: calls() / result.calls.length, failed: result.calls.filter((c) => !c.ok).length };
    };
    const naive = await run(10); // a budget of 10 extras per request never says no: plain 3 attempts
    const budgeted = await run(0.1);
    expect(naive.load).toBe(3);
    expect(budgeted.load).toBeLessThanOrEqual(1.1);
    expect(budgeted.load).toBeGreaterThan(1.05); // the budget is spent, not hoarded
    expect(budgeted.failed).toBe(6_000);
    // Issue 23: the throttle refuses 90% of the calls locally; the probe share and its retries remain.
    const throttled = await run(0.1, true);
    expect(throttled.load).toBeLessThan(0.2);
    expect(throttled.load).toBeGreaterThan(0.1);
  });
});

describe('a 1% failure rate (100 req/s for 60 s)', () => {
  it('retries every failure, and every call succeeds', async () => {
    const clock = new FakeClock();
    const dep = createDependency({ name: 'inventory', p99Ms: 50, attempts: 3, clock, random: mulberry32(2) });
    const events: DependencyEvent[] = [];
    dep.on((e) => events.push(e));
    const random = mulberry32(3);
    const { operation, calls } = counted(clock, () => random() < 0.01);
    const result = await drive(clock, 100, 60, () => dep.execute(operation, { idempotent: true }));
    const failures = events.filter((e) => e.type === 'attempt-end' && e.outcome === 'error').length;
    const retries = events.filter((e) => e.type === 'attempt' && e.kind === 'retry').length;
    expect(failures).toBeGreaterThan(30);
    expect(retries).toBe(failures);
    expect(events.some((e) => e.type === 'budget-refused')).toBe(false);
    expect(result.calls.every((c) => c.ok)).toBe(true);
    expect(calls()).toBe(6_000 + failures);
  });
});

describe('a POST without an idempotency key', () => {
  it('is sent exactly once, whatever fails and however much budget is left', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.constantFrom(
            () => coded('ECONNREFUSED'),
            () => coded('ECONNRESET'),
            () => Object.assign(new Error('503'), { status: 503, headers: { 'retry-after': '0' } }),
            () => Object.assign(new Error('429'), { statusCode: 429 }),
            () => 'ok',
          ),
          { minLength: 1, maxLength: 6 },
        ),
        fc.integer({ min: 1, max: 10 }),
        async (script, attempts) => {
          const clock = new FakeClock();
          const dep = createDependency({ name: 'payments', p99Ms: 20, attempts, clock, hedge: true });
          let calls = 0;
          const p = dep.execute(
            (ctx) => {
              const step = script[Math.min(calls, script.length - 1)]!;
              calls += 1;
              return fakeCall(clock, ctx, 3, () => {
                const outcome = step();
                if (outcome instanceof Error) throw outcome;
                return outcome;
              });
            },
            { idempotent: false },
          );
          p.catch(() => {});
          await clock.runAllAsync();
          await p.catch(() => {});
          expect(calls).toBe(1);
          expect(dep.budget.state().extras).toBe(0);
        },
      ),
      { numRuns: 100 },
    );
  });
});
