import { describe, expect, it } from 'vitest';
import { createHttpClient } from '../http/client.js';
import { startServer } from '../http/servers.test-helpers.js';
import { ATTR, METRICS } from './constants.js';
import { instrumentPrazo } from './instrument.js';
import { createSdk, pointValue } from './sdk.test-helpers.js';

/**
 * A live-calibrated client keeps reporting after it recalibrates (#14 item 7): instrumented through
 * `client.dependency` (before: 0 events after the first recalibration, the retry-ratio panel empty)
 * or through the client itself (before: 2 counters and no gauges), every attempt is counted and the
 * gauges show the timeouts in force now. Real sockets, real SDK.
 */
describe('prazo/otel follows a live client through its recalibrations', () => {
  it('counts every attempt and gauges the current timeouts, through client.dependency or the client', async () => {
    const server = await startServer((_req, res) => {
      setTimeout(() => res.end('ok'), 30);
    });
    const client = createHttpClient({
      name: 'supplier',
      origin: server.origin,
      p99Ms: 300,
      attempts: 1,
      recorder: { windowMs: 250 },
      live: { minP99Ms: 10, maxP99Ms: 600, minSamples: 3, baselineWindows: 1 },
    });
    const viaDependency = createSdk();
    const viaClient = createSdk();
    instrumentPrazo({ meterProvider: viaDependency.provider, dependencies: [client.dependency] });
    instrumentPrazo({ meterProvider: viaClient.provider, dependencies: [client] });
    const before = client.dependency.timeouts.responseMs;
    let calls = 0;
    const until = performance.now() + 900;
    while (performance.now() < until || client.dependency.timeouts.responseMs === before) {
      calls += 1;
      await client.request('/').then(
        (r) => r.body.dump(),
        () => {},
      );
      if (performance.now() > until + 5_000) break; // a machine too loaded to learn: fail below
    }
    const after = client.dependency.timeouts.responseMs;
    expect(after).not.toBe(before); // it did recalibrate (420 ms → about ceil(30-100 × 1.4))
    // A few calls under the new plan.
    for (let i = 0; i < 5; i += 1) {
      calls += 1;
      await client.request('/').then(
        (r) => r.body.dump(),
        () => {},
      );
    }
    const dep = { [ATTR.dependency]: 'supplier' };
    const phase = (p: string) => ({ ...dep, [ATTR.timeoutPhase]: p });
    for (const sdk of [viaDependency, viaClient]) {
      const got = await sdk.collect();
      const attempts = got.get(METRICS.attempts.name)?.dataPoints as { value: number }[] | undefined;
      expect(attempts?.reduce((n, p) => n + p.value, 0)).toBe(calls);
      expect(pointValue(got.get(METRICS.timeoutConfigured.name), phase('response'))).toBeCloseTo(
        // The plan now (the 5 calls above may have closed one more window on a loaded machine).
        client.dependency.timeouts.responseMs / 1000,
        9,
      );
      expect(pointValue(got.get(METRICS.timeoutConfigured.name), phase('connect'))).toBeCloseTo(
        client.dependency.timeouts.connectMs / 1000,
        9,
      );
      expect(pointValue(got.get(METRICS.retryRatio.name), dep)).toBe(0);
      await sdk.shutdown();
    }
    await client.close();
    await server.close();
  });
});
