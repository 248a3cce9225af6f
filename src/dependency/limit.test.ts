import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { FakeClock } from '../clock/fake.js';
import { ConcurrencyLimitError } from '../errors/capacity.js';
import { ErrorCode } from '../errors/codes.js';
import { createDependency } from './dependency.js';
import { coded, fakeCall, mulberry32 } from './dependency.test-helpers.js';
import type { DependencyEvent } from './types.js';

/**
 * The executor's concurrency limit (SPEC X7) on a fake clock: a burst never has more than N attempts
 * in flight, the queue is bounded, the refusal is typed and immediate; a limited call is never sent,
 * never retried, never recorded; hedges take a free slot or none; a queued call gives up when its
 * attempt would no longer fit the deadline.
 */

function limited(options: Record<string, unknown> = {}) {
  const clock = new FakeClock();
  const dependency = createDependency({
    name: 'inventory',
    p99Ms: 200, // attempt timeout 280 ms
    clock,
    random: mulberry32(1),
    concurrencyLimit: { maxInFlight: 3, maxQueue: 2 },
    ...options,
  });
  const events: DependencyEvent[] = [];
  dependency.on((e) => events.push(e));
  let inFlight = 0;
  let most = 0;
  let sent = 0;
  const op =
    (ms: number, outcome: () => unknown = () => 'ok') =>
    (ctx: Parameters<Parameters<typeof dependency.execute>[0]>[0]) => {
      sent += 1;
      inFlight += 1;
      most = Math.max(most, inFlight);
      return fakeCall(clock, ctx, ms, outcome).finally(() => {
        inFlight -= 1;
      });
    };
  return {
    clock,
    dependency,
    events,
    op,
    stats: () => ({ most, sent, inFlight }),
  };
}

