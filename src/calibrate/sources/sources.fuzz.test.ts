import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { readLatencySource } from './detect.js';
import { SourceError } from './types.js';

/** Parsers of untrusted files: any input gives a distribution without NaN, or a SourceError. */
const check = (text: string, format?: 'prometheus' | 'csv' | 'samples'): void => {
  try {
    const d = readLatencySource(text, { format, unit: 's' });
    for (const v of [d.count, d.successes, d.errors, d.timeouts]) expect(Number.isFinite(v)).toBe(true);
    for (const v of [d.p50, d.p95, d.p99, d.p999]) if (v !== undefined) expect(Number.isFinite(v)).toBe(true);
  } catch (error) {
    expect(error).toBeInstanceOf(SourceError);
  }
};

const promLine = fc.oneof(
  fc.string(),
  fc
    .tuple(
      fc.constantFrom('x_seconds_bucket', 'x_bucket', 'y_ms_bucket', 'x_seconds_count', '__proto__'),
      fc.array(fc.tuple(fc.constantFrom('le', 'outcome', 'code', 'a', 'constructor'), fc.string()), {
        maxLength: 3,
      }),
      fc.oneof(fc.double().map(String), fc.constantFrom('+Inf', 'NaN', '-1', '1e400', '')),
      fc.constantFrom('+Inf', '0.1', '1', 'abc', '-0', '1e-3'),
    )
    .map(([name, labels, value, le]) => {
      const l = [...labels.map(([k, v]) => `${k}="${v}"`), `le="${le}"`].join(',');
      return `${name}{${l}} ${value}`;
    }),
);

describe('latency source parsers: fuzz (never a crash, never NaN)', () => {
  it('prometheus', () => {
    fc.assert(
      fc.property(fc.array(promLine, { maxLength: 30 }), (lines) => check(lines.join('\n'), 'prometheus')),
      {
        numRuns: 1000,
      },
    );
  });

  it('csv and sample lists', () => {
    const cell = fc.oneof(
      fc.string(),
      fc.double().map(String),
      fc.constantFrom('"a,b"', '"', '503', 'timeout'),
    );
    const csv = fc
      .array(fc.array(cell, { minLength: 1, maxLength: 4 }), { maxLength: 20 })
      .map((rows) => ['latency_ms,status', ...rows.map((r) => r.join(','))].join('\n'));
    fc.assert(
      fc.property(csv, (text) => check(text, 'csv')),
      { numRuns: 500 },
    );
    fc.assert(
      fc.property(fc.array(cell, { maxLength: 30 }), (rows) => check(rows.join('\n'))),
      { numRuns: 500 },
    );
    fc.assert(
      fc.property(fc.string({ maxLength: 300 }), (text) => check(text)),
      { numRuns: 500 },
    );
  });
});
