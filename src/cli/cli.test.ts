import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { exactQuantile, logNormal, mulberry32 } from '../latency/prng.test-helpers.js';
import { runCli } from './cli.test-helpers.js';

const tmp = (files: Record<string, string>): string => {
  const dir = mkdtempSync(join(tmpdir(), 'prazo-cli-'));
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
  return dir;
};

describe('prazo calibrate', () => {
  it("the seed's worked example from --p99: 126 / 252 / 2 attempts, exit 0", async () => {
    const r = await runCli(['calibrate', '--p99', '180', '--deadline', '1500', '--json']);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.out).recommendation).toEqual({
      connectMs: 126, // at most half the attempt (the seed's was min(400, 252))
      responseMs: 252,
      attempts: 2,
      warning: null,
      feasible: true,
    });
  });

  it('warns when the attempts do not fit; exit 1 only with --strict', async () => {
    const argv = ['calibrate', '--p99', '180', '--deadline', '600', '--attempts', '3'];
    const loose = await runCli(argv);
    expect(loose.code).toBe(0);
    expect(loose.out).toContain('deadline of 600 ms fits 2 attempt(s), not 3');
    expect(loose.out).toMatch(/response timeout\s+252 ms/);
    expect((await runCli([...argv, '--strict'])).code).toBe(1);
    const infeasible = await runCli(['calibrate', '--p99', '180', '--deadline', '200', '--strict']);
    expect(infeasible.code).toBe(1);
    expect(infeasible.out).toContain('INFEASIBLE');
  });

  it('accepts the healthy example histogram and refuses the degraded one (SPEC C4)', async () => {
    const healthy = await runCli(['calibrate', '--histogram', 'histograms/supplier-healthy.prom', '--json']);
    expect(healthy.code).toBe(0);
    const h = JSON.parse(healthy.out);
    expect(h.health.health).toBe('healthy');
    expect(h.recommendation).toMatchObject({ responseMs: 90, connectMs: 45, attempts: 2 });
    const degraded = await runCli(['calibrate', '--histogram', 'histograms/supplier-degraded.prom']);
    expect(degraded.code).toBe(1);
    expect(degraded.out).toContain('REFUSED');
    expect(degraded.out).toContain('error rate 5.8% above 2.0%');
    expect(degraded.out).not.toContain('response timeout');
    const json = JSON.parse(
      (await runCli(['calibrate', '--histogram', 'histograms/supplier-degraded.prom', '--json'])).out,
    );
    expect(json.recommendation).toBeNull();
    // a p99 jump alone is enough when a baseline is known
    const jump = await runCli([
      'calibrate',
      '--histogram',
      'histograms/supplier-healthy.prom',
      '--baseline-p99',
      '30',
    ]);
    expect(jump.code).toBe(1);
    expect(jump.out).toContain('2.14x the healthy baseline 30 ms');
  });

  it('reads a sample list and a CSV, with exact quantiles', async () => {
    const samples = logNormal(mulberry32(3), 5000, 40, 0.6);
    const sorted = Float64Array.from(samples).sort();
    const p99 = sorted[Math.ceil(0.99 * sorted.length) - 1]!;
    const dir = tmp({
      'lat.txt': `${Array.from(samples).join('\n')}\n`,
      'lat.csv': `ts,duration_seconds,status\n${Array.from(samples, (v, i) => `${i},${v / 1000},200`).join('\n')}\n`,
    });
    for (const file of ['lat.txt', 'lat.csv']) {
      // A sample list has no name to say its unit: it is given (issue 27); the CSV column's name says it.
      const unit = file === 'lat.txt' ? ['--unit', 'ms'] : [];
      const r = await runCli(['calibrate', '--histogram', file, ...unit, '--json'], dir);
      expect(r.code).toBe(0);
      const report = JSON.parse(r.out);
      expect(report.source.p99).toBeCloseTo(p99, 6);
      expect(report.recommendation.responseMs).toBe(Math.ceil(p99 * 1.4));
    }
    expect(exactQuantile(sorted, 0.5)).toBeGreaterThan(30);
  });

  it('flags a window too small to judge, and checks the pool (SPEC C6)', async () => {
    const dir = tmp({ 'few.txt': '10\n20\n30\n' });
    const r = await runCli(
      ['calibrate', '--histogram', 'few.txt', '--unit', 'ms', '--pool-size', '50', '--rps', '100'],
      dir,
    );
    expect(r.code).toBe(0);
    expect(r.out).toContain('fewer than the 100 needed');
    const pool = await runCli([
      'calibrate',
      '--p99',
      '1000',
      '--pool-size',
      '50',
      '--rps',
      '100',
      '--strict',
    ]);
    expect(pool.code).toBe(1);
    expect(pool.out).toContain('exceeds the 500 ms a pool of 50 tolerates at 100 req/s');
  });

  it('bad input: exit 2 with a one-line reason', async () => {
    const dir = tmp({
      'bad.prom': 'x_seconds_bucket{le="0.1"} 5\nx_seconds_bucket{le="0.2" 7\n',
      'empty.txt': '',
    });
    const cases: Array<[string[], RegExp]> = [
      [['calibrate'], /exactly one of --p99 <ms>, --histogram <file> or --prometheus <url>/],
      [['calibrate', '--p99', '1', '--histogram', 'x'], /exactly one of/],
      [['calibrate', '--p99', '-5'], /--p99 must be a non-negative number of ms, got "-5"/],
      [
        ['calibrate', '--p99', '180', '--slack', '2'],
        /`slack` must be a finite number in \[1.3, 1.5\], got 2/,
      ],
      [['calibrate', '--p99', '180', '--attempts', '2.5'], /`attempts` must be an integer/],
      [['calibrate', '--histogram', 'nope.prom'], /cannot read nope.prom/],
      [['calibrate', '--histogram', 'bad.prom'], /bad.prom: line 2: malformed labels/],
      [['calibrate', '--histogram', 'empty.txt'], /no samples found/],
      [['calibrate', '--histogram', 'bad.prom', '--unit', 'h'], /--unit must be one of s, ms, us/],
      [['calibrate', '--bogus'], /unknown option '--bogus'/],
      [['nope'], /unknown command 'nope'/],
    ];
    for (const [argv, reason] of cases) {
      const r = await runCli(argv, dir);
      expect(r.code, argv.join(' ')).toBe(2);
      expect(r.err, argv.join(' ')).toMatch(reason);
      expect(r.err.trim().split('\n'), argv.join(' ')).toHaveLength(1);
    }
    expect((await runCli(['calibrate', '--p99', '180', '--slack', '2', '--force-slack'])).code).toBe(0);
  });
});

