import fc from 'fast-check';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { stringify } from 'yaml';
import { type ConfigCheck, checkConfigText } from '../../../src/config/index.js';
import { anyText, FUZZ_TIMEOUT_MS, RUNS, TEN_MB, timed } from '../fuzz/arbitraries.js';

vi.setConfig({ testTimeout: FUZZ_TIMEOUT_MS });

/**
 * Fuzzing the prazo.config.yaml loader (SPEC C7): documents built from the config's own vocabulary
 * with hostile values and prototype keys, YAML and JSON, plus arbitrary text. Never a throw; problems
 * with a line; a config only without errors, and then without NaN anywhere; Object.prototype intact.
 */

const hostileNumber = fc.oneof(
  fc.double(),
  fc.integer(),
  fc.constantFrom(0, -1, 1e308, Number.MAX_SAFE_INTEGER + 2, 0.5),
);
const leaf = fc.oneof(
  hostileNumber,
  anyText,
  fc.boolean(),
  fc.constant(null),
  fc.constantFrom('1e3', '.inf', '~'),
);
const value = fc.oneof(
  { weight: 4, arbitrary: leaf },
  fc.array(leaf, { maxLength: 3 }),
  fc.dictionary(anyText, leaf, { maxKeys: 2 }),
);
const forbidden = fc.constantFrom('__proto__', 'constructor', 'prototype');

/** An object with some of `keys` (and maybe a prototype key) mapped to hostile values. */
const section = (keys: readonly string[], nested: Record<string, fc.Arbitrary<unknown>> = {}) =>
  fc
    .tuple(
      fc.dictionary(fc.constantFrom(...keys), value, { maxKeys: keys.length }),
      fc.record(nested, { requiredKeys: [] }),
      fc.option(fc.tuple(forbidden, value), { freq: 8 }),
    )
    .map(([base, more, evil]) => {
      const o: Record<string, unknown> = { ...base, ...more };
      if (evil !== null)
        Object.defineProperty(o, evil[0], { value: evil[1], enumerable: true, writable: true });
      return o;
    });

const retryBudget = section(['windowMs', 'maxRatio', 'minPerSecond']);
const dependency = section(
  [
    'name',
    'p99Ms',
    'attempts',
    'slack',
    'forceSlack',
    'connectCapMs',
    'overheadMs',
    'defaultDeadlineMs',
    'hedge',
  ],
  { retryBudget, pool: section(['size', 'rps']), histogram: section(['file', 'metric', 'unit']) },
);
const endpoint = section(['endpoint', 'total_slo_ms'], {
  components: fc.array(section(['name', 'kind', 'slice_ms', 'dependency']), { maxLength: 4 }),
});
const config = section(['version'], {
  service: section(['name', 'defaultMs', 'maxMs', 'clockSkewMs']),
  calibration: section(['maxErrorRate', 'maxTimeoutRate', 'maxP99Jump', 'minSamples']),
  dependencies: fc.array(dependency, { maxLength: 3 }),
  endpoints: fc.array(endpoint, { maxLength: 2 }),
});

/** Histogram files named in a config: the fuzz hands back hostile text, or fails to read. */
const readText = (file: string): string => {
  if (file.length % 3 === 0) throw new Error(`cannot read ${file}`);
  return file.length % 3 === 1 ? 'x_seconds_bucket{le="0.1"} 5\nx_seconds_bucket{le="+Inf"} 5' : file;
};

function hasNaN(v: unknown, seen = new Set<unknown>()): boolean {
  if (typeof v === 'number') return Number.isNaN(v);
  if (v === null || typeof v !== 'object' || seen.has(v)) return false;
  seen.add(v);
  const values = v instanceof Map ? [...v.values()] : Object.values(v);
  return values.some((x) => typeof x !== 'function' && hasNaN(x, seen));
}

