import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parsePromQL } from '../rules/promql.test-helpers.js';
import { num, oneOf, quote, selector } from './promql.js';

describe('PromQL pieces', () => {
  it('any label value, quoted, parses and reads back as itself (no injection from config names)', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'grapheme', maxLength: 40 }), (value) => {
        const expr = selector('prazo_dependency_attempts_total', [['prazo_dependency', '=', value]]);
        const parsed = parsePromQL(expr);
        expect(parsed.errors).toEqual([]);
        expect(parsed.metrics).toEqual(['prazo_dependency_attempts_total']);
        const literal = expr.slice(expr.indexOf('=') + 1, -1);
        expect(JSON.parse(literal)).toBe(value);
        expect(literal).toBe(quote(value));
      }),
    );
  });

  it('oneOf escapes regex metacharacters so each value matches only itself', () => {
    fc.assert(
      fc.property(
        fc.array(fc.string({ maxLength: 12 }), { minLength: 1, maxLength: 4 }),
        fc.string({ maxLength: 12 }),
        (values, probe) => {
          const re = new RegExp(`^(?:${oneOf(values)})$`, 'u');
          expect(re.test(probe)).toBe(values.includes(probe));
        },
      ),
    );
  });

  it('thresholds are finite numbers PromQL reads', () => {
    expect(num(0.1 * 0.9)).toBe('0.09');
    expect(num(3)).toBe('3');
    expect(parsePromQL(`x > ${num(1e-9)}`).errors).toEqual([]);
    expect(() => num(Number.NaN)).toThrow(RangeError);
    expect(() => num(Number.POSITIVE_INFINITY)).toThrow(RangeError);
  });
});
