import { describe, expect, it } from 'vitest';
import { createRetryBudget } from '../budget/budget.js';
import { FakeClock } from '../clock/fake.js';
import { Deadline } from '../deadline/deadline.js';
import { RetryBudgetExhaustedError } from '../errors/budget.js';
import { DeadlineExceededError, DeadlineInsufficientError } from '../errors/deadline.js';
import { ConnectTimeoutError, ResponseTimeoutError } from '../errors/timeout.js';
import { createDependency } from './dependency.js';
import { coded, fakeCall } from './dependency.test-helpers.js';
import type { AttemptContext, DependencyEvent } from './types.js';

interface Response {
  readonly status: number;
  readonly headers?: Record<string, string>;
}

/** A dependency on a fake clock, with its events and the instants its attempts started. */
function setup(options: Partial<Parameters<typeof createDependency>[0]> = {}) {
  const clock = new FakeClock();
  const dep = createDependency({
    name: 'inventory',
    p99Ms: 100,
    attempts: 3,
    clock,
    random: () => 0.5,
    ...options,
  });
  const events: DependencyEvent[] = [];
  dep.on((e) => events.push(e));
  const starts: number[] = [];
  const contexts: AttemptContext[] = [];
  /** An operation answering each attempt from `script` (a value, or an Error to throw) after `ms`. */
  const scripted =
    <T>(script: readonly (T | Error)[], ms = 10) =>
    (ctx: AttemptContext): Promise<T> => {
      starts.push(clock.now());
      contexts.push(ctx);
      const step = script[Math.min(contexts.length - 1, script.length - 1)]!;
      return fakeCall(clock, ctx, ms, () => {
        if (step instanceof Error) throw step;
        return step as T;
      });
    };
  const settle = async <T>(p: Promise<T>) => {
    const result = p.then(
      (value) => ({ ok: true as const, value }),
      (error: unknown) => ({ ok: false as const, error }),
    );
    await clock.runAllAsync();
    return result;
  };
  return { clock, dep, events, starts, contexts, scripted, settle };
}

