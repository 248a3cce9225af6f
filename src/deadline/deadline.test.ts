import { getEventListeners } from 'node:events';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { MAX_TIMER_DELAY_MS } from '../clock/clock.js';
import { FakeClock } from '../clock/fake.js';
import { systemClock } from '../clock/system.js';
import { isDeadlineExceeded } from '../errors/guards.js';
import { Deadline, writeDeadlineHeaders } from './deadline.js';

const EPOCH = 1_700_000_000_000;

describe('Deadline', () => {
  it('counts down on the monotonic clock, never below zero', () => {
    const clock = new FakeClock();
    const d = Deadline.after(1_900, { clock });
    expect(d.remainingMs()).toBe(1_900);
    clock.advance(1_000);
    expect(d.remainingMs()).toBe(900);
    expect(d.expired()).toBe(false);
    clock.advance(5_000);
    expect(d.remainingMs()).toBe(0);
    expect(d.expired()).toBe(true);
  });

  it('reads the time left at a given reading of its own clock, and reads anew for another clock', () => {
    const clock = new FakeClock();
    const other = new FakeClock({ now: 5_000 });
    const d = Deadline.after(1_000, { clock });
    expect(d.remainingMsAt(400, clock)).toBe(600);
    expect(d.remainingMsAt(2_000, clock)).toBe(0);
    clock.advance(100);
    expect(d.remainingMsAt(other.now(), other)).toBe(900);
  });

  it('treats NaN and negative durations as already expired', () => {
    const clock = new FakeClock();
    expect(Deadline.after(Number.NaN, { clock }).expired()).toBe(true);
    expect(Deadline.after(-10, { clock }).remainingMs()).toBe(0);
  });

  it('is created from a wall-clock epoch and written back to it', () => {
    const clock = new FakeClock({ epoch: EPOCH });
    const d = Deadline.at(EPOCH + 1_500, { clock });
    expect(d.remainingMs()).toBe(1_500);
    expect(d.epochMs()).toBe(EPOCH + 1_500);
    expect(d.toHeaders()).toEqual({ 'x-deadline-epoch-ms': String(EPOCH + 1_500) });
    expect(Deadline.at(EPOCH - 10, { clock }).expired()).toBe(true);
  });

  it('survives a wall-clock jump: remaining time follows the monotonic clock', () => {
    const clock = new FakeClock({ epoch: EPOCH });
    const d = Deadline.after(1_000, { clock });
    clock.skewWall(60_000);
    expect(d.remainingMs()).toBe(1_000);
    expect(d.epochMs()).toBe(EPOCH + 61_000);
  });

  it('combines with min, cap and slice without ever moving later', () => {
    const clock = new FakeClock();
    const outer = Deadline.after(1_000, { clock });
    const inner = Deadline.after(300, { clock });
    expect(outer.min(inner)).toBe(inner);
    expect(inner.min(outer)).toBe(inner);
    expect(outer.min(undefined)).toBe(outer);
    expect(outer.cap(2_000)).toBe(outer);
    expect(outer.cap(400).remainingMs()).toBe(400);
    expect(outer.slice(250).remainingMs()).toBe(250);
    clock.advance(900);
    expect(outer.slice(250).remainingMs()).toBe(100);
  });

  it('writes grpc-timeout and the envoy header on request', () => {
    const clock = new FakeClock({ epoch: EPOCH });
    const d = Deadline.after(1_234.6, { clock });
    expect(d.toHeaders({ epochMs: false, grpcTimeout: true, envoy: true })).toEqual({
      'grpc-timeout': '1234m',
      'x-envoy-expected-rq-timeout-ms': '1234',
    });
    expect(d.toHeaders({ epochMs: 'x-my-deadline' })).toEqual({ 'x-my-deadline': String(EPOCH + 1_234) });
  });

  it('never writes an envoy timeout below 1 ms, nor a grpc-timeout of 0 (#14)', () => {
    const clock = new FakeClock({ epoch: EPOCH });
    const all = { grpcTimeout: true, envoy: true } as const;
    // Before: `x-envoy-expected-rq-timeout-ms: 0` (Envoy: no timeout) and `grpc-timeout: 0m` (expired).
    expect(Deadline.after(0.5, { clock }).toHeaders(all)).toEqual({
      'x-deadline-epoch-ms': String(EPOCH),
      'grpc-timeout': '500u',
      'x-envoy-expected-rq-timeout-ms': '1',
    });
    expect(Deadline.after(0.0005, { clock }).toHeaders(all)['grpc-timeout']).toBe('500n');
    const gone = Deadline.after(10, { clock });
    clock.advance(50);
    expect(gone.toHeaders(all)).toEqual({
      'x-deadline-epoch-ms': String(EPOCH + 10),
      'grpc-timeout': '1n',
      'x-envoy-expected-rq-timeout-ms': '1',
    });
  });

  it('sends no header for an endless deadline, and the timer cap for a deadline further away (#14)', () => {
    const clock = new FakeClock({ epoch: EPOCH });
    const all = { grpcTimeout: true, envoy: true } as const;
    // Before: `grpc-timeout: 0m` and `x-deadline-epoch-ms: Infinity`.
    expect(Deadline.after(Number.POSITIVE_INFINITY, { clock }).toHeaders(all)).toEqual({});
    expect(Deadline.after(1e15, { clock }).toHeaders(all)).toEqual({
      'x-deadline-epoch-ms': String(EPOCH + MAX_TIMER_DELAY_MS),
      'grpc-timeout': '2147483S',
      'x-envoy-expected-rq-timeout-ms': String(MAX_TIMER_DELAY_MS),
    });
  });

  describe('signal', () => {
    it('is lazy: no timer until first read, then exactly one', () => {
      const clock = new FakeClock();
      const d = Deadline.after(100, { clock });
      expect(clock.pendingTimers()).toBe(0);
      const s = d.signal;
      expect(d.signal).toBe(s);
      expect(clock.pendingTimers()).toBe(1);
      expect(getEventListeners(s, 'abort')).toHaveLength(0);
    });

    it('aborts at the deadline with a DeadlineExceededError', () => {
      const clock = new FakeClock();
      const d = Deadline.after(100, { clock });
      const s = d.signal;
      clock.advance(99);
      expect(s.aborted).toBe(false);
      clock.advance(1);
      expect(s.aborted).toBe(true);
      expect(isDeadlineExceeded(s.reason)).toBe(true);
    });

    it('is already aborted for an expired deadline, with no timer', () => {
      const clock = new FakeClock();
      const d = Deadline.after(0, { clock });
      expect(d.signal.aborted).toBe(true);
      expect(clock.pendingTimers()).toBe(0);
    });

    it('re-arms past the largest timer delay instead of firing early', () => {
      const clock = new FakeClock();
      const d = Deadline.after(MAX_TIMER_DELAY_MS * 2 + 10, { clock });
      const s = d.signal;
      clock.advance(MAX_TIMER_DELAY_MS);
      expect(s.aborted).toBe(false);
      clock.advance(MAX_TIMER_DELAY_MS);
      expect(s.aborted).toBe(false);
      expect(clock.pendingTimers()).toBe(1);
      clock.advance(10);
      expect(s.aborted).toBe(true);
      expect(clock.pendingTimers()).toBe(0);
    });

    it('leaves no timer behind after 100k deadlines pass (fake clock)', () => {
      const clock = new FakeClock();
      const signals: AbortSignal[] = [];
      for (let i = 0; i < 100_000; i += 1) signals.push(Deadline.after(1 + (i % 500), { clock }).signal);
      expect(clock.pendingTimers()).toBe(100_000);
      clock.advance(500);
      expect(clock.pendingTimers()).toBe(0);
      expect(signals.every((s) => s.aborted && getEventListeners(s, 'abort').length === 0)).toBe(true);
    });

    it('leaves no active timer behind after 100k deadlines pass (system clock)', async () => {
      const timers = (): number => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;
      const before = timers();
      let aborted = 0;
      let allAborted: () => void = () => {};
      const done = new Promise<void>((resolve) => {
        allAborted = resolve;
      });
      const onAbort = (): void => {
        if (++aborted === 100_000) allAborted();
      };
      for (let i = 0; i < 100_000; i += 1) {
        // A process descheduled for 20 ms between after() and the first read of .signal (a loaded
        // machine) gets a signal that is already aborted, whose 'abort' event has fired: count it.
        const signal = Deadline.after(20, { clock: systemClock }).signal;
        if (signal.aborted) onAbort();
        else signal.addEventListener('abort', onAbort, { once: true });
      }
      // The timers are unref'd: they never hold the event loop, so they do not show as active at all.
      expect(timers()).toBe(before);
      // Generous bound for a loaded 2-core machine; resolves as soon as the last deadline fires.
      let guard: ReturnType<typeof systemClock.setTimer> | undefined;
      await Promise.race([
        done,
        new Promise<void>((resolve) => (guard = systemClock.setTimer(resolve, 10_000))),
      ]);
      if (guard !== undefined) systemClock.clearTimer(guard);
      expect(aborted).toBe(100_000);
      expect(timers()).toBeLessThanOrEqual(before);
    });
  });
});

