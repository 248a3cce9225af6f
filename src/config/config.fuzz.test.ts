import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { checkConfigText } from './load.js';

/** The loader on hostile input: problems, never a throw, a hang, a NaN, or a polluted prototype. */
const check = (text: string): void => {
  const { config, problems } = checkConfigText(text, { readText: () => 'x_seconds_bucket{le="+Inf"} 1\n' });
  for (const p of problems) {
    expect(Number.isInteger(p.line) && p.line >= 0).toBe(true);
    expect(typeof p.message).toBe('string');
  }
  for (const d of config?.dependencies.values() ?? []) {
    for (const v of Object.values(d.calibration))
      if (typeof v === 'number') expect(Number.isFinite(v)).toBe(true);
  }
  expect(({} as Record<string, unknown>).polluted).toBeUndefined();
};

const value = fc.oneof(
  fc.double(),
  fc.integer(),
  fc.string(),
  fc.boolean(),
  fc.constant(null),
  fc.constantFrom('__proto__', 'constructor', '1e400', '-0'),
);
const dep = fc.record(
  {
    name: fc.oneof(fc.string(), fc.constantFrom('a', 'b')),
    p99Ms: value,
    attempts: value,
    slack: value,
    defaultDeadlineMs: value,
    hedge: fc.oneof(fc.boolean(), fc.record({ enabled: value, percentile: value }, { requiredKeys: [] })),
    retryBudget: fc.record({ maxRatio: value, windowMs: value }, { requiredKeys: [] }),
    histogram: fc.record({ file: fc.string(), unit: value }, { requiredKeys: [] }),
    pool: fc.record({ size: value, rps: value }, { requiredKeys: [] }),
  },
  { requiredKeys: [] },
);
const endpoint = fc.record(
  {
    endpoint: fc.string(),
    total_slo_ms: value,
    components: fc.array(
      fc.record({ name: fc.string(), kind: fc.string(), slice_ms: value, dependency: value }),
      {
        maxLength: 4,
      },
    ),
  },
  { requiredKeys: [] },
);

describe('config loader: fuzz', () => {
  it('structured configs with wrong values', () => {
    const config = fc.record(
      {
        dependencies: fc.array(dep, { maxLength: 4 }),
        endpoints: fc.array(endpoint, { maxLength: 2 }),
        service: value,
      },
      { requiredKeys: [] },
    );
    fc.assert(
      fc.property(config, (c) => check(stringify(c))),
      { numRuns: 300 },
    );
    fc.assert(
      fc.property(config, (c) => check(JSON.stringify(c))),
      { numRuns: 200 },
    );
  });

  it('arbitrary text and JSON values', () => {
    fc.assert(fc.property(fc.string({ maxLength: 400 }), check), { numRuns: 500 });
    fc.assert(
      fc.property(fc.jsonValue(), (v) => check(JSON.stringify(v))),
      { numRuns: 300 },
    );
    check('__proto__: { polluted: 1 }\n');
    check('{"__proto__": {"polluted": 1}, "dependencies": []}');
  });
});
