import { once } from 'node:events';
import { createServer, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { sleep } from '../clock/clock.js';
import { FakeClock } from '../clock/fake.js';
import { systemClock } from '../clock/system.js';
import { Deadline } from '../deadline/deadline.js';
import { createDependency } from '../dependency/dependency.js';
import { InvalidOptionsError } from '../errors/options.js';
import { createServerEventHub } from '../server/events.js';
import { withIncomingDeadline } from '../server/node.js';
import { createOverrunTracker } from '../slo/overrun.js';
import { parseBudget } from '../slo/parse.js';
import { ATTR, METRICS as M } from './constants.js';
import { instrumentPrazo } from './instrument.js';
import { createSdk, pointValue, type SdkHarness } from './sdk.test-helpers.js';

/** The real prazo parts feeding the instrumentation: the executor, the server hub, the overrun tracker. */

let sdk: SdkHarness;
beforeEach(() => {
  sdk = createSdk();
});
afterEach(() => sdk.shutdown());

const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:1'), { code: 'ECONNREFUSED' });

describe('createDependency → metrics (SPEC R7, H3, D4, V1)', () => {
  it('an outage on the fake clock: extras stay within the budget, and the gauge says so', async () => {
    const clock = new FakeClock();
    const supplier = createDependency({
      name: 'supplier',
      p99Ms: 50,
      attempts: 3,
      clock,
      retryBudget: { maxRatio: 0.1, minPerSecond: 0 },
      random: () => 0,
      // The budget under test: with the adaptive throttle on, the outage's calls are refused before
      // any attempt (10 originals of 200, counted as `prazo.dependency.throttled`; instrument.test.ts).
      throttle: false,
    });
    instrumentPrazo({ meterProvider: sdk.provider, dependencies: [supplier] });
    const calls = [];
    for (let i = 0; i < 200; i += 1) {
      const call = supplier.execute(() => Promise.reject(refused), { idempotent: true });
      calls.push(call.catch((e: unknown) => e));
      await clock.advanceAsync(5);
    }
    await clock.runAllAsync();
    await Promise.all(calls);

    const got = await sdk.collect();
    const d = { [ATTR.dependency]: 'supplier' };
    const originals = pointValue(got.get(M.attempts.name), { ...d, [ATTR.attemptKind]: 'original' }) ?? 0;
    const retries = pointValue(got.get(M.attempts.name), { ...d, [ATTR.attemptKind]: 'retry' }) ?? 0;
    const refusals = pointValue(got.get(M.budgetRefusals.name), { ...d, [ATTR.attemptKind]: 'retry' }) ?? 0;
    expect(originals).toBe(200);
    expect(retries).toBeGreaterThan(0);
    expect(retries).toBeLessThanOrEqual(0.1 * originals);
    expect(refusals).toBeGreaterThan(100);
    const ratio = pointValue(got.get(M.retryRatio.name), d);
    expect(ratio).toBeGreaterThan(0);
    expect(ratio).toBeLessThanOrEqual(0.1);
    expect(ratio).toBeCloseTo(supplier.budget.state().ratio, 12);
    // The calibrated timeouts of the executor, in seconds.
    const phase = (p: string) => ({ ...d, [ATTR.timeoutPhase]: p });
    expect(pointValue(got.get(M.timeoutConfigured.name), phase('response'))).toBe(
      supplier.timeouts.responseMs / 1000,
    );
    expect(pointValue(got.get(M.timeoutConfigured.name), phase('connect'))).toBe(
      supplier.timeouts.connectMs / 1000,
    );
  });

  it('a deadline that cannot fit the p99 is a fast failure, counted, and no attempt is made', async () => {
    const clock = new FakeClock();
    const db = createDependency({ name: 'db', p99Ms: 100, clock });
    instrumentPrazo({ meterProvider: sdk.provider, dependencies: [db] });
    let ran = 0;
    const op = async () => {
      ran += 1;
    };
    await expect(
      db.execute(op, { idempotent: true, deadline: Deadline.after(20, { clock }) }),
    ).rejects.toThrow();
    expect(ran).toBe(0);
    const got = await sdk.collect();
    expect(pointValue(got.get(M.deadlineInsufficient.name), { [ATTR.dependency]: 'db' })).toBe(1);
    expect(got.get(M.attempts.name)?.dataPoints ?? []).toHaveLength(0);
  });
});

describe('prazo/server hub → metrics (SPEC D2, D7)', () => {
  it('counts wasted work and requests rejected as expired, from a real node:http server', async () => {
    const events = createServerEventHub();
    const otel = instrumentPrazo({ meterProvider: sdk.provider, servers: [{ name: 'orders', events }] });
    const handler = withIncomingDeadline(
      async (_req, res) => {
        // Finishes well after its 50 ms deadline, ignoring the signal: wasted work.
        await sleep(systemClock, 150);
        res.end('late');
      },
      { events, defaultMs: 50, maxMs: 50 },
    );
    const server = createServer(handler).listen(0, '127.0.0.1');
    await once(server, 'listening');
    const { port } = server.address() as AddressInfo;
    const get = (headers: Record<string, string>) =>
      new Promise<number>((resolve, reject) => {
        request({ host: '127.0.0.1', port, path: '/', headers }, (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode ?? 0));
        })
          .on('error', reject)
          .end();
      });
    try {
      expect(await get({ 'x-deadline-epoch-ms': String(systemClock.epochNow() - 1_000) })).toBe(504);
      await get({});
      // The `wasted-work` event is emitted when the response finishes, right after the client reads it.
      for (let i = 0; i < 50; i += 1) {
        const got = await sdk.collect();
        if (pointValue(got.get(M.wastedWork.name), { [ATTR.server]: 'orders' }) === 1) break;
        await sleep(systemClock, 20);
      }
      const got = await sdk.collect();
      const s = { [ATTR.server]: 'orders' };
      expect(pointValue(got.get(M.rejectedExpired.name), s)).toBe(1);
      expect(pointValue(got.get(M.wastedWork.name), s)).toBe(1);
      const wasted = pointValue(got.get(M.wastedWorkTime.name), s) ?? 0;
      expect(wasted).toBeGreaterThan(0.1);
      expect(wasted).toBeLessThan(5);
    } finally {
      otel.dispose();
      server.close();
    }
  });
});

