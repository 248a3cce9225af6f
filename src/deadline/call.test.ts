import { getEventListeners } from 'node:events';
import { describe, expect, it } from 'vitest';
import { FakeClock } from '../clock/fake.js';
import { isDeadlineExceeded, isDeadlineInsufficient } from '../errors/guards.js';
import { currentDeadline, runWithDeadline } from './ambient.js';
import { callWithDeadline } from './call.js';
import { Deadline } from './deadline.js';
import { deadlineFromHeaders } from './headers.js';

const EPOCH = 1_700_000_000_000;

describe('callWithDeadline', () => {
  it("plays the seed's propagation timeline: 1900 ms across gateway, orders, inventory → supplier", async () => {
    const clock = new FakeClock({ epoch: EPOCH });
    const t0 = clock.epochNow();
    const opts = { defaultMs: 2_000, maxMs: 2_000, clock };
    const supplierCalls: number[] = [];

    // Each hop reads the deadline from the headers it received, spends its own time, and calls on.
    const supplier = async (headers: Record<string, string>): Promise<string> => {
      const d = deadlineFromHeaders(headers, opts);
      supplierCalls.push(d.remainingMs());
      return 'stock';
    };
    const inventory = async (headers: Record<string, string>): Promise<string> => {
      const d = deadlineFromHeaders(headers, opts);
      return callWithDeadline(d, { name: 'supplier', p99Ms: 250, execute: (ctx) => supplier(ctx.headers) });
    };
    const orders = async (headers: Record<string, string>): Promise<string> => {
      const d = deadlineFromHeaders(headers, opts);
      clock.advance(120);
      return callWithDeadline(d, { name: 'inventory', p99Ms: 1, execute: (ctx) => inventory(ctx.headers) });
    };
    const gateway = Deadline.at(t0 + 1_900, { clock });
    clock.advance(40);
    expect(gateway.remainingMs()).toBe(1_860);

    const answer = await callWithDeadline(gateway, {
      name: 'orders',
      p99Ms: 1,
      execute: (ctx) => orders(ctx.headers),
    });
    expect(answer).toBe('stock');
    // The supplier saw the gateway's absolute deadline minus what gateway and orders spent.
    expect(supplierCalls).toEqual([1_740]);
  });

  it('cuts the call when 100 ms are left for a 250 ms p99: the supplier is never called (SPEC D4)', async () => {
    const clock = new FakeClock({ epoch: EPOCH });
    const inventoryDeadline = Deadline.at(clock.epochNow() + 100, { clock });
    let called = 0;
    const error = await callWithDeadline(inventoryDeadline, {
      name: 'supplier',
      p99Ms: 250,
      execute: async () => {
        called++;
        return 'never';
      },
    }).catch((e: unknown) => e);
    expect(called).toBe(0);
    expect(isDeadlineInsufficient(error)).toBe(true);
    if (!isDeadlineInsufficient(error)) return;
    expect(error).toMatchObject({
      code: 'DEADLINE_INSUFFICIENT',
      remainingMs: 100,
      neededMs: 250,
      dependency: 'supplier',
    });
    expect(clock.pendingTimers()).toBe(0);
  });

  it('gives the call its time left, a signal and the outgoing header', async () => {
    const clock = new FakeClock({ epoch: EPOCH });
    const d = Deadline.after(500, { clock });
    const seen = await callWithDeadline(d, {
      name: 'dep',
      p99Ms: 100,
      execute: async (ctx) => ({
        timeoutMs: ctx.timeoutMs,
        headers: ctx.headers,
        aborted: ctx.signal.aborted,
      }),
    });
    expect(seen).toEqual({
      timeoutMs: 500,
      headers: { 'x-deadline-epoch-ms': String(EPOCH + 500) },
      aborted: false,
    });
    expect(clock.pendingTimers()).toBe(0);
  });

  it('settles with DEADLINE_EXCEEDED at the deadline even when the call ignores its signal', async () => {
    const clock = new FakeClock();
    const d = Deadline.after(300, { clock });
    let signal: AbortSignal | undefined;
    const p = callWithDeadline(d, {
      name: 'slow',
      p99Ms: 100,
      execute: (ctx) => {
        signal = ctx.signal;
        return new Promise<string>((resolve) => clock.setTimer(() => resolve('late'), 10_000));
      },
    });
    const outcome = p.catch((e: unknown) => e);
    await clock.advanceAsync(300);
    const error = await outcome;
    expect(isDeadlineExceeded(error)).toBe(true);
    expect(error).toMatchObject({ dependency: 'slow', elapsedMs: 300 });
    expect(signal?.aborted).toBe(true);
    expect(signal?.reason).toBe(error);
    await clock.advanceAsync(10_000);
  });

  it("tells the caller's own abort apart from the deadline, and removes its listener", async () => {
    const clock = new FakeClock();
    const controller = new AbortController();
    const p = callWithDeadline(Deadline.after(1_000, { clock }), {
      name: 'dep',
      p99Ms: 10,
      signal: controller.signal,
      execute: (ctx) =>
        new Promise((_, reject) => ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason))),
    });
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(1);
    const reason = new Error('user navigated away');
    controller.abort(reason);
    await expect(p).rejects.toBe(reason);
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
    expect(clock.pendingTimers()).toBe(0);
  });

  it('passes errors through and turns a synchronous throw into a rejection', async () => {
    const clock = new FakeClock();
    const d = Deadline.after(1_000, { clock });
    const boom = new Error('boom');
    await expect(
      callWithDeadline(d, { name: 'x', p99Ms: 1, execute: async () => Promise.reject(boom) }),
    ).rejects.toBe(boom);
    await expect(
      callWithDeadline(d, {
        name: 'x',
        p99Ms: 1,
        execute: () => {
          throw boom;
        },
      }),
    ).rejects.toBe(boom);
    expect(clock.pendingTimers()).toBe(0);
  });
});

describe('ambient deadline', () => {
  it('is visible across awaits and only ever shortens when nested', async () => {
    const clock = new FakeClock();
    const outer = Deadline.after(1_000, { clock });
    expect(currentDeadline()).toBeUndefined();
    await runWithDeadline(outer, async () => {
      await Promise.resolve();
      expect(currentDeadline()).toBe(outer);
      runWithDeadline(Deadline.after(5_000, { clock }), () => {
        expect(currentDeadline()).toBe(outer);
      });
      const inner = Deadline.after(200, { clock });
      await runWithDeadline(inner, async () => {
        await new Promise((r) => setImmediate(r));
        expect(currentDeadline()).toBe(inner);
      });
    });
    expect(currentDeadline()).toBeUndefined();
  });
});
