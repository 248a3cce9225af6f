import { describe, expect, it } from 'vitest';
import { FakeClock } from '../../../src/clock/fake.js';
import { Deadline } from '../../../src/deadline/deadline.js';
import { createDependency } from '../../../src/dependency/dependency.js';
import { coded, fakeCall, mulberry32 } from '../../../src/dependency/dependency.test-helpers.js';
import type { AttemptContext, DependencyEvent } from '../../../src/dependency/types.js';
import { isConcurrencyLimited, isDeadlineExceeded, isInvalidOptions } from '../../../src/errors/guards.js';

/**
 * Attacks on `concurrencyLimit.patience` (issue 25): an attempt that holds a slot waits up to the
 * call's deadline instead of the calibrated attempt timeout — but only while its response timeout
 * would not be retried and the dependency is answering (its throttle refuses nothing). On the fake
 * clock: the boundaries of that rule, a deadline far or endless, and bad input.
 */

/** Settles into the value or the error, recording when (the fake clock's reading). */
function watch(clock: FakeClock, call: Promise<unknown>) {
  const seen: { outcome: unknown; at: number | undefined } = { outcome: 'pending', at: undefined };
  call.then(
    (v) => {
      seen.outcome = v;
      seen.at = clock.now();
    },
    (e: unknown) => {
      seen.outcome = e;
      seen.at = clock.now();
    },
  );
  return seen;
}

/** An operation that answers after `ms` (honouring its signal). */
const slow = (clock: FakeClock, ms: number) => (ctx: AttemptContext) => fakeCall(clock, ctx, ms, () => 'ok');

/**
 * An operation that answers after `ms`, waited as two halves: a timer of the clock holds at most
 * 24.8 days, so one 26-day timer would itself answer at 24.8 days.
 */
const slowFar = (clock: FakeClock, ms: number) => (ctx: AttemptContext) =>
  fakeCall(clock, ctx, ms / 2, () => 'half').then(() => fakeCall(clock, ctx, ms / 2, () => 'ok'));

describe('patience attacks: when an attempt waits past its calibrated timeout', () => {
  it('a patient attempt of a slow dependency waits to the deadline, an impatient one is cut at p99 × slack', async () => {
    for (const patience of [true, false]) {
      const clock = new FakeClock();
      const dep = createDependency({
        name: 'slow',
        p99Ms: 100,
        clock,
        concurrencyLimit: { maxInFlight: 2, patience },
      });
      const seen = watch(clock, dep.execute(slow(clock, 1_500), { deadline: 2_000, idempotent: false }));
      await clock.advanceAsync(2_500);
      if (patience) {
        expect(seen.outcome).toBe('ok');
        expect(seen.at).toBe(1_500);
      } else {
        expect(seen.outcome).not.toBe('ok');
        expect(seen.at).toBe(dep.timeouts.responseMs);
      }
    }
  });

  it('is not patient when the response timeout would be retried (retryResponseTimeout), per dependency or per call', async () => {
    const clock = new FakeClock();
    const dep = createDependency({
      name: 'slow',
      p99Ms: 100,
      clock,
      attempts: 1,
      retryResponseTimeout: true,
      concurrencyLimit: { maxInFlight: 2, patience: true },
    });
    const seen = watch(clock, dep.execute(slow(clock, 1_500), { deadline: 2_000, idempotent: true }));
    await clock.advanceAsync(2_500);
    expect(seen.outcome).not.toBe('ok');
    expect(seen.at).toBe(dep.timeouts.responseMs);
  });

  it('is not patient against a dependency its throttle is refusing (waiting on a dead one is pure loss)', async () => {
    const clock = new FakeClock();
    const dep = createDependency({
      name: 'dying',
      p99Ms: 50,
      clock,
      random: mulberry32(3),
      attempts: 1,
      throttle: { minRequests: 3 },
      concurrencyLimit: { maxInFlight: 50, patience: true },
    });
    // Fail enough at once that the throttle refuses with some probability.
    for (let i = 0; i < 10; i += 1)
      watch(
        clock,
        dep.execute((ctx) =>
          fakeCall(clock, ctx, 1, () => {
            throw coded('ECONNREFUSED');
          }),
        ),
      );
    await clock.advanceAsync(5);
    expect(dep.throttling()!.probability).toBeGreaterThan(0);
    const events: DependencyEvent[] = [];
    dep.on((e) => events.push(e));
    let admitted: ReturnType<typeof watch> | undefined;
    for (let i = 0; i < 50 && admitted === undefined; i += 1) {
      const seen = watch(clock, dep.execute(slow(clock, 5_000), { deadline: 10_000, idempotent: false }));
      await clock.advanceAsync(0);
      if (seen.outcome === 'pending') admitted = seen;
    }
    expect(admitted).toBeDefined();
    const start = clock.now();
    await clock.advanceAsync(10_000);
    expect(admitted!.outcome).not.toBe('ok');
    expect(admitted!.at! - start).toBe(dep.timeouts.responseMs);
  });

  it('refuses a patience that is not a boolean, and patience without a limit', () => {
    const clock = new FakeClock();
    for (const patience of ['yes', 1, null])
      expect(() =>
        createDependency({
          name: 'x',
          p99Ms: 10,
          clock,
          concurrencyLimit: { maxInFlight: 1, patience } as never,
        }),
      ).toThrow(/patience/);
    let error: unknown;
    try {
      createDependency({ name: 'x', p99Ms: 10, clock, concurrencyLimit: { patience: true } as never });
    } catch (e) {
      error = e;
    }
    expect(isInvalidOptions(error)).toBe(true);
  });

  it('a patient attempt ends with DEADLINE_EXCEEDED at the deadline, and its slot is free again', async () => {
    const clock = new FakeClock();
    const dep = createDependency({
      name: 'hung',
      p99Ms: 100,
      clock,
      concurrencyLimit: { maxInFlight: 1, maxQueue: 0, patience: true },
    });
    const seen = watch(clock, dep.execute(slow(clock, 60_000), { deadline: 3_000, idempotent: false }));
    await clock.advanceAsync(1);
    // The one slot is held: a second call is refused at once, nothing waits.
    const second = watch(clock, dep.execute(slow(clock, 1), { deadline: 3_000, idempotent: false }));
    await clock.advanceAsync(0);
    expect(isConcurrencyLimited(second.outcome)).toBe(true);
    await clock.advanceAsync(3_000);
    expect(isDeadlineExceeded(seen.outcome), String(seen.outcome)).toBe(true);
    expect(seen.at).toBe(3_000);
    expect(dep.concurrency()!.inFlight).toBe(0);
  });
});

