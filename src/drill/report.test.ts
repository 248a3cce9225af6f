import { describe, expect, it } from 'vitest';
import type { RouteLoadResult } from './load.js';
import { resolveDrillOptions } from './options.js';
import { buildReport, renderReport } from './report.js';

const route = (ok: number, ended: number, p99Ms: number): RouteLoadResult => ({
  paths: ['/catalog'],
  ended,
  ok,
  non2xx: 0,
  errors: ended - ok,
  timeouts: ended - ok,
  successPct: ended > 0 ? (100 * ok) / ended : undefined,
  p50Ms: 5,
  p99Ms,
  maxMs: p99Ms,
});

describe('the drill verdict (SPEC V2, C6)', () => {
  const plan = resolveDrillOptions({});
  const samples = [5, 9, 7].map((running, i) => ({ epochMs: i, running, queued: 0 }));

  it('passes when the independent routes keep answering, and reports the pool by Little’s law', () => {
    const report = buildReport(
      plan,
      { dependent: route(20, 80, 500), independent: route(40, 40, 20) },
      100,
      samples,
      15,
    );
    expect(report.pass).toBe(true);
    expect(report.little).toEqual({ poolSize: 15, rps: 30, maxLatencyMs: 500, expectedBusy: 7, ok: true });
    expect(report.pool).toEqual({ connections: 15, meanBusy: 7, maxBusy: 9, maxQueued: 0 });
    expect(renderReport(report)).toMatch(/^PASS: the independent routes kept answering/m);
  });

  it('fails on the success rate, on the p99, and when nothing answered', () => {
    expect(
      buildReport(plan, { dependent: undefined, independent: route(39, 40, 20) }, 1, undefined, undefined)
        .reasons,
    ).toEqual(['independent routes: 97.5% succeeded, below 99.9%']);
    expect(
      buildReport(plan, { dependent: undefined, independent: route(40, 40, 1_500) }, 1, undefined, undefined)
        .reasons,
    ).toEqual(['independent routes: p99 1500 ms, above 1000 ms']);
    const none = buildReport(
      plan,
      { dependent: undefined, independent: route(0, 0, 0) },
      1,
      undefined,
      undefined,
    );
    expect(none.pass).toBe(false);
    expect(renderReport(none)).toMatch(/^FAIL: the independent routes did not answer a single request/m);
  });

  it('a naive timeout is named as what drains the pool', () => {
    const naive = resolveDrillOptions({ demoStack: 'naive' });
    const report = buildReport(
      naive,
      { dependent: route(0, 20, 0), independent: route(5, 20, 30) },
      15,
      undefined,
      undefined,
    );
    expect(report.little).toMatchObject({ maxLatencyMs: 500, expectedBusy: 600, ok: false });
    expect(renderReport(report)).toContain('the pool runs dry');
  });
});
