import { Metadata } from '@grpc/grpc-js';
import { describe, expect, it } from 'vitest';
import { FakeClock } from '../clock/fake.js';
import type { LatencySource } from '../latency/types.js';
import { createDependency } from './dependency.js';
import { fakeCall } from './dependency.test-helpers.js';
import type { AttemptContext, DependencyEvent, ResultVerdict } from './types.js';

/**
 * Pushback in the executor (SPEC X6, gRPC A6 "Pushback: don't retry"): an answer that says "do not
 * retry" ends the call with that answer. No retry, no hedge: a hedge not sent yet is never sent, one
 * in flight is cancelled; the budget is not touched; the event says so. On the fake clock.
 */

const fixedP95 = (ms: number): LatencySource => ({
  record: () => {},
  quantile: (q) => (q === 0.95 ? ms : undefined),
  lastWindow: () => undefined,
  currentWindow: () => {
    throw new Error('unused');
  },
});

interface Answer {
  readonly status: number;
  readonly pushback?: boolean;
}
const judge = (a: Answer): ResultVerdict =>
  a.pushback
    ? { retryable: false, outcome: 'error', pushback: true }
    : a.status >= 500
      ? { retryable: true }
      : { retryable: false };

function setup(extra: Partial<Parameters<typeof createDependency>[0]> = {}) {
  const clock = new FakeClock();
  const dep = createDependency({ name: 'orders', p99Ms: 100, attempts: 3, clock, ...extra });
  const events: DependencyEvent[] = [];
  dep.on((e) => events.push(e));
  const started: { kind: string; at: number; ctx: AttemptContext }[] = [];
  return { clock, dep, events, started };
}

