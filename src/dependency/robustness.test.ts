import { describe, expect, it, vi } from 'vitest';
import { FakeClock } from '../clock/fake.js';
import { createDependency } from './dependency.js';
import { coded, fakeCall } from './dependency.test-helpers.js';

/** Lets the promise reactions queued so far (and the ones they queue) run. */
const flush = async (): Promise<void> => {
  for (let i = 0; i < 5; i += 1) await new Promise<void>((resolve) => setImmediate(resolve));
};

describe('a classifyError that throws (a bug in the caller-supplied classifier)', () => {
  it('settles the call with the failure instead of crashing or hanging', async () => {
    const warn = vi.spyOn(process, 'emitWarning').mockImplementation(() => {});
    try {
      const clock = new FakeClock();
      const dep = createDependency({
        name: 'x',
        p99Ms: 10,
        clock,
        classifyError: () => {
          throw new Error('classifier bug');
        },
      });
      const reset = coded('ECONNRESET');
      let calls = 0;
      let outcome: unknown = 'pending';
      dep
        .execute(
          () => {
            calls += 1;
            return Promise.reject(reset);
          },
          { idempotent: true },
        )
        .then(
          () => (outcome = 'resolved'),
          (error: unknown) => (outcome = error),
        );
      await clock.runAllAsync();
      await flush();
      expect(outcome).toBe(reset);
      expect(calls).toBe(1);
      expect(clock.pendingTimers()).toBe(0);
      expect(warn).toHaveBeenCalled();
    } finally {
      warn.mockRestore();
    }
  });

  it('also when the failure is the attempt timer firing (no uncaught exception from the timer)', async () => {
    const warn = vi.spyOn(process, 'emitWarning').mockImplementation(() => {});
    try {
      const clock = new FakeClock();
      const dep = createDependency({
        name: 'x',
        p99Ms: 10,
        clock,
        classifyError: () => undefined as never, // not even a verdict
      });
      let outcome: unknown = 'pending';
      dep
        .execute((ctx) => fakeCall(clock, ctx, 1_000, () => 'late'), { idempotent: true })
        .then(
          () => (outcome = 'resolved'),
          (error: unknown) => (outcome = (error as Error).name),
        );
      await clock.runAllAsync();
      await flush();
      expect(outcome).toBe('ResponseTimeoutError');
      expect(clock.pendingTimers()).toBe(0);
    } finally {
      warn.mockRestore();
    }
  });
});

describe('an operation returning a thenable whose then() throws', () => {
  it('fails the attempt like a rejected promise (no synchronous throw from execute, no timer left)', async () => {
    const clock = new FakeClock();
    const dep = createDependency({ name: 'x', p99Ms: 10, clock, attempts: 2 });
    const bad = new Error('bad thenable');
    let calls = 0;
    const operation = () => {
      calls += 1;
      return {
        // biome-ignore lint/suspicious/noThenProperty: the test needs a hostile thenable on purpose
        then() {
          throw bad;
        },
      } as unknown as Promise<string>;
    };
    let outcome: unknown = 'pending';
    expect(() =>
      dep.execute(operation, { idempotent: true }).then(
        () => (outcome = 'resolved'),
        (error: unknown) => (outcome = error),
      ),
    ).not.toThrow();
    await clock.runAllAsync();
    await flush();
    expect(outcome).toBe(bad);
    expect(calls).toBe(1);
    expect(clock.pendingTimers()).toBe(0);
  });
});
