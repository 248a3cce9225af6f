import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isInvalidOptions } from '../errors/guards.js';
import { defineOptions, type OptionsOf, option, pickOptions } from './declare.js';
import { closestName, editDistance } from './suggest.js';
import { checkCallOptions, OptionsValidator, readOptions } from './validator.js';

const INNER = defineOptions({
  /** A ratio. */
  maxRatio: option.number({ default: 0.1, min: 0, max: 10 }),
  clock: option.clock(),
});

const SCHEMA = defineOptions(
  {
    name: option.string({ required: true, maxLength: 10 }),
    attempts: option.integer({ default: 2, min: 1, max: 10 }),
    slack: option.number({ default: 1.4, min: 1.3, max: 1.5, widen: { when: 'forceSlack', min: 1, max: 3 } }),
    forceSlack: option.boolean({ default: false }),
    mode: option.oneOf(['fast', 'safe'], { default: 'safe' }),
    budget: option.instanceOr<{ tryConsume(): boolean }, (typeof INNER)['specs']>(
      { describe: 'a budget', test: option.hasMethods('tryConsume') },
      INNER,
    ),
    hedge: option.toggle(INNER),
    minMs: option.number({ default: 5, min: 0 }),
    maxMs: option.number({ min: 0 }),
  },
  (o, report, { valid }) => {
    if (valid('minMs', 'maxMs') && o.maxMs !== undefined && o.maxMs < o.minMs) {
      report('maxMs', `(${o.maxMs}) must not be below \`minMs\` (${o.minMs})`);
    }
  },
);

const problems = (run: () => unknown): readonly string[] => {
  try {
    run();
  } catch (error) {
    if (isInvalidOptions(error)) return error.problems;
    throw error;
  }
  return [];
};

