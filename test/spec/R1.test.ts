import { describe, expect, it } from 'vitest';
import { createRetryBudget } from '../../src/budget/budget.js';
import { FakeClock } from '../../src/clock/fake.js';
import { createDependency } from '../../src/dependency/dependency.js';
import type { AttemptContext } from '../../src/dependency/types.js';
import { RetryBudgetExhaustedError } from '../../src/errors/budget.js';

/**
 * SPEC R1, the parts no other test pins by value: the *defaults* (10 s window, 10% of originals, a
 * floor of 3 extra attempts per second), the same defaults behind `createDependency` when it is given
 * no budget, and authorisation that consumes the balance atomically (two requests failing together
 * cannot both spend the last extra attempt), answered at once.
 */

describe('SPEC R1: the default retry budget', () => {
  it('with no traffic grants exactly the floor: 3 extra attempts per second over a 10 s window = 30', () => {
    const budget = createRetryBudget({ clock: new FakeClock() });
    let granted = 0;
    while (budget.tryConsume()) granted += 1;
    expect(granted).toBe(30);
  });

  it('with 1000 originals grants 10% (100 extras), remembers them for 10 s, and forgets them after', () => {
    const clock = new FakeClock();
    const budget = createRetryBudget({ clock });
    for (let i = 0; i < 1000; i += 1) budget.recordOriginal();
    let granted = 0;
    while (budget.tryConsume()) granted += 1;
    expect(granted).toBe(100);
    expect(budget.state()).toEqual({ originals: 1000, extras: 100, ratio: 0.1 });

    clock.advance(9_900); // still inside the 10 s window: nothing more to spend
    expect(budget.state()).toMatchObject({ originals: 1000, extras: 100 });
    expect(budget.tryConsume()).toBe(false);

    clock.advance(1_100); // 11 s: the window (one bucket of slack included) has slid past them
    expect(budget.state()).toEqual({ originals: 0, extras: 0, ratio: 0 });
    expect(budget.tryConsume()).toBe(true); // the floor again
  });

  it('is what createDependency builds when given no budget', () => {
    const clock = new FakeClock();
    const dep = createDependency({ name: 'supplier', p99Ms: 50, clock });
    let granted = 0;
    while (dep.budget.tryConsume()) granted += 1;
    expect(granted).toBe(30);
  });
});

describe('SPEC R1: authorisation is atomic and says no fast', () => {
  it('two calls failing at the same instant with one extra left: exactly one retries, the other is refused at once', async () => {
    const clock = new FakeClock();
    // A floor of exactly one extra attempt in the window (0.1/s × 10 s) and no ratio share.
    const budget = createRetryBudget({ clock, windowMs: 10_000, maxRatio: 0, minPerSecond: 0.1 });
    const dep = createDependency({ name: 'supplier', p99Ms: 50, attempts: 3, clock, retryBudget: budget });
    const started: string[] = [];
    const operation = (call: string) => (ctx: AttemptContext) => {
      started.push(`${call}:${ctx.kind}@${clock.now()}`);
      return new Promise<string>((resolve, reject) => {
        // The originals fail together at t = 5 (connection refused: an immediate retry is wanted);
        // the one retry that gets through succeeds.
        clock.setTimer(() => {
          if (ctx.kind === 'original') reject(Object.assign(new Error('refused'), { code: 'ECONNREFUSED' }));
          else resolve(`${call} ok`);
        }, 5);
      });
    };
    const settledAt: Record<string, number> = {};
    const outcome = (call: string) =>
      dep.execute(operation(call), { idempotent: true }).then(
        (value) => {
          settledAt[call] = clock.now();
          return value;
        },
        (error: unknown) => {
          settledAt[call] = clock.now();
          return error;
        },
      );
    const both = Promise.all([outcome('a'), outcome('b')]);
    await clock.runAllAsync();
    const results = await both;

    const refused = results.filter((r) => r instanceof RetryBudgetExhaustedError);
    const answered = results.filter((r) => typeof r === 'string');
    expect(refused).toHaveLength(1);
    expect(answered).toHaveLength(1);
    expect(started.filter((s) => s.includes(':retry@'))).toHaveLength(1);
    expect(started).toHaveLength(3);
    expect(budget.state()).toMatchObject({ originals: 2, extras: 1 });
    // The refusal names the failure it did not retry, and costs no time: no wait, no backoff.
    const refusedError = refused[0] as RetryBudgetExhaustedError;
    expect((refusedError.cause as { code?: string }).code).toBe('ECONNREFUSED');
    const refusedCall = results[0] === refusedError ? 'a' : 'b';
    expect(settledAt[refusedCall]).toBe(5);
  });
});
