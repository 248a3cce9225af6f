import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isInvalidOptions } from '../errors/guards.js';
import { defineOptions, option } from './declare.js';
import { OptionsValidator, readOptions } from './validator.js';

describe('OptionsValidator', () => {
  it('returns valid values and defaults for undefined', () => {
    const v = new OptionsValidator('t');
    expect(v.number('a', 5, { default: 1, min: 0, max: 10, integer: true })).toBe(5);
    expect(v.number('b', undefined, { default: 1 })).toBe(1);
    expect(v.boolean('c', undefined, true)).toBe(true);
    expect(v.string('d', 'x', 'y')).toBe('x');
    expect(v.oneOf('e', 'b', ['a', 'b'], 'a')).toBe('b');
    expect(() => v.done()).not.toThrow();
  });

  it('collects every problem, then throws them together', () => {
    const v = new OptionsValidator('createRetryBudget');
    v.number('windowMs', -5, { default: 10_000, min: 1, max: 60_000, integer: true });
    v.number('maxRatio', Number.NaN, { default: 0.1, min: 0, max: 1 });
    v.number('attempts', 1.5, { default: 2, min: 1, integer: true });
    v.number('slack', 2, { default: 1.4, min: 1, exclusiveMin: true, max: 1.5 });
    v.boolean('hedge', 'yes', false);
    v.oneOf('mode', 'x', ['a', 'b'], 'a');
    v.string('name', '', 'dep');
    try {
      v.done();
      expect.unreachable();
    } catch (error) {
      expect(isInvalidOptions(error)).toBe(true);
      if (!isInvalidOptions(error)) return;
      expect(error.context).toBe('createRetryBudget');
      expect(error.problems).toEqual([
        '`windowMs` must be an integer in [1, 60000], got -5',
        '`maxRatio` must be a finite number in [0, 1], got NaN',
        '`attempts` must be an integer >= 1, got 1.5',
        '`slack` must be a finite number in (1, 1.5], got 2',
        '`hedge` must be true or false, got "yes"',
        '`mode` must be one of a, b, got "x"',
        '`name` must be a non-empty string, got ""',
      ]);
    }
  });

  it('property: any value yields either the value itself or the default plus one problem', () => {
    fc.assert(
      fc.property(fc.anything(), (value) => {
        const v = new OptionsValidator('p');
        const out = v.number('n', value, { default: 7, min: 0, max: 100 });
        if (v.problems.length === 0) expect(out).toBe(value === undefined ? 7 : value);
        else {
          expect(out).toBe(7);
          expect(v.problems).toHaveLength(1);
        }
      }),
      { numRuns: 2_000 },
    );
  });

  it('Was a defect: an unknown key is quoted on one line and cut (a 1 MB key made a 1 MB message)', () => {
    const schema = defineOptions({ name: option.string(), p99Ms: option.number({}) });
    const problemFor = (key: string): string => {
      try {
        readOptions('t', schema, { [key]: 1 });
      } catch (error) {
        expect(isInvalidOptions(error)).toBe(true);
        return (error as { problems: readonly string[] }).problems[0]!;
      }
      throw new Error('not refused');
    };
    const huge = problemFor('x'.repeat(1_000_000));
    expect(huge.length).toBeLessThan(200);
    expect(huge).toContain('…');
    const escaped = problemFor('a\nb\u001b[31m');
    expect(escaped.includes('\n') || escaped.includes('\u001b')).toBe(false);
    expect(escaped).toContain('a\\x0ab\\x1b[31m');
    expect(problemFor('p99ms')).toContain('did you mean `p99Ms`');
  });
});
