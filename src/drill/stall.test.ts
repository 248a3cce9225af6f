import { describe, expect, it } from 'vitest';
import { FakeClock } from '../clock/fake.js';
import { longestStall, startStallProbe } from './stall.js';

/** The drill's measure of the machine (issue 23): how late its own timer fires. */
describe('the stall probe', () => {
  it('records the ticks that fired late by at least 10 ms, with their lateness', async () => {
    const clock = new FakeClock();
    const probe = startStallProbe(clock);
    await clock.advanceAsync(200); // on time: nothing late on the fake clock
    // A stall: the loop is blocked 115 ms, so the tick due 20 ms later fires 95 ms late.
    clock.stall(115);
    await clock.advanceAsync(0);
    await clock.advanceAsync(100);
    const stalls = probe.stop();
    expect(stalls.map((s) => s.lateMs)).toEqual([95]);
    expect(longestStall(stalls, 0, clock.epochNow())).toBe(95);
    expect(longestStall(stalls, 0, stalls[0]!.epochMs - 1)).toBe(0);
  });

  it('keeps the longest when more stalls come than it holds, and stops', async () => {
    const clock = new FakeClock();
    const probe = startStallProbe(clock, { maxStalls: 3 });
    for (const late of [30, 10, 50, 20, 40]) {
      clock.stall(20 + late);
      await clock.advanceAsync(0);
    }
    const stalls = probe.stop();
    expect(stalls.map((s) => s.lateMs)).toEqual([30, 50, 40]);
    await clock.advanceAsync(1_000);
    expect(probe.stop()).toEqual(stalls); // nothing more once stopped
  });
});