function judge(result: ConfigCheck): void {
  for (const p of result.problems) {
    expect(Number.isInteger(p.line) && p.line >= 0).toBe(true);
    expect(p.message.length).toBeGreaterThan(0);
  }
  const errors = result.problems.some((p) => p.severity === 'error');
  expect(result.config === undefined).toBe(errors);
  if (result.config !== undefined) expect(hasNaN(result.config)).toBe(false);
}

const pristine = (): void => {
  const probe = {} as Record<string, unknown>;
  expect(Object.keys(Object.prototype)).toEqual([]);
  expect(probe.polluted ?? probe.p99Ms ?? probe.name ?? probe.windowMs).toBeUndefined();
};
afterEach(pristine);

describe('fuzz: prazo.config.yaml', () => {
  it('YAML documents of the config vocabulary with hostile values and prototype keys', () => {
    fc.assert(
      fc.property(config, (doc) => {
        judge(checkConfigText(stringify(doc), { readText }));
        pristine();
      }),
      { numRuns: RUNS },
    );
  });

  it('the same documents as JSON (own __proto__ keys kept in the text)', () => {
    fc.assert(
      fc.property(config, (doc) => {
        const result = checkConfigText(JSON.stringify(doc), { file: 'prazo.config.json', readText });
        judge(result);
        if (JSON.stringify(doc).includes('"__proto__"')) expect(result.config).toBeUndefined();
        pristine();
      }),
      { numRuns: RUNS },
    );
  });

  it('near-valid documents load, and then hold no NaN anywhere (the success path is exercised)', () => {
    const sane = (max: number) =>
      fc.oneof({ weight: 5, arbitrary: fc.integer({ min: 1, max }) }, hostileNumber);
    const dep = fc.record(
      {
        p99Ms: sane(5_000),
        attempts: fc.oneof(fc.integer({ min: 1, max: 3 }), hostileNumber),
        slack: fc.oneof(fc.constantFrom(1.3, 1.4, 1.5), hostileNumber),
        defaultDeadlineMs: sane(60_000),
        retryBudget: fc.record({
          windowMs: sane(60_000),
          maxRatio: fc.constantFrom(0.1, 0.2, Number.NaN, -1),
        }),
      },
      { requiredKeys: ['p99Ms'] },
    );
    let loaded = 0;
    fc.assert(
      fc.property(fc.array(dep, { maxLength: 3 }), (deps) => {
        const doc = { version: 1, dependencies: deps.map((d, i) => ({ name: `dep-${i}`, ...d })) };
        const result = checkConfigText(stringify(doc), { readText });
        judge(result);
        if (result.config !== undefined && deps.length > 0) loaded += 1;
      }),
      { numRuns: RUNS },
    );
    expect(loaded).toBeGreaterThan(RUNS / 100);
  });

  it('arbitrary text and YAML fragments', () => {
    const fragment = fc.constantFrom(
      'a: &x [1]',
      '*x',
      '<<: *x',
      '!!js/function "f"',
      '? [a]\n: b',
      '---',
      '%YAML 1.1',
      '\t',
      '{',
      '[',
    );
    fc.assert(
      fc.property(fc.array(fc.oneof(anyText, fragment), { maxLength: 12 }), (parts) => {
        judge(checkConfigText(parts.join('\n'), { readText }));
      }),
      { numRuns: RUNS },
    );
  });

  it('refuses a 10 MB file in under 100 ms, and alias bombs at a bounded cost', () => {
    let result: ConfigCheck | undefined;
    expect(timed(() => (result = checkConfigText('#'.repeat(TEN_MB))))).toBeLessThan(100);
    expect(result!.config).toBeUndefined();
    const laughs = [
      'a: &a [x,x,x,x,x,x,x,x,x]',
      ...'bcdefgh'.split('').map((k, i) => `${k}: &${k} [${`*${'abcdefg'[i]},`.repeat(9)}]`),
    ];
    expect(timed(() => (result = checkConfigText(laughs.join('\n'))))).toBeLessThan(1_000);
    expect(result!.config).toBeUndefined();
  });
});
