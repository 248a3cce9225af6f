import { describe, expect, it } from 'vitest';
import { FakeClock } from '../clock/fake.js';
import { InvalidOptionsError } from '../errors/options.js';
import { createRetryBudget, isRetryBudget } from './budget.js';

describe('createRetryBudget (SPEC R1, V4: the seed test cases)', () => {
  it('caps extras at 10% when every one of 1000 originals fails', () => {
    const clock = new FakeClock();
    const budget = createRetryBudget({ windowMs: 10_000, maxRatio: 0.1, minPerSecond: 3, clock });
    let authorised = 0;
    for (let i = 0; i < 1000; i += 1) {
      clock.advance(5);
      budget.recordOriginal();
      if (budget.tryConsume()) authorised += 1;
    }
    expect(authorised).toBeLessThanOrEqual(100);
    expect(authorised).toBe(100);
    expect(budget.state().ratio).toBeLessThanOrEqual(0.1);
  });

  it('still allows a retry with 2 originals in a quiet window (the floor)', () => {
    const clock = new FakeClock();
    const budget = createRetryBudget({ windowMs: 10_000, maxRatio: 0.1, minPerSecond: 3, clock });
    clock.advance(100);
    budget.recordOriginal();
    clock.advance(100);
    budget.recordOriginal();
    expect(budget.tryConsume()).toBe(true);
  });
});

describe('createRetryBudget', () => {
  it('grants exactly the floor, minPerSecond × window seconds, with no traffic', () => {
    const clock = new FakeClock();
    const budget = createRetryBudget({ windowMs: 10_000, minPerSecond: 3, clock });
    let granted = 0;
    while (budget.tryConsume()) granted += 1;
    expect(granted).toBe(30);
    expect(budget.state()).toEqual({ originals: 0, extras: 30, ratio: 0 });
  });

  it('uses exact arithmetic: 0.1 × 310 originals allows 31 extras, not 30 or 32', () => {
    const clock = new FakeClock();
    const budget = createRetryBudget({ maxRatio: 0.1, minPerSecond: 0, clock });
    for (let i = 0; i < 310; i += 1) budget.recordOriginal();
    let granted = 0;
    while (budget.tryConsume()) granted += 1;
    expect(granted).toBe(31);
  });

  it('keeps a ratio like 0.3 exact (0.3 × 10 is 3, though 0.1 × 3 is not in floats)', () => {
    const budget = createRetryBudget({ maxRatio: 0.3, minPerSecond: 0, clock: new FakeClock() });
    for (let i = 0; i < 10; i += 1) budget.recordOriginal();
    let granted = 0;
    while (budget.tryConsume()) granted += 1;
    expect(granted).toBe(3);
  });

  it('refuses everything with ratio 0 and floor 0', () => {
    const budget = createRetryBudget({ maxRatio: 0, minPerSecond: 0, clock: new FakeClock() });
    for (let i = 0; i < 100; i += 1) budget.recordOriginal();
    expect(budget.tryConsume()).toBe(false);
  });

  it('recovers once the spent extras slide out of the window', () => {
    const clock = new FakeClock();
    const budget = createRetryBudget({ windowMs: 1_000, minPerSecond: 2, maxRatio: 0, clock });
    expect(budget.tryConsume()).toBe(true);
    expect(budget.tryConsume()).toBe(true);
    expect(budget.tryConsume()).toBe(false);
    clock.advance(900);
    expect(budget.tryConsume()).toBe(false);
    // The extras' bucket leaves the (conservative, one bucket longer) window after 1.1 s at most.
    clock.advance(200);
    expect(budget.tryConsume()).toBe(true);
    expect(budget.state().extras).toBe(1);
  });

  it('forgets everything after a long pause, in one step', () => {
    const clock = new FakeClock();
    const budget = createRetryBudget({ clock });
    for (let i = 0; i < 50; i += 1) budget.recordOriginal();
    budget.tryConsume();
    clock.advance(3_600_000);
    expect(budget.state()).toEqual({ originals: 0, extras: 0, ratio: 0 });
  });

  it('ignores a clock that goes backwards instead of corrupting its counts', () => {
    const fake = new FakeClock();
    let now = 50_000;
    const clock = {
      now: () => now,
      epochNow: () => now,
      setTimer: fake.setTimer.bind(fake),
      clearTimer: fake.clearTimer.bind(fake),
    };
    const budget = createRetryBudget({ clock });
    budget.recordOriginal();
    now = 10;
    budget.recordOriginal();
    expect(budget.state().originals).toBe(2);
  });

  it('reports every bad option at once', () => {
    let error: unknown;
    try {
      createRetryBudget({ windowMs: 0, maxRatio: -1, minPerSecond: Number.NaN, buckets: 1.5 });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(InvalidOptionsError);
    const problems = (error as InvalidOptionsError).problems;
    expect(problems).toHaveLength(4);
    expect(problems.join('\n')).toMatch(/windowMs.*maxRatio.*minPerSecond.*buckets/s);
  });

  it('recognises a budget instance', () => {
    expect(isRetryBudget(createRetryBudget())).toBe(true);
    expect(isRetryBudget({ windowMs: 10 })).toBe(false);
    expect(isRetryBudget(null)).toBe(false);
  });
});
