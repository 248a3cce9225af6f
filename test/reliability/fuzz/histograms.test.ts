import fc from 'fast-check';
import { describe, expect, it, vi } from 'vitest';
import {
  detectFormat,
  readLatencySource,
  SourceError,
  type SourceFormat,
} from '../../../src/calibrate/sources/index.js';
import { anyText, FUZZ_TIMEOUT_MS, RUNS, TEN_MB, timed } from './arbitraries.js';

vi.setConfig({ testTimeout: FUZZ_TIMEOUT_MS });

/**
 * Fuzzing the histogram file parsers `prazo calibrate` reads (SPEC C1, C4): Prometheus exposition,
 * CSV, sample lists. Any text yields a distribution whose every figure is finite and ordered, or a
 * SourceError naming the line; never another exception, never NaN; hostile sizes are refused at a
 * bounded cost.
 */

const FORMATS: readonly (SourceFormat | undefined)[] = [undefined, 'prometheus', 'csv', 'samples'];

function judge(text: string, format: SourceFormat | undefined, unit: 's' | 'ms' | 'us' | undefined): void {
  try {
    const d = readLatencySource(text, { format, unit });
    for (const v of [d.count, d.successes, d.errors, d.timeouts]) {
      expect(Number.isFinite(v) && v >= 0).toBe(true);
    }
    expect(d.successes + d.errors + d.timeouts).toBeLessThanOrEqual(d.count + 1e-6 * d.count);
    const qs = [d.p50, d.p95, d.p99, d.p999].filter((q): q is number => q !== undefined);
    for (const q of qs) expect(Number.isFinite(q) && q >= 0).toBe(true);
    for (let i = 1; i < qs.length; i += 1) expect(qs[i]!).toBeGreaterThanOrEqual(qs[i - 1]!);
  } catch (error) {
    if (!(error instanceof SourceError)) throw error;
    expect(error.line).toBeGreaterThanOrEqual(0);
  }
}

const value = fc.oneof(
  fc.double().map(String),
  fc.nat().map(String),
  fc.constantFrom('+Inf', '-Inf', 'NaN', '1e400', '-0', '', '0x10', '1_000', '٣'),
);
const labelValue = fc.oneof(
  fc.constantFrom('ok', 'error', 'timeout', '503', '+Inf', '0.1', '__proto__'),
  anyText,
);
const labels = fc
  .array(fc.tuple(fc.constantFrom('le', 'outcome', 'status', 'code', 'constructor', 'x'), labelValue), {
    maxLength: 4,
  })
  .map((ls) => ls.map(([k, v]) => `${k}="${v.replaceAll('"', '\\"')}"`).join(','));
const promLine = fc.oneof(
  anyText,
  fc
    .tuple(
      fc.constantFrom('rpc_seconds', 'rpc_ms', 'rpc', 'http_server_duration_milliseconds', '__proto__'),
      fc.constantFrom('_bucket', '_count', '_sum', ''),
      labels,
      value,
    )
    .map(([name, suffix, l, v]) => `${name}${suffix}{${l}} ${v}`),
  fc.constantFrom('# HELP rpc_seconds x', '# TYPE rpc_seconds histogram', ''),
);
const csvText = fc
  .tuple(
    fc.constantFrom('latency_ms,outcome', 'duration_s;status', 'latency', 'a,b', '"latency_ms","code"', ''),
    fc.array(fc.array(fc.oneof(value, labelValue, fc.constantFrom('"', '"a,b"')), { maxLength: 3 }), {
      maxLength: 20,
    }),
  )
  .map(([head, rows]) => [head, ...rows.map((r) => r.join(','))].join('\n'));
const samplesText = fc.array(fc.oneof(value, anyText), { maxLength: 40 }).map((l) => l.join('\n'));
const unit = fc.constantFrom(undefined, 's' as const, 'ms' as const, 'us' as const);

describe('fuzz: histogram files', () => {
  it('Prometheus text: a sane distribution or a SourceError', () => {
    fc.assert(
      fc.property(fc.array(promLine, { maxLength: 25 }), fc.constantFrom(...FORMATS), unit, (lines, f, u) =>
        judge(lines.join('\n'), f, u),
      ),
      { numRuns: RUNS },
    );
  });

  it('CSV: a sane distribution or a SourceError', () => {
    fc.assert(
      fc.property(csvText, fc.constantFrom(...FORMATS), unit, (t, f, u) => judge(t, f, u)),
      { numRuns: RUNS },
    );
  });

  it('sample lists and arbitrary text: a sane distribution or a SourceError', () => {
    fc.assert(
      fc.property(fc.oneof(samplesText, anyText), fc.constantFrom(...FORMATS), unit, (t, f, u) =>
        judge(t, f, u),
      ),
      { numRuns: RUNS },
    );
  });
});

describe('histogram files: bounded cost on hostile sizes', () => {
  const refuse = (text: string): number =>
    timed(() => expect(() => readLatencySource(text)).toThrow(SourceError));

  it('refuses a file over the size limit (17 MB) in under 100 ms', () => {
    expect(refuse('1'.repeat(17 * 1024 * 1024))).toBeLessThan(100);
  });

  it('refuses a 10 MB single line in under 100 ms', () => {
    expect(refuse('1'.repeat(TEN_MB))).toBeLessThan(100);
  });

  it('refuses 10 MB of empty lines (over the line limit) in under 250 ms', () => {
    // Counting the lines is a linear scan (about 30 ms on an idle core): looser than the O(1) refusals.
    expect(refuse('\n'.repeat(TEN_MB))).toBeLessThan(250);
  });

  it('detects the format of a hostile 64 KB head in under 100 ms', () => {
    let format = '';
    expect(timed(() => (format = detectFormat('_bucket{'.repeat(8_192))))).toBeLessThan(100);
    expect(format).toBe('samples');
  });
});
