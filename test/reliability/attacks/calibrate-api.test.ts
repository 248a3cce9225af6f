import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it, vi } from 'vitest';
import { stringify } from 'yaml';
import { calibrateFleet, type FleetDependency, queriesOf } from '../../../src/calibrate/fleet.js';
import {
  assessWindow,
  calibrateFromDistribution,
  checkDrift,
  checkPool,
  createDriftMonitor,
  createHealthyWindowTracker,
  DEPENDENCY_KINDS,
  implausibleP99,
  KIND_PROFILES,
  type LatencyDistribution,
  parseCsv,
  parsePrometheus,
  parseSampleList,
  readLatencySource,
  resolveHealthThresholds,
  SourceError,
  startingP99Ms,
  suggestConcurrencyLimit,
} from '../../../src/calibrate/index.js';
import { parseSelector, quote, selector } from '../../../src/calibrate/promql.js';
import {
  createPrometheusClient,
  type Matrix,
  type MatrixSeries,
  type PrometheusClient,
  PrometheusQueryError,
  type QueryRange,
} from '../../../src/calibrate/sources/prometheus-api.js';
import { FakeClock } from '../../../src/clock/fake.js';
import { InvalidOptionsError } from '../../../src/errors/options.js';
import { calibrateTimeout } from '../../../src/index.js';
import { hasPromtool, promtoolDir } from '../../../src/rules/promql.test-helpers.js';

/**
 * Attacks on `prazo/calibrate` from the outside (SPEC C1, C4–C6, C8, X8): what a user hands the
 * parsers (degenerate sample lists, non-text, hostile histograms), the guard and the drift check
 * (hand-made windows and thresholds, NaN/negative/huge p99s), the pool check and the kind table
 * (typos, prototype keys), and what the fleet calibration reads back from a Prometheus that answers
 * oddly. Each bad input must get a typed prazo error or a documented answer — never a TypeError, a
 * NaN/Infinity in the output, a whole run rejected for one dependency's data, or a PromQL query that
 * Prometheus refuses. Fake clock only; nothing here sleeps or goes to the network.
 */

const T = resolveHealthThresholds();

/** What `f` throws (the test fails when it does not throw). */
function thrown(f: () => unknown): Error & { code?: string } {
  try {
    f();
  } catch (error) {
    return error as Error & { code?: string };
  }
  throw new Error('expected a throw');
}

/** JSON as a consumer reads it: an Infinity or NaN would come out `null`. */
const noNonFinite = (value: unknown): void => {
  JSON.stringify(value, (_k, v) => {
    if (typeof v === 'number')
      expect(Number.isFinite(v), `non-finite number in ${JSON.stringify(value)}`).toBe(true);
    if (typeof v === 'string') expect(v).not.toMatch(/Infinity|NaN/);
    return v;
  });
};

describe('sample lists: degenerate inputs (SPEC C1)', () => {
  it('empty, blank or comment-only: a SourceError, never a distribution of nothing', () => {
    for (const text of ['', '\n\n', '# only a comment\n', '   ']) {
      const e = thrown(() => parseSampleList(text));
      expect(e).toBeInstanceOf(SourceError);
      expect(e.code).toBe('INVALID_SOURCE');
    }
  });

  it('one value, or all equal: every quantile is that value, and it calibrates', () => {
    for (const text of ['7', '7\n7\n7\n7']) {
      const d = parseSampleList(text);
      expect([d.p50, d.p95, d.p99, d.p999]).toEqual([7, 7, 7, 7]);
      const c = calibrateFromDistribution(d, { minSamples: 1 });
      expect(c.calibration?.responseMs).toBe(10); // ceil(7 × 1.4)
    }
  });

  it('NaN, ±Infinity, negatives, -0, overflow and hex: refused naming the line', () => {
    for (const bad of ['NaN', 'Infinity', '-Infinity', '+Inf', '-1', '-0', '1e400', '0x10', '5ms', '1_000']) {
      const e = thrown(() => parseSampleList(`1\n2\n${bad}\n`));
      expect(e).toBeInstanceOf(SourceError);
      expect((e as SourceError).line).toBe(3);
    }
  });

  it('10^6 samples are read in linear time (sorted as floats, not strings)', () => {
    const n = 1_000_000;
    const text = `${'5\n'.repeat(n - 1)}900`;
    const started = performance.now();
    const d = parseSampleList(text);
    expect(performance.now() - started).toBeLessThan(4_000);
    expect(d.count).toBe(n);
    expect(d.p99).toBe(5);
    expect(parseSampleList('10\n9\n100\n2').p50).toBe(9); // a string sort would say 10
  });

  it('Was a defect: a unit outside s|ms|us is an InvalidOptionsError, not "line 1: latency out of range"', () => {
    const e = thrown(() => parseSampleList('1\n2', 'sec' as never));
    expect(e).toBeInstanceOf(InvalidOptionsError);
    expect(e.message).toContain('`unit`');
  });

  it('Was a defect: a source that is not text (Buffer, undefined, number) is a SourceError, not a TypeError', () => {
    const inputs: unknown[] = [Buffer.from('1\n2'), undefined, null, 5, ['1'], { text: '1' }];
    for (const input of inputs) {
      for (const parse of [
        () => parseSampleList(input as string),
        () => parseCsv(input as string),
        () => parsePrometheus(input as string),
        () => readLatencySource(input as string, { unit: 'ms' }),
      ]) {
        const e = thrown(parse);
        expect(e, String(input)).toBeInstanceOf(SourceError);
        expect(e.message).toContain('must be text');
      }
    }
    expect(thrown(() => parseSampleList(Buffer.from('1') as never)).message).toContain('utf8');
  });
});