describe('pushback ends the call (SPEC X6)', () => {
  it('a 503 that pushes back is the answer: one attempt, no retry, the budget untouched', async () => {
    const { clock, dep, events, started } = setup();
    const p = dep.execute(
      (ctx) => {
        started.push({ kind: ctx.kind, at: clock.now(), ctx });
        return fakeCall(clock, ctx, 10, (): Answer => ({ status: 503, pushback: true }));
      },
      { idempotent: true, classify: judge },
    );
    await clock.runAllAsync();
    await expect(p).resolves.toEqual({ status: 503, pushback: true });
    expect(started).toHaveLength(1);
    expect(dep.budget.state().extras).toBe(0);
    expect(events).toContainEqual({ type: 'pushback', dependency: 'orders', kind: 'original', attempt: 1 });
    expect(clock.pendingTimers()).toBe(0);
  });

  it('the same 503 without the pushback is retried (the test can fail)', async () => {
    const { clock, dep, started } = setup();
    const p = dep.execute(
      (ctx) => {
        started.push({ kind: ctx.kind, at: clock.now(), ctx });
        return fakeCall(clock, ctx, 10, (): Answer => ({ status: 503 }));
      },
      { idempotent: true, classify: judge },
    );
    await clock.runAllAsync();
    await expect(p).resolves.toEqual({ status: 503 });
    expect(started).toHaveLength(3);
  });

  it('pushed back before the hedge delay: the hedge is never sent', async () => {
    const { clock, dep, started } = setup({ hedge: true, recorder: fixedP95(30) });
    const p = dep.execute(
      (ctx) => {
        started.push({ kind: ctx.kind, at: clock.now(), ctx });
        return fakeCall(clock, ctx, 10, (): Answer => ({ status: 503, pushback: true }));
      },
      { idempotent: true, classify: judge },
    );
    await clock.runAllAsync();
    await p;
    expect(started.map((s) => s.kind)).toEqual(['original']);
    expect(dep.budget.state().extras).toBe(0);
  });

  it('pushed back while a hedge races: the hedge is cancelled and its late answer released', async () => {
    const { clock, dep, events, started } = setup({ hedge: true, recorder: fixedP95(30) });
    const released: unknown[] = [];
    const p = dep.execute(
      (ctx) => {
        started.push({ kind: ctx.kind, at: clock.now(), ctx });
        // The original pushes back at 50 ms; the hedge (sent at 30 ms) would answer 200 at 130 ms.
        if (ctx.kind === 'original')
          return fakeCall(clock, ctx, 50, (): Answer => ({ status: 503, pushback: true }));
        return fakeCall(clock, ctx, 100, (): Answer => ({ status: 200 }));
      },
      { idempotent: true, classify: judge, discard: (v) => released.push(v) },
    );
    await clock.runAllAsync();
    await expect(p).resolves.toEqual({ status: 503, pushback: true });
    expect(started.map((s) => [s.kind, s.at])).toEqual([
      ['original', 0],
      ['hedge', 30],
    ]);
    expect(started[1]!.ctx.signal.aborted).toBe(true);
    expect(events.filter((e) => e.type === 'pushback')).toHaveLength(1);
    expect(events.some((e) => e.type === 'hedge-won')).toBe(false);
  });

  it('a hedge that pushes back ends the call too; the original in flight is cancelled', async () => {
    const { clock, dep, started } = setup({ hedge: true, recorder: fixedP95(30) });
    const p = dep.execute(
      (ctx) => {
        started.push({ kind: ctx.kind, at: clock.now(), ctx });
        if (ctx.kind === 'hedge')
          return fakeCall(clock, ctx, 5, (): Answer => ({ status: 503, pushback: true }));
        return fakeCall(clock, ctx, 90, (): Answer => ({ status: 200 }));
      },
      { idempotent: true, classify: judge },
    );
    await clock.runAllAsync();
    await expect(p).resolves.toEqual({ status: 503, pushback: true });
    expect(started[0]!.ctx.signal.aborted).toBe(true);
  });

  it('a thrown gRPC error carrying the pushback trailer is rethrown as is, never retried', async () => {
    const { clock, dep, started } = setup();
    const metadata = new Metadata();
    metadata.set('grpc-retry-pushback-ms', '-1');
    const unavailable = Object.assign(new Error('14 UNAVAILABLE'), { code: 14, details: 'down', metadata });
    const p = dep.execute(
      (ctx) => {
        started.push({ kind: ctx.kind, at: clock.now(), ctx });
        return fakeCall(clock, ctx, 10, () => {
          throw unavailable;
        });
      },
      { idempotent: true },
    );
    const settled = p.catch((e: unknown) => e);
    await clock.runAllAsync();
    expect(await settled).toBe(unavailable);
    expect(started).toHaveLength(1);
  });

  it('a thrown pushback while a hedge races ends the call at once (the hedge would have answered 200)', async () => {
    const { clock, dep, started } = setup({ hedge: true, recorder: fixedP95(30) });
    const metadata = new Metadata();
    metadata.set('grpc-retry-pushback-ms', '-1');
    const unavailable = Object.assign(new Error('14 UNAVAILABLE'), { code: 14, details: 'down', metadata });
    const p = dep.execute(
      (ctx) => {
        started.push({ kind: ctx.kind, at: clock.now(), ctx });
        if (ctx.kind === 'original')
          return fakeCall(clock, ctx, 50, () => {
            throw unavailable;
          });
        return fakeCall(clock, ctx, 100, () => 'ok');
      },
      { idempotent: true },
    );
    let endedAt = -1;
    const settled = p.then(
      () => 'resolved',
      (e: unknown) => {
        endedAt = clock.now();
        return e;
      },
    );
    await clock.runAllAsync();
    expect(await settled).toBe(unavailable);
    expect(endedAt).toBe(50);
    expect(started[1]!.ctx.signal.aborted).toBe(true);
  });

  it('`pushback: false` ignores it: the gRPC UNAVAILABLE is retried as before', async () => {
    const { clock, dep, started } = setup({ pushback: false });
    const metadata = new Metadata();
    metadata.set('grpc-retry-pushback-ms', '-1');
    const p = dep.execute(
      (ctx) => {
        started.push({ kind: ctx.kind, at: clock.now(), ctx });
        return fakeCall(clock, ctx, 10, () => {
          throw Object.assign(new Error('14'), { code: 14, details: '', metadata });
        });
      },
      { idempotent: true },
    );
    const settled = p.catch((e: unknown) => e);
    await clock.runAllAsync();
    await settled;
    expect(started).toHaveLength(3);
  });

  it('a non-negative pushback is the wait before the retry, exactly', async () => {
    const { clock, dep, started } = setup({ defaultDeadlineMs: 5_000 });
    const metadata = new Metadata();
    metadata.set('grpc-retry-pushback-ms', '700');
    const p = dep.execute(
      (ctx) => {
        started.push({ kind: ctx.kind, at: clock.now(), ctx });
        if (ctx.attempt === 1)
          return fakeCall(clock, ctx, 10, () => {
            throw Object.assign(new Error('14'), { code: 14, details: '', metadata });
          });
        return fakeCall(clock, ctx, 10, () => 'ok');
      },
      { idempotent: true },
    );
    await clock.runAllAsync();
    await expect(p).resolves.toBe('ok');
    expect(started.map((s) => s.at)).toEqual([0, 710]);
  });
});