describe('concurrency limit in the executor (SPEC X7)', () => {
  it('a burst of 10: 3 in flight, 2 queued (served in order), 5 refused at once with CONCURRENCY_LIMITED', async () => {
    const { clock, dependency, op, stats, events } = limited();
    const results = Array.from({ length: 10 }, () =>
      dependency.execute(op(20), { idempotent: true }).then(
        () => clock.now(),
        (e: unknown) => e,
      ),
    );
    await clock.advanceAsync(0);
    const refused = (await Promise.race([
      Promise.all(results.slice(5)),
      clock.advanceAsync(0).then(() => null),
    ]))!;
    expect(refused).toHaveLength(5);
    for (const error of refused) {
      expect(error).toBeInstanceOf(ConcurrencyLimitError);
      expect(error).toMatchObject({
        code: ErrorCode.CONCURRENCY_LIMITED,
        reason: 'queue-full',
        limit: 3,
        inFlight: 3,
        queued: 2,
        maxQueue: 2,
        waitedMs: 0,
      });
    }
    await clock.runAllAsync();
    const done = await Promise.all(results.slice(0, 5));
    expect(done).toEqual([20, 20, 20, 40, 40]);
    expect(stats()).toMatchObject({ most: 3, sent: 5 });
    expect(events.filter((e) => e.type === 'limited')).toHaveLength(5);
    // Refused calls are not the dependency's latency: five answers recorded, all 20 ms.
    expect(dependency.recorder.currentWindow().count).toBe(5);
    expect(dependency.concurrency()).toMatchObject({ limit: 3, inFlight: 0, queued: 0 });
  });

  it('never more than N in flight, nor more than maxQueue waiting, on random bursts (property)', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 6 }),
        fc.integer({ min: 0, max: 6 }),
        fc.array(
          fc.record({ gap: fc.nat({ max: 30 }), ms: fc.integer({ min: 1, max: 60 }), fail: fc.boolean() }),
          {
            maxLength: 60,
          },
        ),
        async (maxInFlight, maxQueue, calls) => {
          const { clock, dependency, op, stats } = limited({
            concurrencyLimit: { maxInFlight, maxQueue },
            attempts: 2,
          });
          let queuedMax = 0;
          const pending: Promise<unknown>[] = [];
          for (const { gap, ms, fail } of calls) {
            pending.push(
              dependency
                .execute(
                  op(ms, () => {
                    if (fail) throw coded('ECONNRESET');
                    return 'ok';
                  }),
                  { idempotent: true },
                )
                .catch((e: unknown) => e),
            );
            queuedMax = Math.max(queuedMax, dependency.concurrency()!.queued);
            await clock.advanceAsync(gap);
          }
          await clock.runAllAsync();
          await Promise.all(pending);
          expect(stats().most).toBeLessThanOrEqual(maxInFlight);
          expect(queuedMax).toBeLessThanOrEqual(maxQueue);
          expect(dependency.concurrency()).toMatchObject({ inFlight: 0, queued: 0 });
        },
      ),
      { numRuns: 150 },
    );
  });

  it('a queued call gives up once an attempt could no longer fit its deadline (queue-timeout)', async () => {
    const { clock, dependency, op } = limited({ concurrencyLimit: { maxInFlight: 1, maxQueue: 1 } });
    const first = dependency.execute(op(250), { idempotent: true, deadline: 1_000 });
    const second = dependency.execute(op(10), { idempotent: true, deadline: 350 }).catch((e: unknown) => e);
    await clock.advanceAsync(149);
    await clock.advanceAsync(1); // 350 − p99 200 = 150 ms in the queue at most
    expect(await second).toMatchObject({
      code: 'CONCURRENCY_LIMITED',
      reason: 'queue-timeout',
      waitedMs: 150,
    });
    await clock.runAllAsync();
    await first;
  });

  it('a caller that gives up while queued leaves the queue', async () => {
    const { clock, dependency, op } = limited({ concurrencyLimit: { maxInFlight: 1, maxQueue: 1 } });
    const first = dependency.execute(op(100), { idempotent: true });
    const controller = new AbortController();
    const second = dependency
      .execute(op(10), { idempotent: true, signal: controller.signal })
      .catch((e: unknown) => e);
    expect(dependency.concurrency()!.queued).toBe(1);
    controller.abort(new Error('gone'));
    expect(await second).toMatchObject({ message: 'gone' });
    expect(dependency.concurrency()!.queued).toBe(0);
    // The slot is free for a new call when the first ends.
    const third = dependency.execute(op(10), { idempotent: true });
    await clock.runAllAsync();
    await first;
    expect(await third).toBe('ok');
  });

  it('a retry takes the slot its failed attempt gave back; refused, the failure it would have retried is the cause', async () => {
    const one = limited({ concurrencyLimit: { maxInFlight: 1, maxQueue: 0 }, attempts: 3 });
    const refusedConnect = one.dependency
      .execute(
        one.op(10, () => {
          throw coded('ECONNREFUSED');
        }),
        { idempotent: true },
      )
      .catch((e: unknown) => e);
    await one.clock.runAllAsync();
    expect(one.stats().sent).toBe(3); // each retry on the slot the failed attempt released
    expect(await refusedConnect).toMatchObject({ code: 'ECONNREFUSED' });

    const two = limited({ concurrencyLimit: { maxInFlight: 2, maxQueue: 0 }, attempts: 2 });
    const failing = two.dependency
      .execute(
        two.op(10, () => {
          throw coded('ECONNRESET');
        }),
        { idempotent: true },
      )
      .catch((e: unknown) => e);
    await two.clock.advanceAsync(5);
    const busy = [two.dependency.execute(two.op(200), { idempotent: true })];
    await two.clock.advanceAsync(6); // the first attempt failed; its retry finds both slots... one taken
    busy.push(two.dependency.execute(two.op(200), { idempotent: true }).catch((e: unknown) => e) as never);
    await two.clock.runAllAsync();
    const error = (await failing) as ConcurrencyLimitError;
    expect(error).toBeInstanceOf(ConcurrencyLimitError);
    expect(error.reason).toBe('queue-full');
    expect((error.cause as { code?: string }).code).toBe('ECONNRESET');
    expect(two.stats().sent).toBe(3); // the failed attempt and the two others; the retry never went
    await Promise.all(busy);
  });

  it('a hedge takes a free slot or none (no-slot), and a refused hedge spends no budget', async () => {
    const { clock, dependency, op, events } = limited({
      concurrencyLimit: { maxInFlight: 1, maxQueue: 5 },
      hedge: { minDelayMs: 5, maxDelayMs: 60 },
      recorder: { minSamples: 10, windowMs: 1_000 },
    });
    for (let i = 0; i < 30; i += 1) {
      const warm = dependency.execute(op(10), { idempotent: true });
      await clock.advanceAsync(50);
      await warm;
    }
    // A full window of 10 ms answers behind: the live p95 arms a hedge at 10 ms.
    const before = dependency.budget.state().extras;
    const call = dependency.execute(op(250), { idempotent: true });
    await clock.runAllAsync();
    expect(await call).toBe('ok');
    const refused = events.filter((e) => e.type === 'limited' && e.kind === 'hedge');
    expect(refused).toHaveLength(1);
    expect(refused[0]).toMatchObject({ reason: 'no-slot', limit: 1, inFlight: 1 });
    expect(dependency.budget.state().extras).toBe(before);
  });

  it('an adaptive limit shrinks when the dependency slows down and refuses the excess', async () => {
    const clock = new FakeClock();
    const dependency = createDependency({
      name: 'slowing',
      p99Ms: 50,
      clock,
      concurrencyLimit: { adaptive: { initial: 20, windowMs: 500, minSamples: 5 }, maxQueue: 0 },
      defaultDeadlineMs: 10_000,
    });
    let latency = 10;
    let refused = 0;
    const pending: Promise<unknown>[] = [];
    for (let t = 0; t < 20_000; t += 2) {
      if (t === 10_000) latency = 100; // 10× slower: Little's law wants 10× the slots
      pending.push(
        dependency
          .execute((ctx) => fakeCall(clock, ctx, latency, () => 'ok'), { idempotent: true })
          .catch((e: unknown) => {
            if (e instanceof ConcurrencyLimitError) refused += 1;
          }),
      );
      await clock.advanceAsync(2);
    }
    await clock.runAllAsync();
    await Promise.all(pending);
    const state = dependency.concurrency()!;
    expect(state.adaptive).toBe(true);
    expect(state.limit).toBeLessThan(20);
    expect(refused).toBeGreaterThan(0);
  });
});
