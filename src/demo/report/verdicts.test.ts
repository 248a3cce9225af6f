import { describe, expect, it } from 'vitest';
import type { DemoResult } from '../run/demo.js';
import type { StackName } from '../types.js';
import type { StackMetrics } from './summary.js';
import { INSTANCE_BARS, OVERLOAD_BARS, verdicts } from './verdicts.js';

/** Issue 15's bars in the demo's closing lines (SPEC X1, X5): each one held or not, with its numbers. */

function metrics(stack: StackName, within: number, p99Ms: number, load: number): StackMetrics {
  return {
    stack,
    checkout: { withinDeadlinePct: within, p99Ms },
    catalog: { successPct: 100 },
    supplier: { amplification: load },
  } as unknown as StackMetrics;
}

function run(scenarios: Record<string, StackMetrics[]>): DemoResult {
  return {
    scenarios: Object.entries(scenarios).map(([name, stacks]) => ({ name, stacks })),
  } as unknown as DemoResult;
}

const healthy = [metrics('naive', 100, 200, 1), metrics('prazo', 100, 200, 1.05)];
const said = (result: DemoResult, id: string) => verdicts(result).find((v) => v.id === id);

describe('the verdicts of one bad instance among several (issue 15)', () => {
  it('one slow instance: within the deadline, p99 against the healthy scenario and the supplier load, each bar', () => {
    const ok = run({ healthy, tail: [metrics('naive', 100, 1_500, 1), metrics('prazo', 99.5, 260, 1.05)] });
    expect(said(ok, 'tail')).toMatchObject({ holds: true });
    expect(said(ok, 'tail')!.text).toContain('1.30× the healthy scenario');
    const cases: [number, number, number][] = [
      [99.4, 250, 1], // one checkout too many failed
      [100, 261, 1], // p99 above 1.3 × 200
      [100, 250, 1.06], // load
    ];
    for (const [within, p99, load] of cases) {
      const bad = run({ healthy, tail: [metrics('prazo', within, p99, load)] });
      expect(said(bad, 'tail'), `${within} ${p99} ${load}`).toMatchObject({ holds: false });
    }
    // Without the healthy scenario, the p99 is shown, not judged.
    const alone = run({ tail: [metrics('prazo', 100, 900, 1)] });
    expect(said(alone, 'tail')).toMatchObject({ holds: true });
    expect(said(alone, 'tail')!.text).toContain('run "healthy" too');
    expect(INSTANCE_BARS.tailWithinDeadlinePct).toBe(99.5);
  });

  it('one instance down / answering 503: prazo at 99% within the deadline; naive said to fall only when it does', () => {
    for (const id of ['instance-down', 'instance-503'] as const) {
      const held = run({ [id]: [metrics('naive', 100, 210, 1.5), metrics('prazo', 99, 213, 1.01)] });
      expect(said(held, id)).toMatchObject({ holds: true });
      expect(said(held, id)!.text).toContain('naive did not fall');
      expect(said(held, id)!.text).toContain('1.50× the load');
      const fell = run({ [id]: [metrics('naive', 80, 2_000, 3), metrics('prazo', 98.9, 213, 1.01)] });
      expect(said(fell, id)).toMatchObject({ holds: false });
      expect(said(fell, id)!.text).toContain('naive fell: 80.0%');
    }
    expect(said(run({ healthy }), 'instance-down')).toBeUndefined();
  });
});

/** A stack's numbers in an issue-23 scenario: what its verdicts read. */
function incident(
  stack: StackName,
  o: {
    catalogOk?: number;
    catalogP99?: number;
    maxBusy?: number;
    failedP50?: number | undefined;
    load?: number;
    within?: number;
    recovery?: StackMetrics['recovery'];
  },
): StackMetrics {
  return {
    stack,
    checkout: { withinDeadlinePct: o.within ?? 0, p99Ms: 400, failedP50Ms: o.failedP50 },
    catalog: { successPct: o.catalogOk ?? 100, p99Ms: o.catalogP99 ?? 12 },
    supplier: { amplification: o.load ?? 1 },
    pool: { connections: 15, maxBusy: o.maxBusy ?? 12 },
    wasted: { ms: 0, stillRunning: 0 },
    ...(o.recovery ? { recovery: o.recovery } : {}),
  } as unknown as StackMetrics;
}