describe('attempts (SPEC R6, D4, D5)', () => {
  it('gives the operation its slice, connect timeout, attempt number and deadline headers', async () => {
    const { dep, contexts, scripted, settle } = setup();
    const r = await settle(dep.execute(scripted(['ok']), { idempotent: true, deadline: undefined }));
    expect(r).toEqual({ ok: true, value: 'ok' });
    const ctx = contexts[0]!;
    expect(dep.timeouts.responseMs).toBe(140);
    expect(ctx.timeoutMs).toBe(140);
    expect(ctx.connectTimeoutMs).toBe(70); // at most half the attempt (SPEC C2, R4)
    expect(ctx.attempt).toBe(1);
    expect(ctx.kind).toBe('original');
    expect(ctx.startedAt).toBe(0); // the fake clock's now() when the call began
    expect(ctx.byDeadline).toBe(false); // the 2 s default deadline leaves the calibrated 140 ms whole
    expect(Number(ctx.headers['x-deadline-epoch-ms'])).toBe(1_700_000_000_000 + 140);
  });

  it('bounds an attempt by the remaining deadline: min(attempt timeout, remaining)', async () => {
    const { clock, dep, contexts, scripted, settle } = setup();
    const deadline = Deadline.after(120, { clock });
    clock.advance(5);
    await settle(dep.execute(scripted(['ok']), { idempotent: true, deadline }));
    expect(contexts[0]).toMatchObject({ timeoutMs: 115, startedAt: 5, byDeadline: true });
  });

  it('does not touch the dependency when the deadline cannot fit its p99', async () => {
    const { clock, dep, events, starts, scripted, settle } = setup();
    const r = await settle(
      dep.execute(scripted(['ok']), { idempotent: true, deadline: Deadline.after(99, { clock }) }),
    );
    expect(starts).toEqual([]);
    expect(r.ok).toBe(false);
    expect(r.ok || r.error).toBeInstanceOf(DeadlineInsufficientError);
    expect(r.ok || (r.error as DeadlineInsufficientError).attempt).toBe(1);
    expect(events).toEqual([
      { type: 'deadline-insufficient', dependency: 'inventory', remainingMs: 99, neededMs: 100, attempt: 1 },
    ]);
    expect(dep.budget.state().originals).toBe(0);
  });

  it('does not start a retry that cannot finish, and names it', async () => {
    const { clock, dep, events, starts, scripted, settle } = setup();
    const deadline = Deadline.after(150, { clock });
    const r = await settle(
      dep.execute(scripted([coded('ECONNRESET'), 'ok'], 60), { idempotent: true, deadline }),
    );
    expect(starts).toEqual([0]);
    const error = r.ok ? undefined : (r.error as DeadlineInsufficientError);
    expect(error).toBeInstanceOf(DeadlineInsufficientError);
    expect(error?.attempt).toBe(2);
    expect(error?.remainingMs).toBe(90);
    expect(events.at(-1)).toMatchObject({ type: 'deadline-insufficient', attempt: 2, remainingMs: 90 });
  });

  it('cuts an attempt at its timeout even when the operation ignores its signal', async () => {
    const { clock, dep, settle } = setup({ attempts: 1 });
    let signal: AbortSignal | undefined;
    const r = await settle(
      dep.execute(
        (ctx) => {
          signal = ctx.signal;
          return new Promise<string>((resolve) => clock.setTimer(() => resolve('late'), 1_000));
        },
        { idempotent: true },
      ),
    );
    expect(r.ok ? r : r.error).toBeInstanceOf(ResponseTimeoutError);
    expect(signal?.aborted).toBe(true);
    expect(clock.now()).toBe(1_000);
  });

  it('fails with DeadlineExceededError when the deadline, not the timeout, cut the attempt', async () => {
    const { clock, dep, settle, scripted } = setup();
    const r = await settle(
      dep.execute(scripted(['slow'], 500), { idempotent: true, deadline: Deadline.after(120, { clock }) }),
    );
    expect(r.ok ? r : r.error).toBeInstanceOf(DeadlineExceededError);
  });

  it('fails with DeadlineExceededError when the deadline and the timeout fall on the same instant', async () => {
    const { clock, dep, events, settle, scripted } = setup({ attempts: 2 });
    const deadline = Deadline.after(dep.timeouts.responseMs, { clock });
    const r = await settle(dep.execute(scripted(['slow'], 500), { idempotent: true, deadline }));
    expect(r.ok ? r : r.error).toBeInstanceOf(DeadlineExceededError);
    expect(events).toContainEqual(expect.objectContaining({ type: 'attempt-end', phase: 'deadline' }));
  });
});

