import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { FakeClock } from '../clock/fake.js';
import { Deadline } from '../deadline/deadline.js';
import { deriveTimeouts } from './derive.js';
import { createOverrunTracker } from './overrun.js';
import { parseBudget } from './parse.js';
import type { LatencyBudget } from './types.js';
import { validateBudget } from './validate.js';

/** The seed's budget for POST /pedidos (003): SLO p99 800 ms. */
const seedBudget = {
  endpoint: 'POST /pedidos',
  total_slo_ms: 800,
  components: [
    { name: 'gateway', kind: 'local', slice_ms: 30 },
    { name: 'servico_pedido', kind: 'local', slice_ms: 120 },
    { name: 'banco_dados', kind: 'remote', slice_ms: 250 },
    { name: 'servico_estoque', kind: 'long-tail', slice_ms: 300, dependency: 'inventory' },
    { name: 'serializacao', kind: 'deterministic', slice_ms: 100 },
  ],
};

const parsed = (raw: unknown): LatencyBudget => {
  const r = parseBudget(raw);
  expect(r.problems).toEqual([]);
  return r.budget!;
};

describe('latency budgets (SPEC B1)', () => {
  it("accepts the seed's POST /pedidos budget: slices add up to 800, remote slices the largest", () => {
    const budget = parsed(seedBudget);
    expect(budget.components.map((c) => c.kind)).toEqual(['local', 'local', 'remote', 'remote', 'local']);
    expect(validateBudget(budget)).toEqual([]);
  });

  it('rejects slices that do not add up to the SLO, showing the sum', () => {
    const over = parsed({ ...seedBudget, total_slo_ms: 700 });
    expect(validateBudget(over)).toEqual([
      {
        path: ['components'],
        message:
          'slices exceed total_slo_ms by 100 ms: gateway 30 + servico_pedido 120 + banco_dados 250 + ' +
          'servico_estoque 300 + serializacao 100 = 800, SLO 700',
        severity: 'error',
      },
    ]);
    expect(validateBudget(parsed({ ...seedBudget, total_slo_ms: 900 }))[0]?.message).toContain(
      'fall short of',
    );
  });

  it('warns when a long-tail component gets a smaller slice than a deterministic one', () => {
    const components = seedBudget.components.map((c) =>
      c.name === 'banco_dados' ? { ...c, slice_ms: 100 } : c.name === 'gateway' ? { ...c, slice_ms: 180 } : c,
    );
    const problems = validateBudget(parsed({ ...seedBudget, components }));
    expect(problems).toHaveLength(1);
    expect(problems[0]).toMatchObject({ severity: 'warning', path: ['components', 2, 'slice_ms'] });
    expect(problems[0]!.message).toContain(
      'banco_dados gets 100 ms, not more than local (deterministic) gateway',
    );
  });

  it('reports every shape problem with its path', () => {
    const r = parseBudget({
      endpoint: '',
      total_slo_ms: -1,
      extra: 1,
      components: [{ name: 'a', kind: 'cloud', slice_ms: 0 }, 'x', { name: 'a', kind: 'local', slice_ms: 5 }],
    });
    expect(r.budget).toBeUndefined();
    expect(r.problems.map((p) => p.path.join('.'))).toEqual([
      'endpoint',
      'total_slo_ms',
      'extra',
      'components.0.kind',
      'components.0.slice_ms',
      'components.1',
    ]);
    expect(parseBudget([]).problems[0]!.message).toContain('mapping');
  });

  it('property: parseBudget never throws, whatever it is given', () => {
    fc.assert(
      fc.property(fc.anything(), (raw) => {
        const r = parseBudget(raw);
        expect(r.budget !== undefined || r.problems.some((p) => p.severity === 'error')).toBe(true);
      }),
    );
  });
});

describe('timeouts derived from the budget (SPEC B2)', () => {
  it('the remote slice is the deadline of calibrateTimeout: attempts fit the slice, the timeout comes from p99', () => {
    const budget = parsed(seedBudget);
    const deps = new Map([['inventory', { p99Ms: 100, attempts: 2 }]]);
    const derived = deriveTimeouts(budget, deps);
    expect(derived.problems).toEqual([
      {
        path: ['components', 3, 'slice_ms'],
        message: 'servico_estoque → inventory: deadline of 300 ms fits 1 attempt(s), not 2',
        severity: 'warning',
      },
    ]);
    const estoque = derived.components.find((c) => c.name === 'servico_estoque')!;
    // 2 × (140 + 30) = 340 > 300: one attempt of 140 ms fits the 300 ms slice
    expect(estoque).toMatchObject({ sliceMs: 300, responseMs: 140, connectMs: 70, attempts: 1 });
    expect(derived.components[0]).toMatchObject({ name: 'gateway', sliceMs: 30, warning: null });
  });

  it('reports a slice too small for one attempt as an error, and unknown dependencies', () => {
    const budget = parsed(seedBudget);
    const tight = deriveTimeouts(budget, new Map([['inventory', { p99Ms: 250 }]]));
    expect(tight.problems[0]).toMatchObject({ severity: 'error', path: ['components', 3, 'slice_ms'] });
    expect(tight.problems[0]!.message).toContain('infeasible');
    expect(deriveTimeouts(budget).problems[0]!.message).toBe(
      'unknown dependency inventory (not in dependencies)',
    );
  });

  it("a component's slice becomes a child deadline of the request's", () => {
    const clock = new FakeClock();
    const request = Deadline.after(800, { clock });
    clock.advance(100);
    const slice = request.slice(parsed(seedBudget).components[3]!.sliceMs);
    expect(slice.remainingMs()).toBe(300);
  });
});

describe('overrun tracking per component (SPEC B3)', () => {
  it('alarms on a component that overruns its slice frequently, as a rate, and forgets old windows', () => {
    const clock = new FakeClock();
    const alarms: string[] = [];
    const tracker = createOverrunTracker({
      budget: parsed(seedBudget),
      clock,
      windowMs: 10_000,
      onAlarm: (o) => alarms.push(`${o.name} ${(o.rate * 100).toFixed(0)}%`),
    });
    for (let i = 0; i < 100; i += 1) {
      tracker.observe('gateway', 10);
      expect(tracker.observe('banco_dados', i % 10 === 0 ? 400 : 200)).toBe(i % 10 === 0);
      clock.advance(50);
    }
    expect(alarms).toEqual(['banco_dados 10%']);
    const report = tracker.report();
    expect(report.find((r) => r.name === 'gateway')).toMatchObject({ calls: 100, overruns: 0, alarm: false });
    expect(report.find((r) => r.name === 'banco_dados')).toMatchObject({
      calls: 100,
      overruns: 10,
      rate: 0.1,
    });
    expect(tracker.alarms().map((a) => a.name)).toEqual(['banco_dados']);
    clock.advance(10_000);
    expect(tracker.alarms()).toEqual([]);
    expect(tracker.observe('nope', 5)).toBe(false);
  });

  it('needs minCalls before alarming', () => {
    const tracker = createOverrunTracker({ budget: parsed(seedBudget), clock: new FakeClock(), minCalls: 5 });
    for (let i = 0; i < 4; i += 1) tracker.observe('gateway', 100);
    expect(tracker.alarms()).toEqual([]);
    tracker.observe('gateway', 100);
    expect(tracker.alarms()).toHaveLength(1);
  });
});