describe('CSV exports: hostile fields (SPEC C1)', () => {
  it('Was a defect: a 12 MB quoted field spanning 200 lines is read in under 1.5 s (it took 3 to 9 s)', () => {
    const text = `latency_ms,note\n7,"${`${'y'.repeat(60_000)}\n`.repeat(200)}"\n9,ok`;
    const started = performance.now();
    const d = parseCsv(text);
    expect(performance.now() - started).toBeLessThan(1_500);
    expect(d.count).toBe(2);
    expect(d.p99).toBe(9);
  });

  it('Was a defect: a blank `column` is an InvalidOptionsError, not the unnamed column read as latencies', () => {
    for (const column of ['', '  ', '\t']) {
      const e = thrown(() => parseCsv('latency_ms,,status\n1,999,200', { column, unit: 'ms' }));
      expect(e).toBeInstanceOf(InvalidOptionsError);
      expect(e.message).toContain('`column`');
    }
  });

  it('Was a defect: Excel\'s "sep=;" first line declares the separator (it was read as the header)', () => {
    for (const [sep, text] of [
      [';', 'sep=;\nlatency_ms;note\n1,5;a,b\n2;c'],
      ['\t', 'sep=\t\r\nlatency_ms\tnote\r\n1.5\tx,y;z\r\n2\tw'],
      ['|', 'SEP=|\nlatency_ms|note\n1.5|x\n2|y'],
    ] as const) {
      const d = parseCsv(text.replace('1,5', '1.5'));
      expect(d.count, sep).toBe(2);
      expect(d.p99).toBe(2);
      expect(readLatencySource(text.replace('1,5', '1.5')).count).toBe(2);
    }
  });

  it('quotes: "" inside a quoted field, a quote inside an unquoted one, CRLF inside quotes, unbalanced refused', () => {
    const d = parseCsv('latency_ms;note\r\n1;"a;""b""\r\nc"\r\n2;x"y\r\n"3";""');
    expect(d.count).toBe(3);
    expect(d.p99).toBe(3);
    expect(thrown(() => parseCsv('latency_ms,note\n1,"open'))).toBeInstanceOf(SourceError);
    expect(thrown(() => parseCsv('latency_ms,note\n1,ok', { colum: 'x' } as never)).message).toContain(
      'did you mean `column`',
    );
  });
});

