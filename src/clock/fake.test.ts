import { describe, expect, it } from 'vitest';
import { clampDelay, MAX_TIMER_DELAY_MS, sleep, type Timer } from './clock.js';
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

  it('stops a timer that re-arms itself at 0 ms: an Error naming the instant and the count, time left there', () => {
    const clock = new FakeClock();
    let fired = 0;
    let timer: Timer | undefined;
    // Gives up by itself after a million: before the bound, advance fired them all and returned.
    const rearm = (): void => {
      fired += 1;
      if (fired < 1_000_000) timer = clock.setTimer(rearm, 0);
    };
    clock.setTimer(rearm, 7);
    expect(() => clock.advance(100)).toThrow(
      new Error(
        'advance: 100000 timers fired at 7 ms and more are due there; a timer re-arms itself at 0 ms?',
      ),
    );
    expect([fired, clock.now(), clock.pendingTimers()]).toEqual([100_000, 7, 1]);
    // Cleared, the clock moves on as usual.
    clock.clearTimer(timer!);
    clock.advance(100);
    expect(clock.now()).toBe(107);
  });

  it('fires 100,000 timers due at one instant, and again at the next; the first error a callback threw is the cause', () => {
    const clock = new FakeClock();
    let fired = 0;
    for (let i = 0; i < 100_000; i += 1) clock.setTimer(() => fired++, 5);
    for (let i = 0; i < 100_000; i += 1) clock.setTimer(() => fired++, 6);
    clock.advance(10);
    expect(fired).toBe(200_000);
    const boom = new Error('boom');
    let loops = 0;
    const rearm = (): void => {
      loops += 1;
      if (loops < 1_000_000) clock.setTimer(rearm, 0); // ends by itself: before the bound, no error
    };
    clock.setTimer(() => {
      rearm();
      throw boom;
    }, 0);
    let caught: unknown;
    try {
      clock.advance(1);
    } catch (error) {
      caught = error;
    }
    expect((caught as Error).message).toMatch(/^advance: 100000 timers fired at 10 ms/);
    expect((caught as Error).cause).toBe(boom);
  });

  it('stops an afterIo callback that queues itself, and an advanceAsync or runAllAsync of a 0 ms loop', async () => {
    const clock = new FakeClock();
    let ran = 0;
    const again = (): void => {
      ran += 1;
      if (ran < 1_000_000) clock.afterIo(again);
    };
    clock.afterIo(again);
    expect(() => clock.advance(5)).toThrow(
      'advance: 100000 afterIo callbacks ran at 0 ms and more are queued; an afterIo callback queues itself?',
    );
    expect(ran).toBe(100_000);
    const async = new FakeClock();
    let fired = 0;
    const rearm = (): void => {
      fired += 1;
      if (fired < 150_000) async.setTimer(rearm, 0);
    };
    async.setTimer(rearm, 3);
    await expect(async.advanceAsync(10)).rejects.toThrow('advanceAsync: 100000 timers fired at 3 ms');
    expect(async.now()).toBe(3);
    fired = 0;
    await expect(async.runAllAsync()).rejects.toThrow('runAllAsync: 100000 timers fired at 3 ms');
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
