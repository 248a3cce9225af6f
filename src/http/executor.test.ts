import { describe, expect, it } from 'vitest';
import type { LatencySnapshot } from '../latency/types.js';
import { OptionsValidator } from '../options/validator.js';
import { createHttpClient } from './client.js';
import { createLiveP99, type LiveCalibrationOptions } from './executor.js';
import { startServer } from './servers.test-helpers.js';

/** Live calibration (SPEC X2, C4): follow the healthy p99, within bounds, never a degraded window. */

const window = (p99: number, errors = 0, count = 200): LatencySnapshot => ({
  count,
  successes: count - errors,
  errors,
  timeouts: 0,
  p50: p99 / 2,
  p95: p99 * 0.9,
  p99,
  p999: p99 * 1.2,
  max: p99 * 1.3,
  startedAt: 0,
  endedAt: 10_000,
});

const live = (options: LiveCalibrationOptions = {}) => {
  const v = new OptionsValidator('test');
  const p99 = createLiveP99(100, options, v);
  return { p99, problems: v.problems };
};

describe('createLiveP99', () => {
  it('adopts the healthy p99, clamped to the bounds, and ignores small moves', () => {
    const { p99 } = live({ baselineWindows: 1 });
    expect(p99.observe(window(80), 100)).toBe(80);
    expect(p99.observe(window(85), 80)).toBeUndefined(); // 6% move: below the 10% change ratio
    expect(p99.observe(window(20), 80)).toBe(50); // clamped at the default floor, p99Ms / 2
    expect(p99.observe(window(20), 50)).toBeUndefined(); // already at the floor
    const wide = live({ baselineWindows: 1, minP99Ms: 10, maxP99Ms: 1_000 }).p99;
    expect(wide.observe(window(20), 100)).toBe(20);
    expect(wide.observe(window(28), 20)).toBe(28);
  });

  it('never learns from a degraded window: errors, or a p99 jump against the baseline (SPEC C4)', () => {
    const { p99 } = live({ baselineWindows: 3 });
    expect(p99.observe(window(60), 100)).toBe(60);
    expect(p99.observe(window(190, 20), 60)).toBeUndefined(); // 10% errors
    expect(p99.observe(window(190), 60)).toBeUndefined(); // 3× the baseline: a jump, not a new normal
    expect(p99.observe(window(50, 0, 10), 60)).toBeUndefined(); // too few calls to judge
  });

  it('lists every bad option', () => {
    expect(live({ minP99Ms: 500, maxP99Ms: 100, changeRatio: -1, maxErrorRate: 2 }).problems).toEqual([
      '`live.minP99Ms` (500) must not exceed `live.maxP99Ms` (100)',
      '`live.changeRatio` must be a finite number in [0, 10], got -1',
      'live: `maxErrorRate` must be a finite number in [0, 1], got 2',
    ]);
  });
});

describe('a live-calibrated client on real sockets', () => {
  it('moves its plan to the measured p99, keeps budget, recorder and listeners, and holds during errors', async () => {
    let failing = false;
    const server = await startServer((_req, res) => {
      if (failing) {
        res.writeHead(500);
        res.end();
      } else setTimeout(() => res.end('ok'), 30);
    });
    const client = createHttpClient({
      name: 'supplier',
      origin: server.origin,
      p99Ms: 300,
      attempts: 1,
      recorder: { windowMs: 250 },
      live: { minP99Ms: 10, maxP99Ms: 600, minSamples: 3, baselineWindows: 1 },
    });
    const first = client.dependency;
    let attempts = 0;
    client.on((e) => {
      if (e.type === 'attempt') attempts += 1;
    });
    const until = performance.now() + 900;
    let calls = 0;
    const call = async (): Promise<void> => {
      calls += 1;
      // A tight learned p99 can cut a slow call on a loaded machine: that is the plan working.
      await client.request('/').then(
        (r) => r.body.dump(),
        () => {},
      );
    };
    while (performance.now() < until) await call();
    const learned = client.dependency;
    expect(learned).toBe(first); // recalibrated in place (#14): whoever holds it sees the new plan
    expect(learned.p99Ms).toBeGreaterThanOrEqual(25); // the server's 30 ms, plus loopback and load
    expect(learned.p99Ms).toBeLessThan(150);
    expect(learned.timeouts.responseMs).toBe(Math.ceil(learned.p99Ms * 1.4));
    expect(learned.budget).toBe(first.budget);
    expect(learned.recorder).toBe(first.recorder);
    expect(attempts).toBe(calls); // the listener saw every call, before and after the swap

    failing = true;
    const failUntil = performance.now() + 700;
    while (performance.now() < failUntil) {
      await call();
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    expect(client.dependency.p99Ms).toBe(learned.p99Ms); // an incident teaches nothing
    await client.close();
    await server.close();
  });
});