describe('Prometheus text histograms: hostile buckets (SPEC C1, C4)', () => {
  const h = (lines: string[]) => lines.map((l) => `x_seconds_bucket${l}`).join('\n');

  it('NaN/±Inf/negative counts and NaN/negative le are refused with their line; no +Inf bucket is refused', () => {
    const bad = [
      h(['{le="0.1"} NaN', '{le="+Inf"} 10']),
      h(['{le="0.1"} +Inf', '{le="+Inf"} 10']),
      h(['{le="0.1"} -3', '{le="+Inf"} 10']),
      h(['{le="NaN"} 1', '{le="+Inf"} 10']),
      h(['{le="-1"} 1', '{le="+Inf"} 10']),
      h(['{le="0.1"} 5', '{le="1"} 10']),
      h(['{le="0.1" 5']),
      h(['{le="0.1\\t"} 5', '{le="+Inf"} 10']),
    ];
    for (const text of bad) expect(thrown(() => parsePrometheus(text))).toBeInstanceOf(SourceError);
  });

  it('non-monotonic buckets are repaired by a running maximum, and said so', () => {
    const d = parsePrometheus(h(['{le="0.1"} 50', '{le="1"} 10', '{le="+Inf"} 60']));
    expect(d.notes.join('\n')).toContain('non-monotonic');
    expect(d.p99Bounded).toBe(false); // 10 of 60 calls above le=1: the p99 is beyond it
    expect(calibrateFromDistribution(d, { minSamples: 1 }).refused?.join('\n')).toContain(
      'beyond the largest finite bucket',
    );
  });

  it('Was a defect: calls only in the +Inf bucket are an unbounded p99, not "no successful call"', () => {
    const d = parsePrometheus(h(['{le="+Inf"} 500']));
    expect(d.successes).toBe(500);
    expect(d.p99).toBeUndefined();
    expect(d.p99Bounded).toBe(false);
    const c = calibrateFromDistribution(d);
    expect(c.calibration).toBeUndefined();
    expect(c.refused?.[0]).toContain('beyond the largest finite bucket');
    // An empty histogram still reads as no call at all.
    expect(parsePrometheus(h(['{le="0.1"} 0', '{le="+Inf"} 0'])).p99Bounded).toBe(true);
  });

  it('Was a defect: le="1e400" (past the largest float) is a bad bound, not a second +Inf counting its calls twice', () => {
    const e = thrown(() => parsePrometheus(h(['{le="1e400"} 10', '{le="+Inf"} 10'])));
    expect(e).toBeInstanceOf(SourceError);
    expect((e as SourceError).line).toBe(1);
    expect(thrown(() => parsePrometheus(h(['{le="1"} 1e400', '{le="+Inf"} 10'])))).toBeInstanceOf(
      SourceError,
    );
  });

  it('prototype-named labels and metrics stay data', () => {
    const d = parsePrometheus(
      '__proto___seconds_bucket{constructor="x",__proto__="y",le="0.1"} 10\n' +
        '__proto___seconds_bucket{constructor="x",__proto__="y",le="+Inf"} 10',
    );
    expect(d.p99).toBeCloseTo(99, 6);
    expect(({} as Record<string, unknown>).x).toBeUndefined();
  });
});

describe('calibrateFromDistribution: hand-made and out-of-range distributions (SPEC C1, C4)', () => {
  it('Was a defect: a measured p99 past a day is refused in words, not thrown as an invalid `p99Ms` option', () => {
    const d = parseSampleList('100000000', 'ms'); // 27.8 h: within a source's bounds, beyond a timeout's
    const c = calibrateFromDistribution(d, { minSamples: 1 });
    expect(c.calibration).toBeUndefined();
    expect(c.refused?.join('\n')).toContain('86400000 ms');
  });

  it('Was a defect: null or a number as the distribution is an InvalidOptionsError, not a TypeError', () => {
    for (const bad of [null, undefined, 5, 'p99', []]) {
      const e = thrown(() => calibrateFromDistribution(bad as never));
      expect(e).toBeInstanceOf(InvalidOptionsError);
      expect(e.message).toContain('`distribution`');
    }
  });

  it('Was a defect: a negative or NaN p99 is no p99 (refused), not an InvalidOptionsError about `p99Ms`', () => {
    for (const p99 of [-5, Number.NaN, Number.NEGATIVE_INFINITY]) {
      const d = {
        format: 'samples',
        count: 1000,
        successes: 1000,
        errors: 0,
        timeouts: 0,
        p50: 1,
        p95: 1,
        p99,
        p999: 1,
        p99Bounded: true,
        notes: [],
      } satisfies LatencyDistribution;
      const c = calibrateFromDistribution(d);
      expect(c.calibration).toBeUndefined();
      expect(c.refused?.join('\n')).toContain('no p99');
    }
  });

  it('option typos and wrong types are reported together', () => {
    const d = parseSampleList('5');
    const e = thrown(() =>
      calibrateFromDistribution(d, { slak: 1.4, minSamples: 0, attempts: '2' } as never),
    );
    expect(e).toBeInstanceOf(InvalidOptionsError);
    expect(e.message).toContain('did you mean `slack`');
    expect(e.message).toContain('`minSamples`');
    expect(e.message).toContain('`attempts`');
  });
});

