import { describe, expect, it } from 'vitest';
import { systemClock } from './system.js';

describe('systemClock', () => {
  it('reads monotonic and wall time', () => {
    const a = systemClock.now();
    const b = systemClock.now();
    expect(b).toBeGreaterThanOrEqual(a);
    expect(Math.abs(systemClock.epochNow() - Date.now())).toBeLessThan(1_000);
  });

  it('fires and clears real timers (unref does not stop a timer from firing)', async () => {
    let cleared = false;
    const t = systemClock.setTimer(() => {
      cleared = true;
    }, 5);
    systemClock.clearTimer(t);
    await new Promise<void>((resolve) => systemClock.setTimer(resolve, 20, { unref: true }));
    expect(cleared).toBe(false);
  });
});
