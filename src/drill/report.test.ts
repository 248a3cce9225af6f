import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { RouteLoadResult } from './load.js';
import { resolveDrillOptions } from './options.js';
import { buildReport, type HealthyPhase, isDry, p99Bound, renderReport } from './report.js';

const route = (ok: number, ended: number, p99Ms: number, p50Ms = 5): RouteLoadResult => ({
  paths: ['/catalog'],
  ended,
  ok,
  non2xx: 0,
  errors: ended - ok,
  timeouts: ended - ok,
  successPct: ended > 0 ? Math.round((1e4 * ok) / ended) / 100 : undefined,
  p50Ms,
  p99Ms,
  maxMs: p99Ms,
});

const sample = (running: number, queued = 0, epochMs = 0) => ({ epochMs, running, queued });

/** A healthy phase whose independent routes answered with this p99. */
const healthy = (p99Ms: number, ok = 30): HealthyPhase => ({
  durationS: 3,
  dependent: undefined,
  independent: route(ok, 30, p99Ms),
  pool: undefined,
});

describe('the drill verdict (SPEC V2, C6)', () => {
  const plan = resolveDrillOptions({});
  const samples = [5, 9, 7].map((running, i) => sample(running, 0, i));

  it('passes when the independent routes keep answering, and reports the pool by Little’s law', () => {
    const report = buildReport(
      plan,
      { dependent: route(20, 80, 500), independent: route(40, 40, 20) },
      100,
      samples,
      15,
      healthy(40),
    );
    expect(report.pass).toBe(true);
    expect(report.little).toEqual({ poolSize: 15, rps: 30, maxLatencyMs: 500, expectedBusy: 7, ok: true });
    expect(report.pool).toEqual({
      connections: 15,
      meanBusy: 7,
      maxBusy: 9,
      maxQueued: 0,
      drySamples: 0,
      samples: 3,
      ranDry: false,
    });
    expect(report.thresholds.maxP99Ms).toBe(80); // 2 × the healthy 40 ms
    expect(renderReport(report)).toMatch(
      /^PASS: the independent routes kept answering \(≥ 99.9%, p99 ≤ 80 ms: 2× the healthy 40 ms\); the pool never ran dry/m,
    );
  });

  // The flat 1 s bound was the old rule; the p99 is now judged against the same run's healthy phase
  // (issue 23), and an absolute ceiling applies only when given (`maxP99Ms`).
  it('fails on the success rate, on the p99 against the healthy phase, and when nothing answered', () => {
    expect(
      buildReport(plan, { dependent: undefined, independent: route(39, 40, 20) }, 1, undefined, undefined)
        .reasons,
    ).toEqual(['independent routes: 97.5% succeeded, below 99.9%']);
    expect(
      buildReport(
        plan,
        { dependent: undefined, independent: route(40, 40, 81) },
        1,
        undefined,
        undefined,
        healthy(40),
      ).reasons,
    ).toEqual(['independent routes: p99 81 ms, above 80 ms (2× the healthy 40 ms)']);
    const ceiling = resolveDrillOptions({ maxP99Ms: 1_000, healthyS: 0 });
    expect(
      buildReport(
        ceiling,
        { dependent: undefined, independent: route(40, 40, 1_500) },
        1,
        undefined,
        undefined,
      ).reasons,
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

  it('issue 23: a dry pool fails the drill, and a catalog 20× slower than healthy, though under 1 s', () => {
    // `prazo drill --demo-stack prazo --rate 100` before issue 23: 15 of 15 busy, 27 waiting, the
    // catalog at p50 138 ms (≈ 5 ms healthy), 100% answered within the old flat 1 s: PASS.
    const at100 = resolveDrillOptions({ rate: 100 });
    const dry = [sample(15, 27), sample(15, 20), sample(14, 3)];
    const report = buildReport(
      at100,
      { dependent: route(0, 1_000, 400), independent: route(100, 100, 400, 138) },
      700,
      dry,
      15,
      healthy(12),
    );
    expect(report.pass).toBe(false);
    expect(report.reasons).toEqual([
      'independent routes: p99 400 ms, above 60 ms (2× the healthy 12 ms, floor 60 ms)',
      'the pool ran dry: 15 of 15 connections busy at most, up to 27 request(s) waiting; no connection free in 3 of 3 samples',
    ]);
    // The pool alone fails it, even with the latency within its bound.
    const poolOnly = buildReport(
      at100,
      { dependent: route(0, 1_000, 400), independent: route(100, 100, 20) },
      700,
      [sample(15, 0)],
      15,
      healthy(12),
    );
    expect(poolOnly.reasons).toEqual([
      'the pool ran dry: 15 of 15 connections busy at most, up to 0 request(s) waiting; no connection free in 1 of 1 samples',
    ]);
    expect(renderReport(poolOnly)).toMatch(/^FAIL: the pool ran dry/m);
  });

  it('a request waiting while a connection is free is a connect under way, not a dry pool', () => {
    expect(isDry(sample(2, 1), 15)).toBe(false); // measured in a healthy phase: 1 pending, 2 of 15 busy
    expect(isDry(sample(14, 1), 15)).toBe(false);
    expect(isDry(sample(14, 2), 15)).toBe(true); // 16 requests for 15 connections: one waited
    expect(isDry(sample(15, 0), 15)).toBe(true);
  });

  it('the p99 bound: 2× the healthy p99, never under the 60 ms floor, + the machine’s stall, never over a given ceiling', () => {
    fc.assert(
      fc.property(
        fc.option(fc.integer({ min: 0, max: 100_000 }), { nil: undefined }),
        fc.option(fc.integer({ min: 1, max: 100_000 }), { nil: undefined }),
        fc.integer({ min: 0, max: 5_000 }),
        (healthyP99, ceiling, stall) => {
          const b = p99Bound(healthyP99, ceiling, stall);
          if (healthyP99 === undefined) expect(b.ms).toBe(ceiling);
          else {
            const relative = Math.max(2 * healthyP99, 60) + stall;
            expect(b.ms).toBe(ceiling === undefined ? relative : Math.min(relative, ceiling));
          }
        },
      ),
    );
    // sub-10 ms noise: a 5 ms healthy p99 allows 60 ms, not 10
    const fast = resolveDrillOptions({});
    const judged = (p99: number) =>
      buildReport(fast, { dependent: undefined, independent: route(40, 40, p99) }, 1, [], 15, healthy(5));
    expect(judged(60).pass).toBe(true);
    expect(judged(61).pass).toBe(false);
  });

  it('a healthy phase that misses the bars is a warning, not a failure: its dependency answered at once', () => {
    const sick: HealthyPhase = {
      durationS: 3,
      dependent: undefined,
      independent: route(16, 30, 950),
      pool: {
        connections: 15,
        meanBusy: 9.7,
        maxBusy: 15,
        maxQueued: 7,
        drySamples: 4,
        samples: 58,
        ranDry: true,
      },
    };
    const report = buildReport(
      plan,
      { dependent: undefined, independent: route(100, 100, 36) },
      1,
      [sample(14)],
      15,
      sick,
    );
    // Measured at a load average of 7: the healthy phase's pool 15 of 15 in 1 of 49 samples, its
    // catalog p99 249 ms, the double answering at once — the machine, not the incident.
    expect(report.pass).toBe(true);
    expect(report.reasons).toEqual([]);
    expect(report.warnings).toEqual([
      'healthy phase: independent routes: 53.33% succeeded, below 99.9%',
      'healthy phase: the pool ran dry: 15 of 15 connections busy at most, up to 7 request(s) waiting; no connection free in 4 of 58 samples',
    ]);
    expect(renderReport(report)).toContain(
      'warning: healthy phase: the pool ran dry: 15 of 15 connections busy at most, up to 7 request(s) waiting; no connection free in 4 of 58 samples (the dependency answered at once',
    );
    // The incident is judged as strictly as ever: its own dry pool fails.
    const dry = buildReport(
      plan,
      { dependent: undefined, independent: route(100, 100, 36) },
      1,
      [sample(15)],
      15,
      sick,
    );
    expect(dry.pass).toBe(false);
    expect(dry.reasons).toEqual([
      'the pool ran dry: 15 of 15 connections busy at most, up to 0 request(s) waiting; no connection free in 1 of 1 samples',
    ]);
  });

  it('widens the p99 bound by the machine’s longest stall during the incident, never the pool', () => {
    // `prazo drill --load 5` at a load average of 7: the catalog's p99 82 ms in the incident against a
    // quiet healthy phase's 20 ms would fail a 60 ms bound; the drill's own timer stalled 45 ms then.
    const at = 1_000_000;
    const machine = (lateMs: number) => ({
      stalls: [
        { epochMs: at + 500, lateMs: 12 },
        { epochMs: at + 5_000, lateMs },
      ],
      healthy: [at - 3_000, at] as const,
      incident: [at, at + 10_000] as const,
    });
    const judged = (p99: number, lateMs: number, samples = [sample(14, 0, at + 5_100)]) =>
      buildReport(
        plan,
        { dependent: undefined, independent: route(100, 100, p99) },
        1,
        samples,
        15,
        healthy(20),
        machine(lateMs),
      );
    expect(judged(82, 45).pass).toBe(true);
    expect(judged(82, 45).thresholds.p99).toMatchObject({ ms: 105, healthyP99Ms: 20, stallMs: 45 });
    expect(judged(82, 45).machine).toEqual({
      healthy: { stalls: 0, longestMs: 0 },
      incident: { stalls: 2, longestMs: 45 },
    });
    expect(renderReport(judged(82, 45))).toContain(
      'p99 ≤ 105 ms: 2× the healthy 20 ms, floor 60 ms, + a 45 ms stall of the machine',
    );
    expect(judged(82, 0).reasons).toEqual([
      'independent routes: p99 82 ms, above 72 ms (2× the healthy 20 ms, floor 60 ms, + a 12 ms stall of the machine)',
    ]);
    // A dry pool fails whatever the machine did; the reason says how much it stalled around it.
    const dry = judged(30, 150, [sample(15, 2, at + 5_100)]);
    expect(dry.pass).toBe(false);
    expect(dry.reasons).toEqual([
      'the pool ran dry: 15 of 15 connections busy at most, up to 2 request(s) waiting; no connection free in 1 of 1 samples (the machine stalled up to 150 ms around those samples)',
    ]);
    // A given ceiling is absolute: never widened.
    const ceiling = resolveDrillOptions({ maxP99Ms: 70 });
    expect(
      buildReport(
        ceiling,
        { dependent: undefined, independent: route(100, 100, 82) },
        1,
        [],
        15,
        healthy(20),
        machine(45),
      ).reasons,
    ).toEqual(['independent routes: p99 82 ms, above 70 ms']);
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
