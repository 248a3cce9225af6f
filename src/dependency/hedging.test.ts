import { describe, expect, it } from 'vitest';
import { createRetryBudget } from '../budget/budget.js';
import { FakeClock } from '../clock/fake.js';
import { Deadline } from '../deadline/deadline.js';
import { createLatencyRecorder } from '../latency/recorder.js';
import type { LatencySource } from '../latency/types.js';
import { createDependency } from './dependency.js';
import { coded, drive, fakeCall, mulberry32, quantile } from './dependency.test-helpers.js';
import type { AttemptContext, DependencyEvent } from './types.js';

/** A latency source with a fixed p95 (and nothing else), to pin the hedge delay. */
const fixedP95 = (ms: number | undefined): LatencySource => ({
  record: () => {},
  quantile: (q) => (q === 0.95 ? ms : undefined),
  lastWindow: () => undefined,
  currentWindow: () => {
    throw new Error('unused');
  },
});

function setup(p95: number | undefined, extra: Partial<Parameters<typeof createDependency>[0]> = {}) {
  const clock = new FakeClock();
  const dep = createDependency({
    name: 'search',
    p99Ms: 100,
    clock,
    hedge: true,
    recorder: fixedP95(p95),
    ...extra,
  });
  const events: DependencyEvent[] = [];
  dep.on((e) => events.push(e));
  const started: { kind: string; at: number; ctx: AttemptContext }[] = [];
  return { clock, dep, events, started };
}

describe('hedged requests (SPEC H1–H3)', () => {
  it('sends one copy after the live p95; the first success wins and the other is aborted and drained', async () => {
    const { clock, dep, events, started } = setup(30);
    const drained: string[] = [];
    const p = dep.execute(
      (ctx) => {
        started.push({ kind: ctx.kind, at: clock.now(), ctx });
        // The original is slow and ignores its signal; the hedge is fast.
        if (ctx.kind === 'original') return new Promise((r) => clock.setTimer(() => r('slow'), 120));
        return fakeCall(clock, ctx, 10, () => 'fast');
      },
      { idempotent: true, discard: (v) => drained.push(v as string) },
    );
    await clock.runAllAsync();
    await expect(p).resolves.toBe('fast');
    expect(started.map((s) => [s.kind, s.at])).toEqual([
      ['original', 0],
      ['hedge', 30],
    ]);
    expect(started[0]!.ctx.signal.aborted).toBe(true);
    expect(drained).toEqual(['slow']);
    expect(events).toContainEqual({ type: 'hedge-won', dependency: 'search', attempt: 2 });
    expect(dep.budget.state().extras).toBe(1);
  });

  it('waits for the other copy when the first to answer failed', async () => {
    const { clock, dep } = setup(20);
    const p = dep.execute(
      (ctx) =>
        ctx.kind === 'original'
          ? fakeCall(clock, ctx, 50, () => 'original')
          : fakeCall(clock, ctx, 5, () => {
              throw coded('ECONNRESET');
            }),
      { idempotent: true },
    );
    await clock.runAllAsync();
    await expect(p).resolves.toBe('original');
  });

  it('does not hedge without enough samples, a non-idempotent call, or an answer before the delay', async () => {
    for (const [p95, idempotent, ms] of [
      [undefined, true, 80],
      [30, false, 80],
      [30, true, 20],
    ] as const) {
      const { clock, dep, started } = setup(p95);
      const p = dep.execute(
        (ctx) => {
          started.push({ kind: ctx.kind, at: clock.now(), ctx });
          return fakeCall(clock, ctx, ms, () => 'ok');
        },
        { idempotent },
      );
      await clock.runAllAsync();
      await p;
      expect(started.map((s) => s.kind)).toEqual(['original']);
      expect(clock.pendingTimers()).toBe(0);
    }
  });

  it('does not hedge above the ceiling (the attempt timeout by default)', async () => {
    const { clock, dep, started } = setup(200);
    const p = dep.execute(
      (ctx) => {
        started.push({ kind: ctx.kind, at: clock.now(), ctx });
        return fakeCall(clock, ctx, 100, () => 'ok');
      },
      { idempotent: true },
    );
    await clock.runAllAsync();
    await p;
    expect(started).toHaveLength(1);
  });

  it('pays every hedge from the retry budget, and skips it when refused', async () => {
    const clock = new FakeClock();
    const budget = createRetryBudget({ clock, maxRatio: 0, minPerSecond: 0 });
    const { dep, events, started } = setup(30, { clock, retryBudget: budget } as never);
    const p = dep.execute(
      (ctx) => {
        started.push({ kind: ctx.kind, at: clock.now(), ctx });
        return fakeCall(clock, ctx, 80, () => 'ok');
      },
      { idempotent: true },
    );
    await clock.runAllAsync();
    await expect(p).resolves.toBe('ok');
    expect(started).toHaveLength(1);
    expect(events).toContainEqual({ type: 'budget-refused', dependency: 'search', kind: 'hedge' });
  });
  it('arms no hedge for a call its caller already gave up during the operation', async () => {
    const { clock, dep } = setup(30);
    const controller = new AbortController();
    const p = dep.execute(
      () => {
        controller.abort(new Error('gave up'));
        return new Promise<string>(() => {});
      },
      { idempotent: true, signal: controller.signal },
    );
    await expect(p).rejects.toThrow('gave up');
    await clock.advanceAsync(0); // the dependency's shared bound timer lets go once the loop turns
    expect(clock.pendingTimers()).toBe(0);
  });
  it('a final failure of one copy is not overruled by a retryable failure of the other', async () => {
    const { clock, dep, started } = setup(30);
    const denied = Object.assign(new Error('forbidden'), { status: 403 });
    const p = dep.execute(
      (ctx) => {
        started.push({ kind: ctx.kind, at: clock.now(), ctx });
        if (ctx.kind === 'original')
          return fakeCall(clock, ctx, 40, () => {
            throw denied;
          });
        return fakeCall(clock, ctx, 50, () => {
          throw coded('ECONNRESET');
        });
      },
      { idempotent: true },
    );
    const outcome = p.catch((e: unknown) => e);
    await clock.runAllAsync();
    expect(await outcome).toBe(denied);
    expect(started.map((s) => s.kind)).toEqual(['original', 'hedge']);
  });

  it('a retry after a race still waits the longer Retry-After either copy was given (SPEC R3)', async () => {
    const { clock, dep, started } = setup(30);
    let calls = 0;
    const p = dep.execute(
      (ctx) => {
        started.push({ kind: ctx.kind, at: clock.now(), ctx });
        calls += 1;
        if (calls === 1) return fakeCall(clock, ctx, 40, () => ({ status: 503 }));
        if (calls === 2)
          return fakeCall<{ status: number }>(clock, ctx, 20, () => {
            throw coded('ECONNREFUSED');
          });
        return fakeCall(clock, ctx, 5, () => ({ status: 200 }));
      },
      {
        idempotent: true,
        deadline: Deadline.after(5_000, { clock }),
        classify: (res) =>
          res.status === 503 ? { retryable: true, retryAfterMs: 1_000 } : { retryable: false },
      },
    );
    await clock.runAllAsync();
    await expect(p).resolves.toEqual({ status: 200 });
    // original fails at 40 (503, Retry-After 1 s) while the hedge (sent at 30) still runs; the hedge's
    // refused connect at 50 must not turn that into an immediate retry.
    expect(started.map((s) => [s.kind, s.at])).toEqual([
      ['original', 0],
      ['hedge', 30],
      ['retry', 1_050],
    ]);
  });
});