describe('prazo check', () => {
  it('validates the shipped example: every dependency and the POST /pedidos budget, exit 0', async () => {
    const r = await runCli(['check', 'prazo.config.yaml']);
    expect(r.code).toBe(0);
    expect(r.out).toContain('prazo.config.yaml: ok');
    expect(r.out).toMatch(
      /supplier\s+p99 64.29 ms \(from histograms\/supplier-healthy.prom\) → 45 \/ 90 ms × 2/,
    );
    expect(r.out).toMatch(/servico_estoque\s+300 ms {2}remote → inventory: response 119 ms × 2/);
    expect(r.out).toContain('0 error(s), 0 warning(s)');
    const json = JSON.parse((await runCli(['check', 'prazo.config.yaml', '--json'])).out);
    expect(json.summary.endpoints[0].totalSloMs).toBe(800);
  });

  it('prints every problem with file, line and key; exit 2 on errors, 1 on warnings with --strict', async () => {
    const dir = tmp({
      'bad.yaml': 'dependencies:\n  - name: a\n    p99Ms: 0\n  - name: b\n    p99Ms: 10\n    atempts: 3\n',
      'warn.yaml': 'dependencies:\n  - { name: a, p99Ms: 180, attempts: 3, defaultDeadlineMs: 600 }\n',
      'degraded.yaml': 'dependencies:\n  - name: s\n    histogram: { file: h.prom }\n',
      'h.prom':
        '# degraded\nx_seconds_bucket{outcome="success",le="0.1"} 900\nx_seconds_bucket{outcome="success",le="+Inf"} 900\nx_seconds_bucket{outcome="error",le="+Inf"} 100\n',
    });
    const bad = await runCli(['check', 'bad.yaml'], dir);
    expect(bad.code).toBe(2);
    // Exit 2: everything on stderr, nothing on stdout (docs/cli.md; before: all of it on stdout).
    expect(bad.out).toBe('');
    expect(bad.err).toContain(
      'bad.yaml:3:5: error: dependencies[0].p99Ms: must be a finite number in (0, 86400000], got 0',
    );
    expect(bad.err).toContain(
      'bad.yaml:6:5: error: dependencies[1].atempts: unknown key; did you mean `attempts`?',
    );
    expect(bad.err).toContain('2 error(s), 0 warning(s)');
    const badJson = await runCli(['check', 'bad.yaml', '--json'], dir);
    expect([badJson.code, JSON.parse(badJson.out).errors]).toEqual([2, 2]);
    expect(badJson.err).toBe('prazo check: bad.yaml: 2 error(s), 0 warning(s)\n');
    const warned = await runCli(['check', 'warn.yaml'], dir);
    expect(warned.err).toContain('warning: dependencies[0].defaultDeadlineMs: deadline of 600 ms fits 2');
    expect(warned.out).toContain('warn.yaml: ok');
    expect((await runCli(['check', 'warn.yaml'], dir)).code).toBe(0);
    expect((await runCli(['check', 'warn.yaml', '--strict'], dir)).code).toBe(1);
    const degraded = await runCli(['check', 'degraded.yaml'], dir);
    expect(degraded.code).toBe(2);
    expect(degraded.err).toContain(
      'degraded.yaml:3:5: error: dependencies[0].histogram: h.prom: degraded window (error rate 10.0% above 2.0%)',
    );
    const missing = await runCli(['check', 'missing.yaml'], dir);
    expect(missing.code).toBe(2);
    expect(missing.err).toContain('missing.yaml: error: cannot read');
    expect(missing.out).toBe('');
  });

  it('a file with thousands of problems: the first 100, one line counting the rest, the true totals (SPEC C7)', async () => {
    const dir = tmp({ 'many.yaml': '  - b: ]\n'.repeat(1000) }); // 4,000 syntax errors
    const r = await runCli(['check', 'many.yaml'], dir);
    expect([r.code, r.out]).toEqual([2, '']);
    const listed = r.err.split('\n').filter((l) => /^many\.yaml:/.test(l));
    expect(listed).toHaveLength(101);
    expect(listed[0]).toMatch(/^many\.yaml:1:8: error: Unexpected flow-seq-end token/);
    expect(listed[100]).toBe(
      'many.yaml: error: … and 3897 more (3897 error(s), 0 warning(s)): only the first 100 problems are listed',
    );
    expect(r.err.endsWith('\n3997 error(s), 0 warning(s)\n')).toBe(true);
    const json = await runCli(['check', 'many.yaml', '--json'], dir);
    const report = JSON.parse(json.out);
    expect([json.code, report.errors, report.warnings, report.problems.length]).toEqual([2, 3997, 0, 101]);
    expect(json.err).toBe('prazo check: many.yaml: 3997 error(s), 0 warning(s)\n');
  });

  it("shows Little's law on the concurrency limit with its numbers; silent without a rate (SPEC C6, X7)", async () => {
    const dir = tmp({
      'limit.yaml': [
        'dependencies:',
        '  - { name: low, p99Ms: 120, pool: { size: 100, rps: 200 }, concurrencyLimit: { maxInFlight: 8 } }',
        '  - { name: none, p99Ms: 120, pool: { size: 100, rps: 200 } }',
        '  - { name: norate, p99Ms: 120, concurrencyLimit: { maxInFlight: 1 } }',
        '  - { name: over, p99Ms: 120, pool: { size: 20, rps: 100 }, concurrencyLimit: { maxInFlight: 25 } }',
      ].join('\n'),
    });
    const r = await runCli(['check', 'limit.yaml'], dir);
    expect(r.code).toBe(0);
    expect(r.err).toContain(
      "warning: dependencies[0].concurrencyLimit: limit 8 is below Little's law: 200 rps × 0.120 s = 24 in flight at p99; suggest 30",
    );
    expect(r.out).toContain(
      "concurrency limit 8: below the suggested 30; Little's law: 200 rps × 0.120 s = 24 in flight at p99",
    );
    expect(r.out).toContain(
      "no concurrency limit; Little's law: 200 rps × 0.120 s = 24 in flight at p99; suggest maxInFlight 30",
    );
    expect(r.out).toContain(
      "concurrency limit 25: above the pool of 20; Little's law: 100 rps × 0.120 s = 12 in flight at p99",
    );
    expect(r.out.match(/Little's law/g)).toHaveLength(3); // norate: nothing
    expect((await runCli(['check', 'limit.yaml', '--strict'], dir)).code).toBe(1);
    const json = JSON.parse((await runCli(['check', 'limit.yaml', '--json'], dir)).out);
    expect(json.summary.dependencies[0].concurrency).toEqual({
      rps: 200,
      p99Ms: 120,
      inFlightAtP99: 24,
      suggested: 30,
      limit: 8,
    });
    expect(json.summary.dependencies[2].concurrency).toBeUndefined();
  });

  it('prints help and version with exit 0', async () => {
    const help = await runCli(['--help']);
    expect(help.code).toBe(0);
    expect(help.out).toContain('calibrate');
    expect(help.out).toContain('check');
    const version = await runCli(['--version']);
    expect(version.code).toBe(0);
    expect(version.out.trim()).toMatch(/^\d+\.\d+\.\d+/);
  });
});
