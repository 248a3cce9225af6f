import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { histogramChart, lineChart, niceTicks } from './svg.js';

const info = { id: 'c<1>', title: 'A & B', xLabel: 'x', yLabel: 'y' };

describe('report charts (inline SVG)', () => {
  it('ticks start at 0, rise, and cover the maximum', () => {
    fc.assert(
      fc.property(fc.double({ min: 1e-3, max: 1e9, noNaN: true }), (max) => {
        const ticks = niceTicks(max);
        expect(ticks[0]).toBe(0);
        expect(ticks[ticks.length - 1]!).toBeGreaterThanOrEqual(max);
        for (let i = 1; i < ticks.length; i += 1) expect(ticks[i]!).toBeGreaterThan(ticks[i - 1]!);
        expect(ticks.length).toBeLessThanOrEqual(12);
      }),
    );
    expect(niceTicks(0)).toEqual([0, 1]);
    expect(niceTicks(27)).toEqual([0, 10, 20, 30]);
  });

  it('draws one path per series, escapes text, and never writes NaN', () => {
    const line = lineChart({
      ...info,
      xStepS: 0.25,
      series: [
        { name: 'naive', color: '#d62728', values: [0, 540, 520, 0] },
        { name: 'prazo', color: '#2ca02c', values: [20, 22, 21, 20], dashed: true },
      ],
      marks: [{ y: 15, label: 'N' }],
    });
    expect(line.match(/<path class="series"/g)).toHaveLength(2);
    expect(line).toContain('data-chart="c&#60;1&#62;"');
    expect(line).toContain('aria-label="A &#38; B"');
    expect(line).not.toContain('NaN');
    const hist = histogramChart({
      ...info,
      edges: [2, 20, 200, 2_000],
      series: [{ name: 'a', color: '#000', values: [0, 0, 0] }],
      markMs: 1_000,
    });
    expect(hist).toContain('data-series="a"');
    expect(hist).toContain('user gives up');
    expect(hist).not.toContain('NaN');
    expect(
      lineChart({ ...info, xStepS: 1, series: [{ name: 'one', color: '#000', values: [3] }] }),
    ).not.toContain('NaN');
  });
});