describe('the verdicts of issue 23: at 5× the load, a slow supplier, recovery', () => {
  const calm = [incident('naive', { catalogP99: 10 }), incident('prazo', { catalogP99: 10 })];

  it('overload-hung and overload-slow: catalog, its p99 against healthy, the pool, failed checkouts, the load', () => {
    for (const id of ['overload-hung', 'overload-slow'] as const) {
      const good = incident('prazo', {
        catalogOk: 100,
        catalogP99: 20,
        maxBusy: 14,
        failedP50: 20,
        load: 1.1,
      });
      const held = run({
        healthy: calm,
        [id]: [incident('naive', { catalogOk: 20, catalogP99: 2_000, maxBusy: 15 }), good],
      });
      expect(said(held, id), id).toMatchObject({ holds: true });
      expect(said(held, id)!.text).toContain('catalog p99 20 ms = 2.00× the healthy scenario');
      expect(said(held, id)!.text).toContain('gateway pool 14/15 at most ✓ (< 15)');
      expect(said(held, id)!.text).toContain('naive: catalog 20.0%, p99 2.0 s, pool 15/15');
      const bars: Parameters<typeof incident>[1][] = [
        { catalogOk: 99.8 },
        { catalogP99: 21 }, // above 2 × 10 ms
        { maxBusy: 15 }, // the pool was full
        { failedP50: 21 },
        { load: 1.11 },
      ];
      for (const bad of bars) {
        const r = run({ healthy: calm, [id]: [incident('prazo', { failedP50: 4, ...bad })] });
        expect(said(r, id), `${id} ${JSON.stringify(bad)}`).toMatchObject({ holds: false });
        expect(said(r, id)!.text).toContain('✗');
      }
      // Without the healthy scenario, the catalog p99 is shown, not judged.
      const alone = run({ [id]: [incident('prazo', { catalogP99: 900, failedP50: 4 })] });
      expect(said(alone, id)).toMatchObject({ holds: true });
      expect(said(alone, id)!.text).toContain('run "healthy" too');
    }
    expect(said(run({ healthy: calm }), 'overload-hung')).toBeUndefined();
    // The healthy supplier at the same 5× rate, when it ran, is the baseline rather than "healthy".
    const same = run({
      healthy: calm,
      'overload-healthy': [incident('prazo', { catalogP99: 30 })],
      'overload-hung': [incident('prazo', { catalogP99: 50, failedP50: 4 })],
    });
    expect(said(same, 'overload-hung')).toMatchObject({ holds: true });
    expect(said(same, 'overload-hung')!.text).toContain(
      'catalog p99 50 ms = 1.67× "overload-healthy"\'s 30 ms ✓',
    );
    expect(OVERLOAD_BARS.failedP50Ms).toBe(20);
  });

  it('hung at the demo rate: failed checkouts p50 at most 20 ms (was 373 ms)', () => {
    const before = run({
      hung: [incident('naive', { failedP50: 2_000 }), incident('prazo', { failedP50: 373 })],
    });
    expect(said(before, 'hung-fails-fast')).toMatchObject({ holds: false });
    expect(said(before, 'hung-fails-fast')!.text).toContain(
      "failed checkouts p50 373 ms ✗ (≤ 20 ms); naive's 2.0 s",
    );
    const after = run({ hung: [incident('prazo', { failedP50: 3.8 })] });
    expect(said(after, 'hung-fails-fast')).toMatchObject({ holds: true });
  });

  it('slow: prazo within the deadline at least as often as naive, its catalog p99 within 2× healthy', () => {
    const issue = run({
      healthy: calm,
      slow: [incident('naive', { within: 37.5 }), incident('prazo', { within: 0 })],
    });
    expect(said(issue, 'slow-within-deadline')).toMatchObject({ holds: false });
    expect(said(issue, 'slow-within-deadline')!.text).toContain(
      "prazo answered 0.0% of checkouts within the deadline ✗ (≥ naive's 37.5%)",
    );
    const fixed = run({
      healthy: calm,
      slow: [incident('naive', { within: 37.5 }), incident('prazo', { within: 60 })],
    });
    expect(said(fixed, 'slow-within-deadline')).toMatchObject({ holds: true });
    const slowCatalog = run({
      healthy: calm,
      slow: [incident('naive', { within: 37.5 }), incident('prazo', { within: 60, catalogP99: 30 })],
    });
    expect(said(slowCatalog, 'slow-within-deadline')).toMatchObject({ holds: false });
    // Naive is the comparison: without it there is no verdict.
    expect(said(run({ slow: [incident('prazo', { within: 60 })] }), 'slow-within-deadline')).toBeUndefined();
  });

  it('recover: recoveryMs at most 3 s with the load at most 1.1× meanwhile', () => {
    const back = (recoveryMs: number | undefined, load: number | undefined) =>
      incident('prazo', { recovery: { returnMs: 4_000, recoveryMs, load } });
    expect(said(run({ recover: [back(1_200, 1.02)] }), 'recover')).toMatchObject({ holds: true });
    expect(said(run({ recover: [back(1_200, 1.02)] }), 'recover')!.text).toContain(
      '1.2 s after its return ✓ (≤ 3.0 s), supplier load meanwhile 1.02× ✓ (≤ 1.10×)',
    );
    expect(said(run({ recover: [back(3_100, 1)] }), 'recover')).toMatchObject({ holds: false });
    expect(said(run({ recover: [back(900, 1.2)] }), 'recover')).toMatchObject({ holds: false });
    const never = run({
      recover: [
        incident('naive', { recovery: { returnMs: 4_000, recoveryMs: undefined, load: undefined } }),
        back(undefined, undefined),
      ],
    });
    expect(said(never, 'recover')).toMatchObject({ holds: false });
    expect(said(never, 'recover')!.text).toContain('not again before the load ended ✗');
    expect(said(never, 'recover')!.text).toContain('naive: not recovered before the load ended');
  });
});
