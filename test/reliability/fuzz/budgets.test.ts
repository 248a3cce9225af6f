import fc from 'fast-check';
import { describe, expect, it, vi } from 'vitest';
import { parse, stringify } from 'yaml';
import {
  type DependencyProfile,
  deriveTimeouts,
  parseBudget,
  validateBudget,
} from '../../../src/slo/index.js';
import { anyText, FUZZ_TIMEOUT_MS, RUNS } from './arbitraries.js';

vi.setConfig({ testTimeout: FUZZ_TIMEOUT_MS });

/**
 * Fuzzing latency budget files (SPEC B1, B2): an endpoint's SLO and its slices, from a YAML file or a
 * config's `endpoints`. Through parse → validate → derive: never a throw, every problem with a path
 * and a message, and a budget (or derived timeouts) only with finite, positive numbers.
 */

const num = fc.oneof(
  { weight: 4, arbitrary: fc.integer({ min: 1, max: 2_000 }) },
  fc.double(),
  fc.constantFrom(0, -5, 1e308, Number.NaN, Number.POSITIVE_INFINITY),
  anyText,
);
const component = fc.record(
  {
    name: fc.oneof(fc.constantFrom('gateway', 'db', 'estoque', '__proto__', 'constructor', ''), anyText),
    kind: fc.oneof(
      fc.constantFrom('remote', 'local', 'long-tail', 'deterministic', 'toString', '__proto__'),
      anyText,
    ),
    slice_ms: num,
    sliceMs: num,
    dependency: fc.oneof(fc.constantFrom('inventory', 'db', 'missing', '', 'hasOwnProperty'), fc.integer()),
    extra: fc.anything({ maxDepth: 1 }),
  },
  { requiredKeys: [] },
);
const budget = fc.record(
  {
    endpoint: fc.oneof(fc.constantFrom('POST /pedidos', 'GET /x', ''), anyText, fc.integer()),
    total_slo_ms: num,
    totalSloMs: num,
    components: fc.oneof(
      { weight: 5, arbitrary: fc.array(component, { maxLength: 6 }) },
      fc.anything({ maxDepth: 1 }),
    ),
    componentes: fc.array(component, { maxLength: 2 }),
  },
  { requiredKeys: [] },
);
const profiles = new Map<string, DependencyProfile>([
  ['inventory', { p99Ms: 85, attempts: 2 }],
  ['db', { p99Ms: 150, attempts: 1 }],
  ['hasOwnProperty', { p99Ms: Number.NaN } as DependencyProfile],
]);

const finitePositive = (v: unknown): boolean => typeof v === 'number' && Number.isFinite(v) && v > 0;

function judge(raw: unknown): void {
  const parsed = parseBudget(raw, ['endpoints', 0]);
  for (const p of parsed.problems) {
    expect(Array.isArray(p.path)).toBe(true);
    expect(p.message.length).toBeGreaterThan(0);
  }
  if (parsed.budget === undefined) {
    expect(parsed.problems.some((p) => p.severity === 'error')).toBe(true);
    return;
  }
  expect(finitePositive(parsed.budget.totalSloMs)).toBe(true);
  for (const c of parsed.budget.components) {
    expect(finitePositive(c.sliceMs)).toBe(true);
    expect(['remote', 'local']).toContain(c.kind);
  }
  // No computed number prints as NaN; a component may itself be *named* "NaN", so blank the names out.
  const names = parsed.budget.components.map((c) => c.name).filter((n) => n.length > 0);
  for (const p of validateBudget(parsed.budget)) {
    const numbersOnly = names.reduce((text, n) => text.split(n).join('·'), p.message);
    expect(numbersOnly).not.toMatch(/NaN/);
  }
  const derived = deriveTimeouts(parsed.budget, profiles);
  for (const c of derived.components) {
    for (const v of [c.connectMs, c.responseMs, c.attempts])
      if (v !== undefined) expect(finitePositive(v)).toBe(true);
  }
}

describe('fuzz: latency budget files', () => {
  it('budget data of the file vocabulary, with hostile values', () => {
    fc.assert(fc.property(budget, judge), { numRuns: RUNS });
  });

  it('the same budgets written to YAML and read back, and arbitrary YAML text', () => {
    const text = fc.oneof(
      budget.map((b) => stringify(b)),
      anyText,
    );
    fc.assert(
      fc.property(text, (t) => {
        let raw: unknown;
        try {
          raw = parse(t, { maxAliasCount: 100 });
        } catch {
          return; // not YAML: the loader reports it before any budget is read
        }
        judge(raw);
      }),
      { numRuns: RUNS },
    );
  });

  it('the seed budget for POST /pedidos loads, adds up to its SLO, and derives finite timeouts', () => {
    const seed = {
      endpoint: 'POST /pedidos',
      total_slo_ms: 800,
      components: [
        { name: 'gateway', kind: 'local', slice_ms: 30 },
        { name: 'servico_pedido', kind: 'local', slice_ms: 120 },
        { name: 'banco_dados', kind: 'remote', slice_ms: 250, dependency: 'db' },
        { name: 'servico_estoque', kind: 'remote', slice_ms: 300, dependency: 'inventory' },
        { name: 'serializacao', kind: 'local', slice_ms: 100 },
      ],
    };
    const { budget: b, problems } = parseBudget(seed);
    expect(problems).toEqual([]);
    expect(validateBudget(b!)).toEqual([]);
    judge(seed);
  });
});