describe('the guard and the drift check: hand-made windows and thresholds (SPEC C4, C5, V1)', () => {
  const window = (p99: number | undefined, errors = 0, timeouts = 0) => ({
    count: 1000,
    errors,
    timeouts,
    p99,
  });

  it('Was a defect: thresholds given as {} (or partial) take their defaults instead of turning every check off', () => {
    const allErrors = window(100, 1000);
    expect(assessWindow(allErrors, undefined, {} as never).health).toBe('degraded');
    expect(assessWindow(allErrors, undefined, { minSamples: 10 } as never).health).toBe('degraded');
    expect(assessWindow(allErrors, undefined, undefined as never).health).toBe('degraded');
    expect(assessWindow(window(100), undefined, {} as never).health).toBe('healthy');
  });

  it('Was a defect: invalid thresholds or a window that is not an object are InvalidOptionsErrors', () => {
    expect(thrown(() => assessWindow(window(1), undefined, { ...T, maxErrorRate: 2 }))).toBeInstanceOf(
      InvalidOptionsError,
    );
    const typo = thrown(() => assessWindow(window(1), undefined, { maxErorRate: 0.5 } as never));
    expect(typo.message).toContain('did you mean `maxErrorRate`');
    for (const bad of [null, undefined, 5, 'w', []]) {
      expect(thrown(() => assessWindow(bad as never, undefined, T))).toBeInstanceOf(InvalidOptionsError);
      expect(thrown(() => checkDrift({ timeoutMs: 100, window: bad as never }))).toBeInstanceOf(
        InvalidOptionsError,
      );
      const tracker = createHealthyWindowTracker();
      expect(thrown(() => tracker.observe(bad as never))).toBeInstanceOf(InvalidOptionsError);
      const monitor = createDriftMonitor({ timeoutMs: 100 });
      expect(thrown(() => monitor.observe(bad as never))).toBeInstanceOf(InvalidOptionsError);
    }
  });

  it('Was a defect: an onChange that throws or rejects is a warning, not an exception or an unhandled rejection', async () => {
    const warn = vi.spyOn(process, 'emitWarning').mockImplementation(() => undefined);
    const rejections: unknown[] = [];
    const onRejection = (reason: unknown): void => {
      rejections.push(reason);
    };
    process.on('unhandledRejection', onRejection);
    try {
      const sync = createDriftMonitor({
        timeoutMs: 100,
        onChange: () => {
          throw new Error('pager down');
        },
      });
      expect(sync.observe(window(50) as never).status).toBe('ok');
      expect(sync.observe(window(500) as never).status).toBe('too-tight');
      const async = createDriftMonitor({
        timeoutMs: 100,
        onChange: async () => {
          throw new Error('slack down');
        },
      });
      expect(async.observe(window(50) as never).status).toBe('ok');
      await new Promise((resolve) => setImmediate(resolve));
      await new Promise((resolve) => setImmediate(resolve));
      const warnings = warn.mock.calls.map((c) => String(c[0]));
      expect(warnings.filter((w) => w.includes('pager down'))).toHaveLength(2);
      expect(warnings.filter((w) => w.includes('slack down'))).toHaveLength(1);
      expect(rejections).toEqual([]);
    } finally {
      process.off('unhandledRejection', onRejection);
      warn.mockRestore();
    }
  });

  it('Was a defect: a negative p99 is no p99: no "-20.0x" idle margin, no 1 ms suggestion', () => {
    const r = checkDrift({ timeoutMs: 100, window: window(-5) });
    expect(r.status).toBe('insufficient-data');
    expect(r.p99Ms).toBeUndefined();
    expect(r.suggestedTimeoutMs).toBeUndefined();
    expect(assessWindow(window(-5), 5, T).health).toBe('degraded');
  });

  it('Was a defect: a negative p99 never enters the tracker baseline (it made the median 0: no jump check)', () => {
    const tracker = createHealthyWindowTracker({ minSamples: 1 });
    tracker.observe(window(100));
    expect(tracker.observe(window(-5)).health).toBe('degraded');
    expect(tracker.baselineP99()).toBe(100);
    // The jump check still bites: 10x the baseline.
    expect(tracker.observe(window(1000)).health).toBe('degraded');
  });

  it('Was a defect: the baseline of two p99s near the largest double is their median, not Infinity', () => {
    const tracker = createHealthyWindowTracker({ minSamples: 1, maxP99Jump: 100 });
    tracker.observe(window(1.5e308));
    tracker.observe(window(1.6e308));
    expect(tracker.baselineP99()).toBe(1.55e308);
    const small = createHealthyWindowTracker({ minSamples: 1, maxP99Jump: 100 });
    small.observe(window(0.1));
    small.observe(window(0.2));
    expect(small.baselineP99()).toBe((0.1 + 0.2) / 2);
  });

  it('Was a defect: a p99 of 0 or 1e308 leaves no Infinity in the verdict text', () => {
    const zero = checkDrift({ timeoutMs: 100, window: window(0) });
    expect(zero.status).toBe('idle-margin');
    noNonFinite(zero);
    const huge = checkDrift({ timeoutMs: 100, window: window(1e308) });
    expect(huge.status).toBe('too-tight');
    expect(huge.suggestedTimeoutMs).toBeUndefined(); // beyond what a timeout is calibrated on
    noNonFinite(huge);
    const jump = assessWindow(window(1e308), 1, T);
    expect(jump.reasons.join('\n')).not.toContain('Infinity ms');
  });

  it('Was a defect: a drift monitor given null throws a typed error and judges the next window from the last good one', () => {
    const changes: string[] = [];
    const monitor = createDriftMonitor({ timeoutMs: 100, onChange: (r) => changes.push(r.status) });
    monitor.observe(window(50) as never);
    expect(() => monitor.observe(null as never)).toThrow(InvalidOptionsError);
    monitor.observe(window(-1) as never); // no p99: insufficient, not a change
    monitor.observe(window(60) as never);
    expect(changes).toEqual(['ok']);
  });
});