describe('writeDeadlineHeaders: the one writer of every outgoing form (#25)', () => {
  const all = { grpcTimeout: true, envoy: true } as const;

  it('never says "no time" or "no limit" for a finite limit, and writes nothing for an endless one', () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.double({ min: -1e6, max: 5, noNaN: true }),
          fc.double({ min: 0, max: 1e12, noNaN: true }),
          fc.constantFrom(0, -0, Number.MIN_VALUE, 0.999, 1, Number.POSITIVE_INFINITY, Number.NaN),
        ),
        (leftMs) => {
          const pairs: string[] = [];
          const record: Record<string, string> = {};
          writeDeadlineHeaders(pairs, all, leftMs, EPOCH);
          writeDeadlineHeaders(record, all, leftMs, EPOCH);
          expect(Object.fromEntries(fromPairs(pairs))).toEqual(record);
          if (!(leftMs < Number.POSITIVE_INFINITY)) {
            expect(pairs).toEqual([]);
            return;
          }
          expect(Number(record['x-envoy-expected-rq-timeout-ms'])).toBeGreaterThanOrEqual(1);
          expect(record['x-envoy-expected-rq-timeout-ms']).toMatch(/^[1-9]\d*$/);
          expect(record['grpc-timeout']).toMatch(/^[1-9]\d{0,7}[HMSmun]$/);
          expect(record['x-deadline-epoch-ms']).toMatch(/^\d+$/);
        },
      ),
    );
  });

  it('writes the absolute and the relative forms apart, as prazo/http does (dispatch, then write)', () => {
    const both: string[] = [];
    writeDeadlineHeaders(both, all, 0.4, EPOCH, 'absolute');
    writeDeadlineHeaders(both, all, 0.4, EPOCH, 'relative');
    const once: string[] = [];
    writeDeadlineHeaders(once, all, 0.4, EPOCH);
    expect(both).toEqual(once);
    expect(once).toEqual([
      'x-deadline-epoch-ms',
      String(EPOCH),
      'grpc-timeout',
      '400u',
      'x-envoy-expected-rq-timeout-ms',
      '1',
    ]);
  });
});

function fromPairs(pairs: readonly string[]): [string, string][] {
  const out: [string, string][] = [];
  for (let i = 0; i + 1 < pairs.length; i += 2) out.push([pairs[i]!, pairs[i + 1]!]);
  return out;
}
