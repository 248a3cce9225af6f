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

  it('answers the requests that arrive after setLatency at the new latency, the earlier ones at theirs', async () => {
    const clock = new FakeClock();
    const double = await startDouble({ latencyMs: 350, clock });
    try {
      const first = request(`${double.origin}/a`).then(async (res) => (await res.body.json()) as object);
      while (double.arrivals() === 0) await new Promise((r) => setTimeout(r, 5));
      double.setLatency(0); // the drill's healthy phase: at once
      const second = request(`${double.origin}/b`).then(async (res) => (await res.body.json()) as object);
      while (double.arrivals() < 2) await new Promise((r) => setTimeout(r, 5));
      await clock.advanceAsync(0);
      expect(await second).toEqual({ double: true, latencyMs: 0 });
      expect(double.inFlight()).toBe(1); // the first still held for its 350 ms
      await clock.advanceAsync(350);
      expect(await first).toEqual({ double: true, latencyMs: 350 });
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
