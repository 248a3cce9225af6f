import { readFileSync } from 'node:fs';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { bucketQuantile, normalizeBuckets } from './bucket-quantile.js';
import { parsePrometheus } from './prometheus.js';
import { parsePromLine } from './prometheus-line.js';
import { SourceError } from './types.js';

const example = (name: string): string =>
  readFileSync(new URL(`../../../examples/histograms/${name}`, import.meta.url), 'utf8');

const hist = (name: string, buckets: Array<[string, number]>, labels = ''): string =>
  buckets.map(([le, c]) => `${name}_bucket{${labels}${labels ? ',' : ''}le="${le}"} ${c}`).join('\n');

describe('parsePrometheus', () => {
  it('interpolates like histogram_quantile, in seconds from the name', () => {
    const text = hist('rpc_duration_seconds', [
      ['0.1', 50],
      ['0.2', 90],
      ['0.4', 100],
      ['+Inf', 100],
    ]);
    const d = parsePrometheus(text);
    expect(d.p50).toBeCloseTo(100, 9); // rank 50 at the top of (0, 0.1] s
    expect(d.p95).toBeCloseTo(300, 9); // rank 95: (0.2, 0.4], 5 of 10 → 0.3 s
    expect(d.p99).toBeCloseTo(380, 9);
    expect(d).toMatchObject({ count: 100, successes: 100, errors: 0, timeouts: 0, p99Bounded: true });
  });

  it('reads ms from the name or --unit, and refuses to guess', () => {
    const buckets: Array<[string, number]> = [
      ['100', 99],
      ['200', 100],
      ['+Inf', 100],
    ];
    expect(parsePrometheus(hist('latency_ms', buckets)).p99).toBeCloseTo(100, 9);
    expect(parsePrometheus(hist('latency', buckets), { unit: 's' }).p99).toBeCloseTo(100_000, 6);
    expect(() => parsePrometheus(hist('latency', buckets))).toThrow(/--unit/);
  });

  it('marks a p99 in the +Inf bucket as unbounded (the histogram cannot measure it)', () => {
    const d = parsePrometheus(
      hist('x_seconds', [
        ['0.5', 90],
        ['+Inf', 100],
      ]),
    );
    expect(d.p99).toBe(500);
    expect(d.p99Bounded).toBe(false);
    expect(d.notes.join(' ')).toContain('lower bound');
  });

  it('splits series by outcome label: quantiles from successes, rates from the rest', () => {
    const text = [
      hist(
        'h_seconds',
        [
          ['0.1', 90],
          ['1', 100],
          ['+Inf', 100],
        ],
        'outcome="success"',
      ),
      hist(
        'h_seconds',
        [
          ['0.1', 5],
          ['+Inf', 5],
        ],
        'code="503"',
      ),
      hist(
        'h_seconds',
        [
          ['0.1', 0],
          ['+Inf', 3],
        ],
        'code="504"',
      ),
    ].join('\n');
    expect(parsePrometheus(text)).toMatchObject({ count: 108, successes: 100, errors: 5, timeouts: 3 });
  });

  it('the shipped examples: healthy p99 ≈ 64 ms; degraded ≈ 1.7 s with errors and timeouts', () => {
    const healthy = parsePrometheus(example('supplier-healthy.prom'));
    expect(healthy.p99).toBeCloseTo(64.29, 2); // rank 19800 in (50, 75] ms: 50 + 25 × 200/350
    expect(healthy).toMatchObject({ successes: 20_000, errors: 12, timeouts: 4, p99Bounded: true });
    const degraded = parsePrometheus(example('supplier-degraded.prom'));
    expect(degraded.p99).toBeCloseTo(1720, 6); // rank 17820 in (1000, 2500] ms: 1000 + 1500 × 120/250
    expect(degraded.errors / degraded.count).toBeGreaterThan(0.05);
  });

  it('asks for --metric when a scrape holds several histograms; ignores other metrics', () => {
    const text = `${hist('a_seconds', [
      ['1', 1],
      ['+Inf', 1],
    ])}\n${hist('b_seconds', [
      ['1', 1],
      ['+Inf', 1],
    ])}\nup 1\n`;
    expect(() => parsePrometheus(text)).toThrow(/several histograms.*--metric/);
    expect(parsePrometheus(text, { metric: 'b_seconds' }).successes).toBe(1);
    expect(() => parsePrometheus(text, { metric: 'c' })).toThrow(/no histogram named c/);
  });

  it('repairs non-monotonic buckets, and rejects a missing +Inf or bad counts with the line', () => {
    const d = parsePrometheus(
      hist('x_seconds', [
        ['0.1', 10],
        ['0.2', 8],
        ['+Inf', 10],
      ]),
    );
    expect(d.notes.join(' ')).toContain('repaired');
    expect(() => parsePrometheus(hist('x_seconds', [['0.1', 10]]))).toThrow(/\+Inf/);
    const bad = () => parsePrometheus('# c\nx_seconds_bucket{le="0.1"} -3\n');
    expect(bad).toThrow(SourceError);
    expect(bad).toThrow(/^line 2: /);
    expect(() => parsePrometheus('x_seconds_bucket{le="0.1" 3')).toThrow(/line 1: malformed labels/);
  });

  it('parses escapes, exemplars and timestamps', () => {
    const s = parsePromLine('m_bucket{path="/a\\"b\\\\",le="+Inf"} 4 1700000000000 # {trace_id="x"} 0.2', 1);
    expect(s.labels.get('path')).toBe('/a"b\\');
    expect(s.value).toBe(4);
    const proto = parsePromLine('m{__proto__="x",constructor="y"} 1', 1);
    expect(proto.labels.get('__proto__')).toBe('x');
    expect(Object.getPrototypeOf({})).toBe(Object.prototype);
  });
});

describe('bucketQuantile: properties', () => {
  const bucketsArb = fc
    .array(fc.tuple(fc.double({ min: 0.001, max: 1e6, noNaN: true }), fc.nat(10_000)), {
      minLength: 1,
      maxLength: 20,
    })
    .map((raw) => {
      let running = 0;
      const sorted = [...raw].sort((a, b) => a[0] - b[0]);
      const buckets = sorted.map(([le, n]) => {
        running += n;
        return { le, count: running };
      });
      return [...buckets, { le: Number.POSITIVE_INFINITY, count: running + 1 }];
    });

  it('stays within its bucket, monotonic in q, never NaN', () => {
    fc.assert(
      fc.property(bucketsArb, fc.double({ min: 0.01, max: 0.999, noNaN: true }), (raw, q) => {
        const { buckets } = normalizeBuckets(raw);
        const a = bucketQuantile(q, buckets)!;
        const b = bucketQuantile(Math.min(0.9999, q + 0.01), buckets)!;
        expect(Number.isFinite(a.value)).toBe(true);
        expect(a.value).toBeGreaterThanOrEqual(a.lower);
        if (a.bounded) expect(a.value).toBeLessThanOrEqual(a.upper);
        expect(b.value).toBeGreaterThanOrEqual(a.value - 1e-9 * a.value);
      }),
    );
  });
});