describe('options declared once (src/options)', () => {
  it('derives the option type: required keys required, the rest optional', () => {
    type Options = OptionsOf<typeof SCHEMA>;
    const ok: Options = { name: 'x' };
    // @ts-expect-error name is required
    const missing: Options = { attempts: 2 };
    expect([ok, missing]).toHaveLength(2);
    expect(SCHEMA.defaults).toEqual({ attempts: 2, slack: 1.4, forceSlack: false, mode: 'safe', minMs: 5 });
  });

  it('reads values, applies defaults, and keeps nested options as given', () => {
    const budget = { tryConsume: () => true };
    const o = readOptions('make', SCHEMA, { name: 'x', budget, hedge: { maxRatio: 1 } });
    expect(o).toMatchObject({
      name: 'x',
      attempts: 2,
      slack: 1.4,
      mode: 'safe',
      budget,
      hedge: { maxRatio: 1 },
    });
    expect(readOptions('make', SCHEMA, { name: 'x', hedge: true }).hedge).toBe(true);
    expect(readOptions('make', SCHEMA, { name: 'x', slack: 2.5, forceSlack: true }).slack).toBe(2.5);
  });

  it('rejects unknown keys with a "did you mean", nested and misplaced ones included', () => {
    expect(
      problems(() =>
        readOptions('make', SCHEMA, {
          name: 'x',
          attempt: 3,
          Mode: 'fast',
          hedge: { maxratio: 1 },
          maxRatio: 1,
          zzz: 1,
        }),
      ),
    ).toEqual([
      'unknown option `attempt`; did you mean `attempts`?',
      'unknown option `Mode`; did you mean `mode`?',
      'unknown option `maxRatio`; did you mean `budget.maxRatio`?',
      'unknown option `zzz` (options here: name, attempts, slack, forceSlack, mode, budget, hedge, minMs, maxMs)',
      'unknown option `hedge.maxratio`; did you mean `maxRatio`?',
    ]);
  });

  it('reports every problem together, cross-field checks included, each once', () => {
    expect(
      problems(() =>
        readOptions('make', SCHEMA, {
          name: '',
          attempts: 0,
          slack: 2,
          mode: 'fats',
          budget: 3,
          hedge: 'yes',
          minMs: 10,
          maxMs: 5,
        }),
      ),
    ).toEqual([
      '`name` must be a string of 1 to 10 characters, got ""',
      '`attempts` must be an integer in [1, 10], got 0',
      '`slack` must be a finite number in [1.3, 1.5], got 2',
      '`mode` must be one of fast, safe, got "fats" (did you mean `fast`?)',
      '`budget` must be a budget or an options object, got 3',
      '`hedge` must be true, false or an options object, got "yes"',
      '`maxMs` (5) must not be below `minMs` (10)',
    ]);
    // A cross-field check does not speak about a field that already failed.
    expect(problems(() => readOptions('make', SCHEMA, { name: 'x', minMs: -1, maxMs: 5 }))).toEqual([
      '`minMs` must be a finite number >= 0, got -1',
    ]);
    expect(problems(() => readOptions('make', SCHEMA, 'x'))).toEqual([
      'options must be an object, got "x"',
      '`name` is required',
    ]);
  });

  it('in data mode (a config file) refuses what only code can give and speaks of mappings', () => {
    const v = new OptionsValidator('file', 'data');
    v.read(SCHEMA, { name: ' x ', budget: { clock: 'now' }, hedge: [1] }, ['deps', 0]);
    expect(v.issues).toEqual([
      { path: ['deps', 0, 'budget', 'clock'], message: 'can only be given in code, not in a config file' },
      { path: ['deps', 0, 'hedge'], message: 'must be true, false or a mapping, got an array' },
    ]);
  });

  it('picks a subset of a schema, and checks keys and values per call, reading in full only a bad one', () => {
    const picked = pickOptions(SCHEMA, ['attempts', 'mode']);
    expect(picked.keys).toEqual(['attempts', 'mode']);
    expect(() => checkCallOptions('call', picked, { attempts: 2 })).not.toThrow();
    expect(problems(() => checkCallOptions('call', picked, { attempts: 99 }))).toHaveLength(1);
    expect(problems(() => checkCallOptions('call', picked, { attemps: 1 }))).toEqual([
      'unknown option `attemps`; did you mean `attempts`?',
    ]);
  });
});

describe('did you mean (one helper, src/options/suggest.ts)', () => {
  it('finds what a misspelt name meant: case, separators, a typo, a swap, a cut', () => {
    const names = ['attempts', 'maxRatio', 'windowMs', 'percentile', 'maxMs', 'slice_ms', 'p99Ms'];
    expect(closestName('attempt', names)).toBe('attempts');
    expect(closestName('maxratio', names)).toBe('maxRatio');
    expect(closestName('max_ratio', names)).toBe('maxRatio');
    expect(closestName('windowMS', names)).toBe('windowMs');
    expect(closestName('percentil', names)).toBe('percentile');
    expect(closestName('maxMS', names)).toBe('maxMs');
    expect(closestName('atempts', names)).toBe('attempts');
    expect(closestName('attmepts', names)).toBe('attempts');
    expect(closestName('slice', names)).toBe('slice_ms');
    expect(closestName('p99ms', names)).toBe('p99Ms');
    expect(closestName('deadline', names)).toBeUndefined();
    expect(closestName('x', ['y'])).toBeUndefined();
    expect(closestName('a'.repeat(65), ['a'.repeat(64)])).toBeUndefined();
  });

  it('property: the distance is a bounded metric and never costs more than the bound says', () => {
    const name = fc.string({ maxLength: 20 });
    fc.assert(
      fc.property(name, name, (a, b) => {
        const d = editDistance(a, b);
        expect(d).toBe(editDistance(b, a));
        expect(d === 0).toBe(a === b);
        expect(d).toBeLessThanOrEqual(Math.max(a.length, b.length));
        expect(editDistance(a, b, 1)).toBe(Math.min(d, 2));
      }),
      { numRuns: 2_000 },
    );
  });
});
