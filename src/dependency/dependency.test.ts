import { describe, expect, it, vi } from 'vitest';
import { createRetryBudget } from '../budget/budget.js';
import { FakeClock } from '../clock/fake.js';
import { runWithDeadline } from '../deadline/ambient.js';
import { Deadline } from '../deadline/deadline.js';
import { InvalidOptionsError } from '../errors/options.js';
import { createDependency } from './dependency.js';
import { coded, fakeCall } from './dependency.test-helpers.js';
import type { AttemptContext, DependencyEvent } from './types.js';

describe('createDependency options', () => {
  it('calibrates its timeouts from p99 (SPEC C1–C3) and keeps the warning', () => {
    const dep = createDependency({ name: 'balance', p99Ms: 180, attempts: 3, defaultDeadlineMs: 600 });
    expect(dep.timeouts).toMatchObject({ responseMs: 252, connectMs: 126, attempts: 2 });
    expect(dep.timeouts.warning).toContain('fits 2 attempt(s), not 3');
    expect(dep.name).toBe('balance');
    expect(dep.p99Ms).toBe(180);
  });

  it('reports every problem at once, including the nested ones', () => {
    let error: unknown;
    try {
      createDependency({
        name: '',
        p99Ms: -1,
        attempts: 0,
        slack: 2,
        retryBudget: { maxRatio: -1 },
        hedge: { percentile: 0.1 },
        recorder: { windowMs: 1 },
        random: 3 as never,
      });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(InvalidOptionsError);
    const text = (error as InvalidOptionsError).problems.join('\n');
    for (const what of [
      'name',
      'p99Ms',
      'attempts',
      'slack',
      '`retryBudget.maxRatio`',
      '`hedge.percentile`',
      '`recorder.windowMs`',
      'random',
    ]) {
      expect(text).toContain(what);
    }
  });

  it('hedges with a default ceiling even when the attempt timeout is below the hedge floor', () => {
    const clock = new FakeClock();
    // p99 2 ms → 3 ms attempt timeout, under the 5 ms minimum hedge delay: still a valid policy.
    expect(() => createDependency({ name: 'tiny', p99Ms: 2, hedge: true, clock })).not.toThrow();
    expect(() =>
      createDependency({ name: 'tiny', p99Ms: 2, hedge: { minDelayMs: 50 }, clock }),
    ).not.toThrow();
  });

  it('requires a name and a p99', () => {
    expect(() => createDependency({} as never)).toThrow(/`name` is required[\s\S]*`p99Ms` is required/);
  });

  it('shares a budget instance between dependencies (one budget per dependency group)', async () => {
    const clock = new FakeClock();
    const budget = createRetryBudget({ clock });
    const a = createDependency({ name: 'a', p99Ms: 10, clock, retryBudget: budget });
    const b = createDependency({ name: 'b', p99Ms: 10, clock, retryBudget: budget });
    expect(a.budget).toBe(budget);
    const op = (ctx: AttemptContext) => fakeCall(clock, ctx, 1, () => 'ok');
    const done = Promise.all([a.execute(op, { idempotent: true }), b.execute(op, { idempotent: true })]);
    await clock.runAllAsync();
    await done;
    expect(budget.state().originals).toBe(2);
  });
});

describe('deadlines (SPEC D1, D5)', () => {
  it('runs under the ambient deadline when the call brings none, else the default', async () => {
    const clock = new FakeClock();
    const dep = createDependency({ name: 'x', p99Ms: 10, clock, defaultDeadlineMs: 500 });
    const seen: number[] = [];
    const op = (ctx: AttemptContext) => {
      seen.push(ctx.deadline.remainingMs());
      return fakeCall(clock, ctx, 1, () => 'ok');
    };
    const ambient = runWithDeadline(Deadline.after(30, { clock }), () =>
      dep.execute(op, { idempotent: true }),
    );
    const fallback = dep.execute(op, { idempotent: true });
    await clock.runAllAsync();
    await Promise.all([ambient, fallback]);
    expect(seen).toEqual([14, 14]); // each attempt's own deadline: min(call deadline, its 14 ms slice)
    const long = createDependency({ name: 'y', p99Ms: 100, clock, defaultDeadlineMs: 500 });
    const p = long.execute(op, { idempotent: true });
    await clock.runAllAsync();
    await p;
    expect(seen[2]).toBe(140);
  });

  it('sends the attempt deadline downstream in the configured headers', async () => {
    const clock = new FakeClock();
    const dep = createDependency({ name: 'x', p99Ms: 100, clock, headerFormat: { grpcTimeout: true } });
    let headers: Readonly<Record<string, string>> = {};
    const p = dep.execute(
      (ctx) => {
        headers = ctx.headers;
        return fakeCall(clock, ctx, 1, () => 'ok');
      },
      { idempotent: true },
    );
    await clock.runAllAsync();
    await p;
    expect(headers).toEqual({
      'x-deadline-epoch-ms': String(1_700_000_000_000 + 140),
      'grpc-timeout': '140m',
    });
  });
});

describe('the deadline a call brings (#14)', () => {
  const EPOCH = 1_700_000_000_000;

  it('is capped by the ambient deadline: a callee never extends its caller', async () => {
    const clock = new FakeClock();
    // Attempt timeout ceil(1500 × 1.4) = 2100 ms: longer than what the caller has left.
    const fast = createDependency({
      name: 'fast',
      p99Ms: 1_500,
      attempts: 1,
      clock,
      defaultDeadlineMs: 60_000,
    });
    let sent: Readonly<Record<string, string>> = {};
    const op = (ctx: AttemptContext) => {
      sent = ctx.headers;
      return fakeCall(clock, ctx, 1, () => 'ok');
    };
    // Before: inside a 2 s request, a call with its own 28 s deadline sent 28 s onward.
    const p = runWithDeadline(Deadline.after(2_000, { clock }), () =>
      fast.execute(op, { idempotent: true, deadline: Deadline.after(28_000, { clock }) }),
    );
    await clock.runAllAsync();
    await p;
    expect(Number(sent['x-deadline-epoch-ms'])).toBe(EPOCH + 2_000);
    // ... and did not refuse a dependency whose p99 (20 s) cannot fit what the caller has left.
    const slow = createDependency({ name: 'slow', p99Ms: 20_000, clock, defaultDeadlineMs: 60_000 });
    let called = 0;
    const refused = runWithDeadline(Deadline.after(2_000, { clock }), () =>
      slow.execute(
        () => {
          called += 1;
          return Promise.resolve('late');
        },
        { idempotent: true, deadline: Deadline.after(28_000, { clock }) },
      ),
    );
    await expect(refused).rejects.toMatchObject({ code: 'DEADLINE_INSUFFICIENT', remainingMs: 2_000 });
    expect(called).toBe(0);
    // An explicit deadline shorter than the ambient one is kept.
    const q = runWithDeadline(Deadline.after(4_000, { clock }), () =>
      fast.execute(op, { idempotent: true, deadline: Deadline.after(1_800, { clock }) }),
    );
    await clock.runAllAsync();
    await q;
    expect(Number(sent['x-deadline-epoch-ms'])).toBe(EPOCH + 1 + 1_800);
  });

  it('accepts a number of ms, and refuses anything else with INVALID_OPTIONS, never a TypeError', async () => {
    const clock = new FakeClock();
    const dep = createDependency({ name: 'x', p99Ms: 10, clock });
    let left = 0;
    // Before: `deadline: 1000` threw `TypeError: remainingMsAt is not a function`.
    const p = dep.execute(
      (ctx) => {
        left = ctx.deadline.remainingMs();
        return fakeCall(clock, ctx, 1, () => 'ok');
      },
      { idempotent: true, deadline: 1_000 },
    );
    await clock.runAllAsync();
    await expect(p).resolves.toBe('ok');
    expect(left).toBe(14); // min(1000 ms, the attempt's 14 ms slice)
    const capped = runWithDeadline(Deadline.after(300, { clock }), () =>
      dep.execute((ctx) => Promise.resolve(ctx.deadline.remainingMs()), {
        idempotent: true,
        deadline: 5_000,
      }),
    );
    await expect(capped).resolves.toBeLessThanOrEqual(300);
    for (const bad of [-1, Number.NaN, 2 ** 31, '1000', {}, { remainingMs: 5 }, null]) {
      const call = dep.execute(() => Promise.resolve(1), { idempotent: true, deadline: bad as never });
      await expect(call, String(bad)).rejects.toMatchObject({
        code: 'INVALID_OPTIONS',
        problems: [expect.stringMatching(/^`deadline` must be a Deadline or a number of ms/)],
      });
    }
  });

  it('rejects a misspelt per-call option with the name it was meant to be', async () => {
    const dep = createDependency({ name: 'x', p99Ms: 10 });
    const call = dep.execute(() => Promise.resolve(1), {
      idempotent: true,
      retryResponseTimeouts: true,
    } as never);
    await expect(call).rejects.toMatchObject({
      code: 'INVALID_OPTIONS',
      problems: ['unknown option `retryResponseTimeouts`; did you mean `retryResponseTimeout`?'],
    });
  });
});

describe('events and the recorder', () => {
  it('records every attempt latency and outcome', async () => {
    const clock = new FakeClock();
    const recorded: [number, string][] = [];
    const recorder = {
      record: (ms: number, outcome: string) => void recorded.push([ms, outcome]),
      quantile: () => undefined,
      lastWindow: () => undefined,
      currentWindow: () => {
        throw new Error('unused');
      },
    };
    const dep = createDependency({ name: 'x', p99Ms: 50, attempts: 3, clock, recorder, random: () => 0 });
    let n = 0;
    const p = dep.execute(
      (ctx) => {
        n += 1;
        if (n === 1)
          return fakeCall<string>(clock, ctx, 5, () => {
            throw coded('ECONNRESET');
          });
        if (n === 2) return new Promise<string>(() => {});
        return fakeCall(clock, ctx, 7, () => 'ok');
      },
      { idempotent: true, retryResponseTimeout: true },
    );
    await clock.runAllAsync();
    await p;
    expect(recorded).toEqual([
      [5, 'error'],
      [70, 'timeout'],
      [7, 'success'],
    ]);
  });

  it('unsubscribes with dispose, and survives a listener that throws', async () => {
    const clock = new FakeClock();
    const dep = createDependency({ name: 'x', p99Ms: 10, clock });
    const warn = vi.spyOn(process, 'emitWarning').mockImplementation(() => {});
    const seen: DependencyEvent['type'][] = [];
    const bad = dep.on(() => {
      throw new Error('listener bug');
    });
    const good = dep.on((e) => seen.push(e.type));
    const op = (ctx: AttemptContext) => fakeCall(clock, ctx, 1, () => 'ok');
    const first = dep.execute(op, { idempotent: true });
    await clock.runAllAsync();
    await expect(first).resolves.toBe('ok');
    expect(seen).toEqual(['attempt', 'attempt-end']);
    expect(warn).toHaveBeenCalled();
    bad.dispose();
    good.dispose();
    good.dispose();
    const second = dep.execute(op, { idempotent: true });
    await clock.runAllAsync();
    await second;
    expect(seen).toHaveLength(2);
    warn.mockRestore();
  });

  it('rejects a non-function operation without calling anything', async () => {
    const dep = createDependency({ name: 'x', p99Ms: 10 });
    await expect(dep.execute(42 as never)).rejects.toBeInstanceOf(InvalidOptionsError);
  });

  it('treats an operation that returns a plain value, or throws synchronously, like a promise', async () => {
    const clock = new FakeClock();
    const dep = createDependency({ name: 'x', p99Ms: 10, clock });
    await expect(dep.execute((() => 'plain') as never, { idempotent: true })).resolves.toBe('plain');
    const boom = new Error('sync');
    await expect(
      dep.execute(() => {
        throw boom;
      }),
    ).rejects.toBe(boom);
    await clock.advanceAsync(0); // the dependency's shared bound timer lets go once the loop turns
    expect(clock.pendingTimers()).toBe(0);
  });
});

describe('an assumed p99 (SPEC C8, issue 27)', () => {
  it('stays assumed until a measured p99 replaces it, which emits p99-measured once', () => {
    const clock = new FakeClock();
    const dep = createDependency({ name: 'supplier', p99Ms: 160, p99Assumed: true, clock });
    const events: DependencyEvent[] = [];
    dep.on((e) => events.push(e));
    expect(dep.p99Assumed).toBe(true);
    dep.update({ attempts: 1 }); // not a measurement
    expect(dep.p99Assumed).toBe(true);
    dep.recalibrate(24);
    expect(dep.p99Assumed).toBe(false);
    expect(dep.p99Ms).toBe(24);
    expect(events.filter((e) => e.type === 'p99-measured')).toEqual([
      { type: 'p99-measured', dependency: 'supplier', assumedP99Ms: 160, p99Ms: 24 },
    ]);
    dep.recalibrate(30);
    expect(events.filter((e) => e.type === 'p99-measured')).toHaveLength(1);
    expect(createDependency({ name: 'm', p99Ms: 5, clock }).p99Assumed).toBe(false);
    dep.update({ p99Ms: 40, p99Assumed: true }); // a starting value again (a config's kind changed)
    expect(dep.p99Assumed).toBe(true);
    expect(events.filter((e) => e.type === 'p99-measured')).toHaveLength(1);
  });
});

describe('update(): every option is either live or named as fixed (SPEC X9)', () => {
  it('each option of the dependency that update() does not take is refused as "cannot change", never as unknown', async () => {
    const { DEPENDENCY_OPTIONS, LIVE_KEYS } = await import('./options.js');
    const fixed = DEPENDENCY_OPTIONS.keys.filter((key) => !(LIVE_KEYS as readonly string[]).includes(key));
    expect(fixed).toEqual(
      expect.arrayContaining(['name', 'clock', 'throttle', 'pushback', 'concurrencyLimit']),
    );
    const dep = createDependency({ name: 'inventory', p99Ms: 100, clock: new FakeClock() });
    for (const key of fixed) {
      let error: unknown;
      try {
        dep.update({ [key]: undefined } as never);
      } catch (thrown) {
        error = thrown;
      }
      expect(error, key).toBeInstanceOf(InvalidOptionsError);
      expect(String(error), key).toMatch(new RegExp(`\`${key}\` cannot change while the dependency runs`));
    }
  });
});
