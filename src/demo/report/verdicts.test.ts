import { describe, expect, it } from 'vitest';
import type { DemoResult } from '../run/demo.js';
import type { StackName } from '../types.js';
import type { StackMetrics } from './summary.js';
import { INSTANCE_BARS, verdicts } from './verdicts.js';

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
