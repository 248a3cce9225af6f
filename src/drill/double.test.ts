import { request } from 'undici';
import { describe, expect, it } from 'vitest';
import { FakeClock } from '../clock/fake.js';
import { startDouble } from './double.js';

describe('the dependency double (SPEC V2)', () => {
  it('answers every request successfully, only once its configured timeout has passed', async () => {
    const clock = new FakeClock();
    const double = await startDouble({ latencyMs: 350, clock });
    try {
      let answered = false;
      const pending = request(`${double.origin}/anything`).then((res) => {
        answered = true;
        return res;
      });
      while (double.arrivals() === 0) await new Promise((r) => setTimeout(r, 5));
      await clock.advanceAsync(349);
      expect(answered).toBe(false);
      expect(double.inFlight()).toBe(1);
      await clock.advanceAsync(1);
      const res = await pending;
      expect(res.statusCode).toBe(200);
      expect(await res.body.json()).toEqual({ double: true, latencyMs: 350 });
      expect(double.inFlight()).toBe(0);
      expect(clock.pendingTimers()).toBe(0);
    } finally {
      await double.close();
    }
  });

  it('releases held calls when the caller hangs up, and on close', async () => {
    const clock = new FakeClock();
    const double = await startDouble({ latencyMs: 30_000, clock });
    const controller = new AbortController();
    const call = request(`${double.origin}/x`, { signal: controller.signal }).catch(() => 'aborted');
    while (double.arrivals() === 0) await new Promise((r) => setTimeout(r, 5));
    controller.abort();
    expect(await call).toBe('aborted');
    while (double.inFlight() > 0) await new Promise((r) => setTimeout(r, 5));
    expect(clock.pendingTimers()).toBe(0);
    const held = request(`${double.origin}/y`).catch(() => 'closed');
    while (double.arrivals() < 2) await new Promise((r) => setTimeout(r, 5));
    await double.close();
    expect(await held).toBe('closed');
  });
});