describe('retries (SPEC R2, R3, R4)', () => {
  it('retries a connect failure at once', async () => {
    const timing = { dependency: 'inventory', elapsedMs: 5, timeoutMs: 5 };
    const { dep, starts, scripted, settle } = setup();
    await settle(
      dep.execute(scripted([new ConnectTimeoutError(timing), coded('ECONNREFUSED'), 'ok'], 5), {
        idempotent: true,
      }),
    );
    expect(starts).toEqual([0, 5, 10]);
  });

  it('backs off with full jitter otherwise (random 0.5 → half the doubling ceiling)', async () => {
    const { dep, starts, scripted, settle } = setup();
    await settle(
      dep.execute(scripted([coded('ECONNRESET'), coded('ECONNRESET'), 'ok']), { idempotent: true }),
    );
    expect(starts).toEqual([0, 10 + 12.5, 22.5 + 10 + 25]);
  });

  it('returns the last failed result when attempts run out, draining the others', async () => {
    const { dep, starts, scripted, settle } = setup();
    const drained: Response[] = [];
    const r = await settle(
      dep.execute(scripted<Response>([{ status: 503 }, { status: 502 }, { status: 500 }]), {
        idempotent: true,
        classify: (res) => ({ retryable: res.status >= 500 }),
        discard: (res) => drained.push(res),
      }),
    );
    expect(starts).toHaveLength(3);
    expect(r).toEqual({ ok: true, value: { status: 500 } });
    expect(drained).toEqual([{ status: 503 }, { status: 502 }]);
  });

  it("waits exactly the server's Retry-After on a 429, not its own backoff", async () => {
    const { dep, events, starts, scripted, settle } = setup();
    const busy = Object.assign(new Error('busy'), { statusCode: 429, headers: { 'retry-after': '1' } });
    const r = await settle(dep.execute(scripted([busy, 'ok']), { idempotent: true }));
    expect(r).toEqual({ ok: true, value: 'ok' });
    expect(starts).toEqual([0, 10 + 1_000]);
    expect(events).toContainEqual({
      type: 'retry-after',
      dependency: 'inventory',
      waitMs: 1_000,
      honoured: true,
    });
  });

  it("takes a result's Retry-After from classify", async () => {
    const { dep, starts, scripted, settle } = setup();
    await settle(
      dep.execute(scripted<Response>([{ status: 503 }, { status: 200 }]), {
        idempotent: true,
        classify: (res) =>
          res.status === 503 ? { retryable: true, retryAfterMs: 300 } : { retryable: false },
      }),
    );
    expect(starts).toEqual([0, 310]);
  });

  it('waits a Retry-After longer than a timer can hold (30 days, under an endless deadline) in full', async () => {
    const { clock, dep, starts, scripted, settle } = setup();
    const days30 = 30 * 86_400_000; // past 2^31 - 1 ms (24.8 days): one timer would fire 5 days early
    await settle(
      dep.execute(scripted<Response>([{ status: 503 }, { status: 200 }]), {
        idempotent: true,
        deadline: Deadline.after(Number.POSITIVE_INFINITY, { clock }),
        classify: (res) =>
          res.status === 503 ? { retryable: true, retryAfterMs: days30 } : { retryable: false },
      }),
    );
    expect(starts).toEqual([0, 10 + days30]);
  });

  it("fails now with the server's answer when its Retry-After does not fit the deadline", async () => {
    const { clock, dep, events, starts, scripted, settle } = setup();
    const busy = Object.assign(new Error('busy'), { status: 503, headers: { 'retry-after': '5' } });
    const r = await settle(
      dep.execute(scripted([busy, 'ok']), { idempotent: true, deadline: Deadline.after(2_000, { clock }) }),
    );
    expect(r).toEqual({ ok: false, error: busy });
    expect(starts).toEqual([0]);
    expect(clock.now()).toBe(10);
    expect(events).toContainEqual({
      type: 'retry-after',
      dependency: 'inventory',
      waitMs: 5_000,
      honoured: false,
    });
  });

  it('names the deadline, not the server, when a Retry-After of 0 meets a deadline below the p99', async () => {
    const { clock, dep, events, starts, scripted, settle } = setup();
    const busy = Object.assign(new Error('busy'), { status: 429, headers: { 'retry-after': '0' } });
    const r = await settle(
      dep.execute(scripted([busy, 'ok'], 60), { idempotent: true, deadline: Deadline.after(150, { clock }) }),
    );
    expect(starts).toEqual([0]);
    const error = r.ok ? undefined : (r.error as DeadlineInsufficientError);
    expect(error).toBeInstanceOf(DeadlineInsufficientError);
    expect(error?.attempt).toBe(2);
    expect(events.filter((e) => e.type === 'retry-after')).toEqual([]);
    expect(events.at(-1)).toMatchObject({ type: 'deadline-insufficient', attempt: 2, remainingMs: 90 });
  });

  it('never retries a deliberate refusal, nor a response timeout unless asked', async () => {
    const { dep, starts, scripted, settle } = setup();
    const r = await settle(
      dep.execute(scripted([Object.assign(new Error('nope'), { status: 422 }), 'ok']), { idempotent: true }),
    );
    expect(r.ok).toBe(false);
    expect(starts).toHaveLength(1);

    const slow = setup({ attempts: 2 });
    await slow.settle(slow.dep.execute(slow.scripted(['late'], 1_000), { idempotent: true }));
    expect(slow.starts).toHaveLength(1);
    const optIn = setup({ attempts: 2 });
    await optIn.settle(
      optIn.dep.execute(optIn.scripted(['late'], 1_000), { idempotent: true, retryResponseTimeout: true }),
    );
    expect(optIn.starts).toEqual([0, 140 + 12.5]);
  });

  it('refuses a retry the budget cannot pay, with the failure as cause', async () => {
    const clock = new FakeClock();
    const budget = createRetryBudget({ clock, maxRatio: 0, minPerSecond: 0 });
    const { dep, events, starts, scripted, settle } = setup({ retryBudget: budget, clock } as never);
    const refused = coded('ECONNREFUSED');
    const r = await settle(dep.execute(scripted([refused, 'ok']), { idempotent: true }));
    expect(starts).toHaveLength(1);
    const error = r.ok ? undefined : (r.error as RetryBudgetExhaustedError);
    expect(error).toBeInstanceOf(RetryBudgetExhaustedError);
    expect(error?.cause).toBe(refused);
    expect(events).toContainEqual({ type: 'budget-refused', dependency: 'inventory', kind: 'retry' });
  });
});