describe('latency-budget overrun tracker → metrics (SPEC B3)', () => {
  const { budget } = parseBudget({
    endpoint: 'POST /orders',
    total_slo_ms: 800,
    components: [
      { name: 'gateway', kind: 'local', slice_ms: 30 },
      { name: 'inventory', kind: 'remote', slice_ms: 770, dependency: 'inventory' },
    ],
  });

  it('counts every observation and every overrun, exactly as the tracker judges them', async () => {
    const otel = instrumentPrazo({ meterProvider: sdk.provider });
    const original = createOverrunTracker({ budget: budget!, clock: new FakeClock() });
    const tracker = otel.trackSlices(original, 'POST /orders');
    const verdicts = [10, 31, 29, 45, 30].map((ms) => tracker.observe('gateway', ms));
    expect(verdicts).toEqual([false, true, false, true, false]);
    expect(tracker.observe('inventory', 900)).toBe(true);
    expect(tracker.observe('unknown-component', 5_000)).toBe(false);
    expect(tracker.observe('gateway', Number.NaN)).toBe(false);
    // The wrapped tracker is still the tracker: its own report sees the same runs.
    expect(tracker.report().find((c) => c.name === 'gateway')).toMatchObject({ calls: 5, overruns: 2 });

    const got = await sdk.collect();
    const at = (component: string) => ({ [ATTR.endpoint]: 'POST /orders', [ATTR.component]: component });
    expect(pointValue(got.get(M.sliceObservations.name), at('gateway'))).toBe(5);
    expect(pointValue(got.get(M.sliceOverruns.name), at('gateway'))).toBe(2);
    expect(pointValue(got.get(M.sliceOverruns.name), at('inventory'))).toBe(1);
    expect(got.get(M.sliceObservations.name)?.dataPoints).toHaveLength(2);

    otel.dispose();
    tracker.observe('gateway', 100);
    expect(pointValue((await sdk.collect()).get(M.sliceOverruns.name), at('gateway'))).toBe(2);
    expect(() => otel.trackSlices({} as never, 'x')).toThrow(InvalidOptionsError);
  });
});
