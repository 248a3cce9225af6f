import { describe, expect, it } from 'vitest';
import { parseCsv } from './csv.js';
import { detectFormat } from './detect.js';
import { parseSampleList } from './samples.js';

const samples = Array.from({ length: 1000 }, (_, i) => i + 1);

describe('sample lists and CSV', () => {
  it('a newline list: exact nearest-rank quantiles, comments skipped, errors name the line', () => {
    const d = parseSampleList(`# ms\n${samples.join('\n')}\n`);
    expect(d).toMatchObject({ p50: 500, p95: 950, p99: 990, p999: 999, count: 1000 });
    expect(parseSampleList('0.25\n0.5', 's').p99).toBe(500);
    expect(() => parseSampleList('10\nabc\n')).toThrow('line 2: not a latency: "abc"');
    expect(() => parseSampleList('10\n-1\n')).toThrow(/line 2/);
    expect(() => parseSampleList('# nothing\n')).toThrow(/no samples/);
  });

  it('CSV: finds the latency column and its unit, counts outcomes from a status column', () => {
    const rows = samples.map((ms, i) => `${i},${ms / 1000},${i % 100 === 0 ? 503 : 200}`);
    const d = parseCsv(['id,duration_seconds,status', ...rows].join('\n'));
    expect(d).toMatchObject({ successes: 990, errors: 10, timeouts: 0 });
    expect(d.p99).toBeCloseTo(991, 9);
    const quoted = parseCsv('"name","latency"\n"a, b",12\n"c ""d""",30\n', { unit: 'ms' });
    expect(quoted).toMatchObject({ p99: 30, successes: 2 });
    expect(quoted.notes[0]).toBe('column latency in ms (as given)');
    // A name without a unit and no `unit`: refused, never assumed (issue 27: `took` in seconds read
    // as ms gave a p99 of 0.13 ms, `· column took in ms (assumed)`).
    expect(() => parseCsv('ts,took\n1,0.12\n')).toThrow(
      'line 1: column took does not say its unit (a name ending in _ms, _s, _seconds or _us would): give it, --unit s|ms|us',
    );
    expect(parseCsv('ts,took\n1,0.12\n', { unit: 's' }).p99).toBe(120);
    expect(parseCsv('t;took_ms;outcome\n1;5;success\n2;9;timeout\n')).toMatchObject({
      successes: 1,
      timeouts: 1,
    });
  });

  it('CSV: a quoted field may hold a line break (RFC 4180), and errors name the line its record starts on (#14)', () => {
    // Before: the record was cut at the break and failed with "unbalanced quote".
    const d = parseCsv('latency_ms,note\n12,"first line\nsecond line"\n30,"a ""quote"", a comma"\n7,plain\n');
    expect(d).toMatchObject({ successes: 3, p99: 30 });
    expect(parseCsv('latency_ms,note\r\n5,"a\r\nb\r\n\r\nc"\r\n6,x\r\n')).toMatchObject({ successes: 2 });
    expect(parseCsv('"latency\nms",x\n5,1\n', { column: 'latency\nms', unit: 'ms' }).successes).toBe(1);
    expect(() => parseCsv('latency_ms,note\n12,"never\nends\n')).toThrow('line 2: unbalanced quote');
    expect(() => parseCsv('latency_ms,note\n12,ok\nfast,"a\nb"\n')).toThrow(/^line 3: column latency_ms/);
  });

  it('CSV errors point at the line and the column', () => {
    expect(() => parseCsv('a,b\n1,2\n')).toThrow(/line 1: no latency column/);
    expect(() => parseCsv('latency_ms\n5\nfast\n')).toThrow(
      'line 3: column latency_ms is not a latency: "fast"',
    );
    expect(() => parseCsv('x,y\n1,2\n', { column: 'z' })).toThrow(/no column named "z"/);
    expect(parseCsv('x,y\n1,2\n', { column: 'y', unit: 'ms' }).p50).toBe(2);
  });

  it('detects the format', () => {
    expect(detectFormat('a_bucket{le="1"} 3\n')).toBe('prometheus');
    expect(detectFormat('latency_ms,status\n1,200\n')).toBe('csv');
    expect(detectFormat('latency_ms\n1\n')).toBe('csv');
    expect(detectFormat('# comment\n12\n13\n')).toBe('samples');
  });
});