describe('idempotency (SPEC R5)', () => {
  it('sends a non-idempotent call exactly once, whatever the failure', async () => {
    for (const failure of [
      coded('ECONNREFUSED'),
      coded('ECONNRESET'),
      Object.assign(new Error(), { status: 503 }),
    ]) {
      const { dep, starts, scripted, settle } = setup();
      const r = await settle(dep.execute(scripted([failure, 'ok']), { idempotent: false }));
      expect(r).toEqual({ ok: false, error: failure });
      expect(starts).toHaveLength(1);
    }
  });

  it('retries a call carrying an idempotency key, with the same key on every attempt', async () => {
    const { dep, contexts, scripted, settle } = setup();
    await settle(
      dep.execute(scripted([coded('ECONNRESET'), 'ok']), { idempotent: false, idempotencyKey: true }),
    );
    expect(contexts).toHaveLength(2);
    const key = contexts[0]!.headers['idempotency-key'];
    expect(key).toMatch(/^[0-9a-f-]{36}$/);
    expect(contexts[1]!.headers['idempotency-key']).toBe(key);
  });

  it('rejects an invalid key without calling', async () => {
    const { dep, starts, scripted, settle } = setup();
    const r = await settle(dep.execute(scripted(['ok']), { idempotent: false, idempotencyKey: 'a b' }));
    expect(r.ok ? r : (r.error as Error).message).toMatch(/idempotencyKey/);
    expect(starts).toHaveLength(0);
  });
});

describe('the caller (SPEC D5)', () => {
  it("aborts the attempt and rejects with the caller's reason", async () => {
    const { clock, dep, events, contexts, scripted } = setup();
    const controller = new AbortController();
    const pending = dep.execute(scripted(['ok'], 50), { idempotent: true, signal: controller.signal });
    const caught = pending.catch((error: Error) => error.message);
    await clock.advanceAsync(20);
    controller.abort(new Error('user left'));
    expect(await caught).toBe('user left');
    expect(contexts[0]!.signal.aborted).toBe(true);
    expect(events.at(-1)).toMatchObject({ type: 'attempt-end', outcome: 'cancelled' });
    await clock.advanceAsync(0); // the dependency's shared bound timer lets go once the loop turns
    expect(clock.pendingTimers()).toBe(0);
  });

  it('rejects at once with an already aborted signal', async () => {
    const { dep, starts, scripted, settle } = setup();
    const r = await settle(
      dep.execute(scripted(['ok']), { idempotent: true, signal: AbortSignal.abort('gone') }),
    );
    expect(r).toEqual({ ok: false, error: 'gone' });
    expect(starts).toHaveLength(0);
  });
});