/** A latency source with a fixed p50 and p95 (the hedge's time left and its delay). */
const fixedQuantiles = (p50: number | undefined, p95: number): LatencySource => ({
  record: () => {},
  quantile: (q) => (q === 0.95 ? p95 : q === 0.5 ? p50 : q === 0.99 ? 95 : undefined),
  lastWindow: () => undefined,
  currentWindow: () => {
    throw new Error('unused');
  },
});

describe('how much time a hedge needs left (SPEC H1, D4; issue 15)', () => {
  // p99 100 ms, hedge after the p95 (60 ms), median 45 ms. The original stalls; the hedge answers in 20 ms.
  const run = async (deadlineMs: number, p50: number | undefined, hedge: object = {}) => {
    const clock = new FakeClock();
    const dep = createDependency({
      name: 'supplier',
      p99Ms: 100,
      clock,
      hedge,
      recorder: fixedQuantiles(p50, 60),
    });
    const events: DependencyEvent[] = [];
    dep.on((e) => events.push(e));
    const kinds: [string, number][] = [];
    const p = dep.execute(
      (ctx) => {
        kinds.push([ctx.kind, clock.now()]);
        return ctx.kind === 'original'
          ? fakeCall(clock, ctx, 1_500, () => 'stalled')
          : fakeCall(clock, ctx, 20, () => 'hedge');
      },
      { idempotent: true, deadline: Deadline.after(deadlineMs, { clock }) },
    );
    const settled = p.then(
      (v) => ({ ok: true, v, at: clock.now() }),
      (e: { code?: string }) => ({ ok: false, v: e.code, at: clock.now() }),
    );
    await clock.runAllAsync();
    return { result: await settled, kinds, skipped: events.filter((e) => e.type === 'hedge-skipped') };
  };

  it('sends the hedge with less than the p99 left when the median is left: it answers before the deadline', async () => {
    // At 60 ms, 50 ms are left: less than the p99 (D4 would refuse an attempt), more than the median.
    const { result, kinds, skipped } = await run(110, 45);
    expect(kinds).toEqual([
      ['original', 0],
      ['hedge', 60],
    ]);
    expect(result).toEqual({ ok: true, v: 'hedge', at: 80 });
    expect(skipped).toEqual([]);
  });

  it('does not send it with less than the median left, and says so (hedge-skipped)', async () => {
    const { result, kinds, skipped } = await run(100, 45); // the p99 at the start, 40 ms left at 60 ms
    expect(kinds).toEqual([['original', 0]]);
    expect(result.ok).toBe(false);
    expect(result.at).toBe(100);
    expect(skipped).toEqual([
      { type: 'hedge-skipped', dependency: 'supplier', reason: 'deadline', remainingMs: 40, neededMs: 45 },
    ]);
  });

  it("falls back to D4's p99 when the latency source cannot tell the median", async () => {
    const { kinds, skipped } = await run(110, undefined);
    expect(kinds).toEqual([['original', 0]]);
    expect(skipped).toMatchObject([{ remainingMs: 50, neededMs: 100 }]);
  });

  it('takes another quantile from hedge.timeLeftPercentile, never above the hedge percentile', async () => {
    const strict = await run(110, 45, { timeLeftPercentile: 0.95 }); // the live p95 (60 ms) must be left
    expect(strict.kinds).toEqual([['original', 0]]);
    expect(strict.skipped).toMatchObject([{ remainingMs: 50, neededMs: 60 }]);
    const clock = new FakeClock();
    expect(() =>
      createDependency({
        name: 'x',
        p99Ms: 100,
        clock,
        hedge: { percentile: 0.9, timeLeftPercentile: 0.95 },
      }),
    ).toThrow(/timeLeftPercentile.*must not be above the hedge's own percentile \(0\.9\)/s);
  });
});

describe('hedging a dependency with 5% slow answers (200 req/s for 20 s, live recorder)', () => {
  const run = async (hedge: boolean) => {
    const clock = new FakeClock();
    const recorder = createLatencyRecorder({ clock, windowMs: 1_000, minSamples: 100 });
    const dep = createDependency({
      name: 'search',
      p99Ms: 250,
      clock,
      hedge,
      recorder,
      random: mulberry32(7),
    });
    const delays: number[] = [];
    dep.on((e) => {
      if (e.type === 'attempt' && e.kind === 'hedge') delays.push(recorder.quantile(0.95)!);
    });
    const random = mulberry32(11);
    // 95%: 10–30 ms; 5%: 300 ms (a GC pause, a cold cache), drawn per attempt.
    const operation = (ctx: AttemptContext) => {
      const ms = random() < 0.05 ? 300 : 10 + 20 * random();
      return fakeCall(clock, ctx, ms, () => 'ok');
    };
    const result = await drive(clock, 200, 20, () => dep.execute(operation, { idempotent: true }));
    const steady = result.calls.filter((c) => c.startedAt >= 2_000).map((c) => c.latencyMs);
    return { p99: quantile(steady, 0.99), delays, budget: dep.budget.state(), calls: result.calls };
  };

  it('cuts the caller p99 to about p95 + the hedge delay, within the budget', async () => {
    const plain = await run(false);
    const hedged = await run(true);
    expect(plain.p99).toBe(300);
    const delay = quantile(hedged.delays, 0.5);
    expect(delay).toBeGreaterThan(25);
    expect(delay).toBeLessThan(32);
    // The dependency's own p95 (fast answers reach 30 ms) plus the delay after which the copy left.
    const target = 30 + delay;
    expect(hedged.p99).toBeLessThanOrEqual(target * 1.1);
    expect(hedged.p99).toBeLessThan(plain.p99 / 4);
    expect(hedged.calls.every((c) => c.ok)).toBe(true);
    // Hedges ≈ the share of calls slower than p95, well inside the 10% budget.
    const hedges = hedged.delays.length / hedged.calls.length;
    expect(hedges).toBeGreaterThan(0.04);
    expect(hedges).toBeLessThan(0.08);
    expect(hedged.budget.ratio).toBeLessThanOrEqual(0.1);
  });
});