describe('pool check and the kind table (SPEC C6, C8)', () => {
  it('Was a defect: a near-zero rate tolerates the largest number, not Infinity (null in JSON)', () => {
    for (const rps of [Number.MIN_VALUE, 1e-300]) {
      const r = checkPool({ poolSize: 1_000_000, rps, timeoutMs: 1 });
      expect(r.ok).toBe(true);
      noNonFinite(r);
    }
    const tight = checkPool({ poolSize: 1, rps: 1e7, timeoutMs: 2 ** 31 - 1 });
    expect(tight.ok).toBe(false);
    noNonFinite(tight);
  });

  it('pool options: typos, strings, fractions and zero are reported together', () => {
    const e = thrown(() => checkPool({ poolsize: 5, rps: '100', timeoutMs: 0 } as never));
    expect(e).toBeInstanceOf(InvalidOptionsError);
    expect(e.message).toContain('did you mean `poolSize`');
    expect(e.message).toContain('`rps`');
    expect(e.message).toContain('`timeoutMs`');
  });

  it('suggestConcurrencyLimit: any input is an integer in [1, 100000] or undefined', () => {
    fc.assert(
      fc.property(fc.anything(), fc.anything(), (rps, p99) => {
        const s = suggestConcurrencyLimit(rps as number, p99 as number);
        if (s !== undefined) {
          expect(Number.isInteger(s.suggested)).toBe(true);
          expect(s.suggested).toBeGreaterThanOrEqual(1);
          expect(s.suggested).toBeLessThanOrEqual(100_000);
        }
      }),
      { numRuns: 200 },
    );
  });

  it('Was a defect: an unknown kind is an InvalidOptionsError naming the kinds, not a TypeError or undefined', () => {
    for (const kind of ['cross-zones', '__proto__', 'toString', 'constructor', '', 5, null]) {
      const a = thrown(() => startingP99Ms(kind as never));
      expect(a, String(kind)).toBeInstanceOf(InvalidOptionsError);
      expect(a.message).toContain('same-zone-database');
      expect(thrown(() => implausibleP99(100, kind as never))).toBeInstanceOf(InvalidOptionsError);
    }
    expect(thrown(() => startingP99Ms('cross-zones' as never)).message).toContain(
      'did you mean `cross-zone`',
    );
    expect(startingP99Ms('cross-zone')).toBe(12);
  });

  it('Was a defect: the exported kind table is frozen row by row (one assignment moved every later start)', () => {
    const row = KIND_PROFILES['cross-zone'] as { startingP99Ms: number };
    expect(() => {
      row.startingP99Ms = 0;
    }).toThrow(TypeError);
    expect(startingP99Ms('cross-zone')).toBe(12);
    for (const kind of DEPENDENCY_KINDS) expect(Object.isFrozen(KIND_PROFILES[kind])).toBe(true);
  });

  it('Was a defect: implausibleP99 with a declaredIn other than config|flags is an InvalidOptionsError', () => {
    for (const bad of ['yaml', 'cli', '', 5]) {
      expect(thrown(() => implausibleP99(0.1, undefined, bad as never))).toBeInstanceOf(InvalidOptionsError);
    }
    expect(implausibleP99(0.1, undefined, 'flags')).toContain('--unit');
    expect(implausibleP99(0.1, undefined, 'config')).toContain('histogram.unit');
  });

  it('Was a defect: a NaN p99 is not "plausible"', () => {
    expect(implausibleP99(Number.NaN, undefined)).toContain('not a number');
    expect(implausibleP99(Number.NaN, 'in-process')).toContain('not a number');
    expect(implausibleP99(50, undefined)).toBeUndefined();
    expect(implausibleP99(-1, 'in-process')).toContain('below');
  });

  it('calibrateTimeout: -0 and the smallest denormal give a 1 ms timeout; typos get "did you mean"', () => {
    expect(calibrateTimeout({ p99Ms: -0 }).responseMs).toBe(1);
    expect(calibrateTimeout({ p99Ms: Number.MIN_VALUE }).responseMs).toBe(1);
    expect(thrown(() => calibrateTimeout({ p99Ms: 5, slak: 1.4 } as never)).message).toContain(
      'did you mean `slack`',
    );
    expect(thrown(() => calibrateTimeout(JSON.parse('{"p99Ms":5,"__proto__":{"slack":9}}')))).toBeInstanceOf(
      InvalidOptionsError,
    );
  });
});

