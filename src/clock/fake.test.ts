import { describe, expect, it } from 'vitest';
import { clampDelay, MAX_TIMER_DELAY_MS, sleep } from './clock.js';
import { FakeClock } from './fake.js';

describe('FakeClock', () => {
  it('fires timers in due order, ties in arming order, with now() at each due time', () => {
    const clock = new FakeClock();
    const seen: string[] = [];
    clock.setTimer(() => seen.push(`b@${clock.now()}`), 20);
    clock.setTimer(() => seen.push(`a@${clock.now()}`), 10);
    clock.setTimer(() => seen.push(`c@${clock.now()}`), 20);
    clock.advance(15);
    expect(seen).toEqual(['a@10']);
    expect(clock.now()).toBe(15);
    clock.advance(100);
    expect(seen).toEqual(['a@10', 'b@20', 'c@20']);
    expect(clock.now()).toBe(115);
  });

  it('runs timers armed by a firing timer when they fall inside the advance', () => {
    const clock = new FakeClock();
    const seen: number[] = [];
    clock.setTimer(() => {
      seen.push(clock.now());
      clock.setTimer(() => seen.push(clock.now()), 5);
    }, 10);
    clock.advance(20);
    expect(seen).toEqual([10, 15]);
  });

  it('cancels timers and counts the live ones', () => {
    const clock = new FakeClock();
    let fired = 0;
    const t = clock.setTimer(() => fired++, 10);
    clock.setTimer(() => fired++, 10);
    expect(clock.pendingTimers()).toBe(2);
    clock.clearTimer(t);
    clock.clearTimer(t);
    expect(clock.pendingTimers()).toBe(1);
    clock.advance(10);
    expect(fired).toBe(1);
    expect(clock.pendingTimers()).toBe(0);
  });

  it('moves wall and monotonic time together, and the wall alone on skew', () => {
    const clock = new FakeClock({ now: 5, epoch: 1_000_000 });
    clock.advance(10);
    expect(clock.now()).toBe(15);
    expect(clock.epochNow()).toBe(1_000_010);
    clock.skewWall(-500);
    expect(clock.now()).toBe(15);
    expect(clock.epochNow()).toBe(999_510);
  });

  it('lets async code arm its next timer between timers with advanceAsync', async () => {
    const clock = new FakeClock();
    const stamps: number[] = [];
    const loop = (async () => {
      for (let i = 0; i < 3; i += 1) {
        await sleep(clock, 100);
        stamps.push(clock.now());
      }
    })();
    await clock.advanceAsync(1_000);
    await loop;
    expect(stamps).toEqual([100, 200, 300]);
  });

  it('rejects a negative advance instead of moving backwards', () => {
    const clock = new FakeClock();
    expect(() => clock.advance(-1)).toThrow(RangeError);
    expect(() => clock.advance(Number.NaN)).toThrow(RangeError);
  });
});

describe('sleep', () => {
  it('rejects with the signal reason on abort and clears its timer', async () => {
    const clock = new FakeClock();
    const controller = new AbortController();
    const p = sleep(clock, 1_000, controller.signal);
    controller.abort(new Error('stop'));
    await expect(p).rejects.toThrow('stop');
    expect(clock.pendingTimers()).toBe(0);
  });

  it('rejects at once with an already aborted signal', async () => {
    const clock = new FakeClock();
    await expect(sleep(clock, 10, AbortSignal.abort('gone'))).rejects.toBe('gone');
    expect(clock.pendingTimers()).toBe(0);
  });
});

describe('clampDelay', () => {
  it('keeps delays within what a Node timer honours', () => {
    expect(clampDelay(-5)).toBe(0);
    expect(clampDelay(Number.NaN)).toBe(0);
    expect(clampDelay(12.5)).toBe(12.5);
    expect(clampDelay(2 ** 40)).toBe(MAX_TIMER_DELAY_MS);
    expect(clampDelay(Number.POSITIVE_INFINITY)).toBe(MAX_TIMER_DELAY_MS);
  });
});
