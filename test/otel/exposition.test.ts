import { PrometheusSerializer } from '@opentelemetry/exporter-prometheus';
import { MeterProvider, MetricReader } from '@opentelemetry/sdk-metrics';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseExposition, sampleValue } from './exposition.js';

class PullReader extends MetricReader {
  protected override async onForceFlush(): Promise<void> {}
  protected override async onShutdown(): Promise<void> {}
}

describe('text exposition parser', () => {
  it('reads back what the real Prometheus serializer writes, for any label value and counter value', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.uniqueArray(fc.string({ unit: 'grapheme', maxLength: 20 }), { minLength: 1, maxLength: 5 }),
        fc.array(fc.integer({ min: 1, max: 1_000_000 }), { minLength: 5, maxLength: 5 }),
        async (values, amounts) => {
          const reader = new PullReader();
          const provider = new MeterProvider({ readers: [reader] });
          const counter = provider.getMeter('t').createCounter('t.count');
          for (const [i, v] of values.entries()) counter.add(amounts[i]!, { 'a.b': v });
          const { resourceMetrics } = await reader.collect();
          const text = new PrometheusSerializer('', false).serialize(resourceMetrics);
          const parsed = parseExposition(text);
          expect(parsed.types.get('t_count_total')).toBe('counter');
          for (const [i, v] of values.entries()) {
            expect(sampleValue(parsed, 't_count_total', { a_b: v })).toBe(amounts[i]);
          }
          await provider.shutdown();
        },
      ),
      { numRuns: 40 },
    );
  });

  it('reads special values and timestamps, and rejects malformed lines with their number', () => {
    const parsed = parseExposition('# TYPE x gauge\nx{le="+Inf"} +Inf 1700000000000\ny NaN\nz -1.5e-3\n');
    expect(sampleValue(parsed, 'x', { le: '+Inf' })).toBe(Number.POSITIVE_INFINITY);
    expect(sampleValue(parsed, 'y')).toBeNaN();
    expect(sampleValue(parsed, 'z')).toBe(-0.0015);
    for (const bad of [
      'x{a="1"',
      'x{a=1} 2',
      'x 1 2 3',
      '9x 1',
      'x{a="\\q"} 1',
      'x{a="1",a="2"} 1',
      'x abc',
    ]) {
      expect(() => parseExposition(`ok 1\n${bad}`), bad).toThrow(/line 2/);
    }
  });
});