// --- PromQL and the fleet's Prometheus -----------------------------------------------------------

const promtool = hasPromtool;
const dir = promtoolDir('prazo-calibrate-attack-');

/** Every expression through Prometheus' own parser (`promtool check rules`), in one run; its errors. */
function promtoolErrors(exprs: readonly string[]): string {
  const path = join(dir, 'rules.yml');
  const rules = exprs.map((expr, i) => ({ record: `attack:q${i}`, expr }));
  writeFileSync(path, stringify({ groups: [{ name: 'attack', rules }] }));
  try {
    execFileSync('promtool', ['check', 'rules', path], { encoding: 'utf8', stdio: 'pipe' });
    return '';
  } catch (error) {
    const e = error as { stdout?: string; stderr?: string };
    return `${e.stdout ?? ''}${e.stderr ?? ''}`;
  }
}

/** A lone UTF-16 surrogate (no `String.prototype.toWellFormed` in the compiled-against library). */
const LONE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;

/** One code point of any kind, the ones Prometheus reads specially often. */
const CHAR = fc.oneof(
  fc.constantFrom('\ud800', '\udfff', '\u007f', '\u0085', '\u2028', '\ufeff', '\ufffd', '"', '\\', '\n'),
  fc.string({ unit: 'binary', minLength: 1, maxLength: 1 }),
);

describe('PromQL label values: quoting for Prometheus (SPEC X8)', () => {
  const hostile = [
    'a"b',
    'a\\b',
    'line\nbreak',
    'cr\rlf',
    'tab\t',
    'nul\u0000',
    'del\u007f',
    'c1 \u0085\u009b',
    'bom \ufeff, \ufffe\uffff',
    'replacement \ufffd',
    '\u2028\u2029',
    '😀',
    '`backtick`',
    "it's",
    '{job="x"}',
    'x"}) or vector(1) #',
    'lone \ud800 high',
    'lone \udc00 low',
    '\ude00\ud83d reversed pair',
  ];

  it.skipIf(!promtool)(
    'Was a defect: every value (lone surrogates, DEL, C1, BOM, U+2028) gives PromQL Prometheus parses, in YAML too',
    () => {
      const dep = (value: string): FleetDependency['series'] => ({
        metric: 'm_seconds',
        matchers: [['job', '=', value]],
        outcomeLabel: 'prazo_outcome',
        unit: 's',
      });
      const exprs = hostile.flatMap((v) => Object.values(queriesOf(dep(v), 3_600_000)));
      expect(promtoolErrors(exprs)).toBe('');
    },
  );

  it('a quoted value reads back as itself, or with U+FFFD for a lone surrogate (what an exporter writes)', () => {
    fc.assert(
      fc.property(fc.string({ unit: CHAR, maxLength: 30 }), (value) => {
        const literal = quote(value);
        const read = JSON.parse(literal) as string;
        expect(read).toBe(value.replace(LONE, '\ufffd'));
        expect(literal).not.toMatch(/[\u007f-\u009f\u2028\u2029\ufeff\ufffd]/);
        expect(selector('m', [['a', '=', value]])).toBe(`m{a=${literal}}`);
      }),
      { numRuns: 300 },
    );
  });

  it('a selector from the config is parsed, never spliced: injection attempts are refused or requoted', () => {
    expect('problem' in parseSelector('{job="a"} or vector(1)')).toBe(true);
    expect('problem' in parseSelector('{job="a\nb"}')).toBe(true);
    expect('problem' in parseSelector('{le="0.1"}')).toBe(true);
    expect('problem' in parseSelector('{job="a\\qb"}')).toBe(true);
    const read = parseSelector("{job='a\"b', env=`c\\d`}");
    expect(read).toEqual({
      matchers: [
        ['job', '=', 'a"b'],
        ['env', '=', 'c\\d'],
      ],
    });
  });
});