describe('patience attacks: a deadline further than a timer holds (24.8 days)', () => {
  const DAY = 86_400_000;

  // A timer clamps its delay to 2^31 − 1 ms: a patient attempt armed with `remaining` as one timer
  // was cut at 24.8 days with DEADLINE_EXCEEDED while 5 days were left. Its bound is now armed a
  // range at a time (src/dependency/attempt.ts), re-checked when each range ends.
  it('a patient attempt under a 30-day deadline is not cut at 24.8 days', async () => {
    const clock = new FakeClock();
    const dep = createDependency({
      name: 'batch',
      p99Ms: 100,
      clock,
      concurrencyLimit: { maxInFlight: 1, patience: true },
    });
    const seen = watch(
      clock,
      dep.execute(slowFar(clock, 26 * DAY), {
        deadline: Deadline.after(30 * DAY, { clock }),
        idempotent: false,
      }),
    );
    await clock.advanceAsync(25 * DAY);
    expect(seen.outcome).toBe('pending');
    await clock.advanceAsync(2 * DAY);
    expect(seen.outcome).toBe('ok');
  });

  // Under an endless deadline (`Deadline.after(Infinity)`, accepted by execute) the patient attempt's
  // bound is Infinity: no timer at all (it was clamped to 24.8 days, ending with DEADLINE_EXCEEDED a
  // deadline that never passes), and a call waiting for a slot waits while `remaining − p99` lasts,
  // re-armed a range at a time (it was refused CONCURRENCY_LIMITED, queue-timeout, at 24.8 days).
  it('neither a patient attempt nor the call waiting for its slot ends at 24.8 days under an endless deadline', async () => {
    const clock = new FakeClock();
    const dep = createDependency({
      name: 'batch',
      p99Ms: 100,
      clock,
      concurrencyLimit: { maxInFlight: 1, maxQueue: 1, patience: true },
    });
    const endless = Deadline.after(Number.POSITIVE_INFINITY, { clock });
    const first = watch(
      clock,
      dep.execute(slowFar(clock, 26 * DAY), { deadline: endless, idempotent: false }),
    );
    const second = watch(clock, dep.execute(slow(clock, 1), { deadline: endless, idempotent: false }));
    await clock.advanceAsync(25 * DAY);
    expect(first.outcome).toBe('pending');
    expect(second.outcome).toBe('pending');
    await clock.advanceAsync(2 * DAY);
    expect(first.outcome).toBe('ok');
    expect(second.outcome).toBe('ok');
  });
});