describe('fleet calibration against a hostile Prometheus (SPEC X8, C4)', () => {
  const HOUR = 3_600_000;
  const series = (labels: Record<string, string>, points: [number, number][]): MatrixSeries => ({
    labels: new Map(Object.entries(labels)),
    points,
  });
  const grid = (r: QueryRange, v: number): [number, number][] => {
    const out: [number, number][] = [];
    for (let t = r.startS; t <= r.endS; t += r.stepS) out.push([t, v]);
    return out;
  };
  const fakeClient = (
    buckets: (r: QueryRange) => MatrixSeries[],
    calls: (r: QueryRange) => MatrixSeries[],
  ): PrometheusClient => ({
    origin: 'http://prometheus.test',
    queryRange: async (q, r): Promise<Matrix> => ({
      series: q.includes('_bucket') ? buckets(r) : calls(r),
      warnings: [],
    }),
    close() {},
  });
  const dep = (name: string, unit: 's' | 'ms' = 's'): FleetDependency => ({
    name,
    series: { metric: `m_${unit === 's' ? 'seconds' : 'ms'}`, matchers: [], outcomeLabel: undefined, unit },
    p99Ms: 100,
    timeout: {},
  });
  const fleet = (client: PrometheusClient, deps: FleetDependency[]) =>
    calibrateFleet({
      client,
      dependencies: deps,
      thresholds: resolveHealthThresholds({ minSamples: 10 }),
      window: { windowMs: 3 * HOUR, stepMs: HOUR, endEpochMs: 10 * HOUR },
      clock: new FakeClock(),
    });

  it('Was a defect: a median p99 of 0 ms or past a day gives results, not a rejection of the whole fleet', async () => {
    // Every call in an le="0" bucket (p99 0), and a batch dependency with buckets in days (p99 ~ 30 h).
    const zero = fakeClient(
      (r) => [series({ le: '0' }, grid(r, 100)), series({ le: '+Inf' }, grid(r, 100))],
      (r) => [series({}, grid(r, 100))],
    );
    const days = fakeClient(
      (r) => [
        series({ le: '100000' }, grid(r, 10)),
        series({ le: '200000' }, grid(r, 100)),
        series({ le: '+Inf' }, grid(r, 100)),
      ],
      (r) => [series({}, grid(r, 100))],
    );
    for (const client of [zero, days]) {
      const result = await fleet(client, [dep('a')]);
      const d = result.dependencies[0]!;
      expect(d.failure).toBeUndefined();
      expect(d.windows).toHaveLength(3);
      noNonFinite(d.refused ?? []);
      if (client === days) {
        expect(d.recommendation).toBeUndefined();
        expect(d.refused?.join('\n')).toContain('86400000 ms');
      } else expect(d.recommendation?.responseMs).toBe(1);
    }
  });

  it('Was a defect: a finite le that overflows in ms is refused, not merged into +Inf and counted twice', async () => {
    const client = fakeClient(
      (r) => [series({ le: '1e306' }, grid(r, 100)), series({ le: '+Inf' }, grid(r, 100))],
      (r) => [series({}, grid(r, 100))],
    );
    const d = (await fleet(client, [dep('a')])).dependencies[0]!;
    expect(d.failure?.reason).toBe('body');
    expect(d.failure?.message).toContain('too large');
  });

  it('NaN / +Inf / negative counts are one dependency’s failure; the others are still calibrated', async () => {
    const good = (r: QueryRange) => [
      series({ le: '0.1' }, grid(r, 95)),
      series({ le: '0.2' }, grid(r, 100)),
      series({ le: '+Inf' }, grid(r, 100)),
    ];
    for (const bad of [Number.NaN, Number.POSITIVE_INFINITY, -1]) {
      const client: PrometheusClient = {
        origin: 'x',
        queryRange: async (q, r) => ({
          series: q.includes('m_ms')
            ? [series({ le: '+Inf' }, grid(r, bad))]
            : q.includes('_bucket')
              ? good(r)
              : [series({}, grid(r, 100))],
          warnings: [],
        }),
        close() {},
      };
      const [hostile, fine] = (await fleet(client, [dep('hostile', 'ms'), dep('fine')])).dependencies;
      expect(hostile!.failure?.reason).toBe('body');
      expect(fine!.failure).toBeUndefined();
      expect(fine!.recommendation?.responseMs).toBeGreaterThan(100);
    }
  });

  it('Was a defect: buckets without +Inf, only +Inf, or none: refused sub-windows that say so, not "no successful call"', async () => {
    const variants: [(r: QueryRange) => MatrixSeries[], string][] = [
      [(r) => [series({ le: '0.1' }, grid(r, 90)), series({ le: '1' }, grid(r, 100))], 'no le="+Inf" series'],
      [(r) => [series({ le: '+Inf' }, grid(r, 100))], 'every call is in the +Inf bucket'],
      [
        (r) => [
          series(
            { le: '0.1' },
            grid(r, 90).map(([t, v]): [number, number] => [t + 0.5, v]),
          ),
        ],
        'no bucket series',
      ],
      [() => [], 'no bucket series'],
    ];
    for (const [buckets, why] of variants) {
      const d = (
        await fleet(
          fakeClient(buckets, (r) => [series({}, grid(r, 100))]),
          [dep('a')],
        )
      ).dependencies[0]!;
      expect(d.recommendation).toBeUndefined();
      expect(d.refused?.length).toBeGreaterThan(0);
      for (const w of d.windows) {
        expect(w.verdict.health).toBe('degraded');
        expect(w.verdict.reasons.join('\n')).toContain(why);
        expect(w.verdict.reasons.join('\n')).not.toContain('no successful call');
      }
    }
  });

  it('Was a defect: a token or basic-auth pair that would break its header is refused at construction, never quoted', () => {
    const bad: Record<string, unknown>[] = [
      { bearerToken: 'hunter2-token\n' }, // read from a file with its newline
      { bearerToken: 'hunter2 token' },
      { bearerToken: 'hunter2\r\nX-Injected: 1' },
      { bearerToken: 'hunter2-€' },
      { bearerToken: `hunter2-${'x'.repeat(9000)}` },
      { basicAuth: { username: 'ops:team', password: 'hunter2' } },
      { basicAuth: { username: 'ops', password: 'hunter2\r\n' } },
      { url: 'http://ops:hunter2@host with space' },
      { url: `http://ops:hunter2@host/${'x'.repeat(3000)}` },
    ];
    for (const o of bad) {
      const e = thrown(() => createPrometheusClient({ url: 'http://127.0.0.1:9', ...o } as never));
      expect(e, JSON.stringify(o).slice(0, 60)).toBeInstanceOf(InvalidOptionsError);
      expect(e.message).not.toContain('hunter2');
    }
    createPrometheusClient({ url: 'http://127.0.0.1:9', bearerToken: 'eyJh.eyJz-_~+/=' }).close();
  });

  it('Was a defect: a NaN or reversed query range is refused in words, never "a range of NaN steps"', async () => {
    const client = createPrometheusClient({ url: 'http://127.0.0.1:9', clock: new FakeClock() });
    try {
      for (const range of [
        { startS: Number.NaN, endS: 10, stepS: 1 },
        { startS: 0, endS: Number.POSITIVE_INFINITY, stepS: 1 },
        { startS: 10, endS: 0, stepS: 1 },
        { startS: 0, endS: 10, stepS: 0 },
      ]) {
        const e = await client.queryRange('up', range).then(
          () => new Error('answered'),
          (error: Error) => error,
        );
        expect(e).toBeInstanceOf(PrometheusQueryError);
        expect(e.message).toContain('not a range');
        expect(e.message).not.toMatch(/NaN steps|-?\d+ steps/);
      }
      const tooMany = await client
        .queryRange('up', { startS: 0, endS: 20_000, stepS: 1 })
        .catch((e: Error) => e);
      expect(String(tooMany)).toContain('20001 steps');
    } finally {
      client.close();
    }
  });

  it('Was a defect: URL credentials that are not valid percent-encoding are kept as written, not a URIError', () => {
    for (const url of ['http://us%zzer:pw@127.0.0.1:9', 'http://user:p%E0@127.0.0.1:9']) {
      const client = createPrometheusClient({ url, clock: new FakeClock() });
      expect(client.origin).toBe('http://127.0.0.1:9');
      client.close();
    }
    const e = thrown(() => createPrometheusClient({ url: 'ftp://x', timeoutMs: 0, concurency: 2 } as never));
    expect(e).toBeInstanceOf(InvalidOptionsError);
    expect(e.message).toContain('did you mean `concurrency`');
  });
});
