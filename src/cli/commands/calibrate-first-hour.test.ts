import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { checkConfigText, loadConfig } from '../../config/load.js';
import { InvalidOptionsError } from '../../errors/options.js';
import { createHttpClient, type HttpClient } from '../../http/client.js';
import { runCli } from '../cli.test-helpers.js';

/**
 * Issue 27, "the first hour": each friction a new user met, replayed through the CLI as they met it,
 * with the output before (quoted in the comments, from the code before the fix) and after. Then the
 * first dependency end to end: declared with `kind:` only, serving traffic on loopback, and ending with
 * a measured p99 in its file through `prazo calibrate --write`.
 */

const dirWith = (files: Record<string, string>): string => {
  const dir = mkdtempSync(join(tmpdir(), 'prazo-first-hour-'));
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
  return dir;
};

/** 500 calls between 50 and 130 ms, written in seconds under a column that does not say so. */
function tookInSeconds(): string {
  let out = 'ts,took\n';
  let r = 1;
  for (let i = 0; i < 500; i += 1) {
    r = (r * 16_807) % 2_147_483_647;
    out += `${i},${(0.05 + 0.08 * (r / 2_147_483_647)).toFixed(4)}\n`;
  }
  return out;
}

describe('friction 1: a unit misread silently', () => {
  it('calibrate: a column without a unit needs --unit; a p99 no network call has is an error', async () => {
    const dir = dirWith({ 'lat.csv': tookInSeconds() });
    // Before: `· column took in ms (assumed)`, p99 0.1 ms, response timeout 1 ms, exit 0.
    const bare = await runCli(['calibrate', '--histogram', 'lat.csv'], dir);
    expect(bare.code).toBe(2);
    expect(bare.out).toBe('');
    expect(bare.err).toBe(
      "prazo calibrate: lat.csv: line 1: column took does not say its unit (a name ending in _ms, _s, _seconds or _us would): give it, --unit s|ms|us (or `unit:` under the config's `histogram`)\n",
    );
    // The unit given wrong is caught by the p99 itself: 0.129 ms is no call over a network.
    const wrong = await runCli(['calibrate', '--histogram', 'lat.csv', '--unit', 'ms'], dir);
    expect(wrong.code).toBe(2);
    expect(wrong.err).toBe(
      'prazo calibrate: lat.csv: p99 0.129 ms is below 1 ms, faster than a call over a network can be: a latency in seconds read as ms? Check the unit (--unit s|ms|us); if it is real, declare --kind in-process (or --kind same-zone-cache, down to 0.03 ms), or --unusual-p99\n',
    );
    // Declared real (an in-process cache), it is taken.
    expect(
      (await runCli(['calibrate', '--histogram', 'lat.csv', '--unit', 'ms', '--kind', 'in-process'], dir))
        .code,
    ).toBe(0);
    const right = await runCli(['calibrate', '--histogram', 'lat.csv', '--unit', 's', '--json'], dir);
    expect(right.code).toBe(0);
    const report = JSON.parse(right.out);
    expect(report.source.notes).toContain('column took in s (as given)');
    expect(report.source.p99).toBeCloseTo(129.4, 0);
    expect(report.recommendation.responseMs).toBe(181);
    // A sample list has no name at all: its unit is given too.
    writeFileSync(join(dir, 'lat.txt'), '12\n15\n');
    expect((await runCli(['calibrate', '--histogram', 'lat.txt'], dir)).err).toContain(
      'a list of 2 latencies does not say its unit',
    );
  });

  it('check: the same file as histogram.file is an error, not a 1 ms timeout', async () => {
    const config = (unit: string) =>
      `dependencies:\n  - name: supplier\n    histogram: { file: lat.csv${unit} }\n    attempts: 3\n`;
    const dir = dirWith({ 'lat.csv': tookInSeconds(), 'prazo.config.yaml': config('') });
    // Before: `supplier p99 0.13 ms (from lat.csv) → 1 / 1 ms × 3`, 0 error(s), 0 warning(s), exit 0.
    const before = await runCli(['check'], dir);
    expect(before.code).toBe(2);
    expect(before.err).toContain(
      'prazo.config.yaml:3:18: error: dependencies[0].histogram.file: lat.csv: line 1: column took does not say its unit',
    );
    writeFileSync(join(dir, 'prazo.config.yaml'), config(', unit: ms'));
    const wrong = await runCli(['check'], dir);
    expect(wrong.code).toBe(2);
    expect(wrong.err).toContain(
      'prazo.config.yaml:3:5: error: dependencies[0].histogram: p99 0.129 ms is below 1 ms, faster than a call over a network can be: a latency in seconds read as ms? Check the unit (`histogram.unit`, a column named *_ms or *_seconds); if it is real, declare `kind: in-process`',
    );
    writeFileSync(join(dir, 'prazo.config.yaml'), config(', unit: s'));
    const right = await runCli(['check'], dir);
    expect(right.code).toBe(0);
    expect(right.out).toContain('supplier         p99 129 ms (from lat.csv) → 91 / 181 ms × 3');
  });
});

describe('friction 3: errors that say what happened and what to do', () => {
  it('a YAML error keeps its code frame, and a problem at the end of the file is on its last line', async () => {
    const dir = dirWith({
      'indent.yaml':
        'dependencies:\n  - name: supplier\n    p99Ms: 80\n  - name: inventory\n    p99Ms: 40\n  name: orders\n',
      'quote.yaml': 'dependencies:\n  - name: supplier\n    p99Ms: 80\n  - name: "inventory\n    p99Ms: 40\n',
    });
    // Before: `indent.yaml:6:1: error: All mapping items must start at the same column at line 6, column 1:`
    // (a sentence ending on a colon: the frame was cut off).
    expect((await runCli(['check', 'indent.yaml'], dir)).err).toBe(
      [
        'indent.yaml:6:1: error: All mapping items must start at the same column',
        '    5 |     p99Ms: 40',
        '    6 |   name: orders',
        '      | ^',
        '',
        '1 error(s), 0 warning(s)',
        '',
      ].join('\n'),
    );
    // Before: `quote.yaml:6:1: error: Missing closing "quote at line 6, column 1:` in a 5-line file.
    expect((await runCli(['check', 'quote.yaml'], dir)).err).toBe(
      [
        'quote.yaml:5:13: error: Missing closing "quote',
        '    5 |     p99Ms: 40',
        '      |             ^',
        '',
        '1 error(s), 0 warning(s)',
        '',
      ].join('\n'),
    );
  });

  it('check says every problem in one pass, and maps other libraries’ names to prazo’s', async () => {
    const dir = dirWith({
      'prazo.config.yaml': [
        'dependencies:',
        '  - name: supplier',
        '    p99Ms: 80',
        '  - name: supplier',
        '    p99Ms: 40',
        '    timeout: 500',
        '    origin: http://10.0.0.7:8080',
        '    retries: 3',
        '    baseURL: http://x',
        '',
      ].join('\n'),
    });
    // Before: four `unknown key` lines and no word of the duplicate name, said only once they were fixed.
    const r = await runCli(['check'], dir);
    expect(r.code).toBe(2);
    expect(r.err.split('\n').slice(0, 5)).toEqual([
      'prazo.config.yaml:4:5: error: dependencies[1].name: duplicate dependency supplier',
      "prazo.config.yaml:6:5: error: dependencies[1].timeout: unknown key; did you mean `p99Ms`? prazo has no fixed timeout: the connect and response timeouts are derived from the dependency's measured p99 (`p99Ms` × slack), and the whole call is bounded by its deadline (`defaultDeadlineMs`, or the caller's)",
      "prazo.config.yaml:7:5: error: dependencies[1].origin: unknown key; the file holds a dependency's timing, not its address: give `origin` to `createHttpClient` (or the interceptor) in code, with the same `name`",
      'prazo.config.yaml:8:5: error: dependencies[1].retries: unknown key; did you mean `attempts`? `attempts` counts every attempt, the first included (`retries: 2` is `attempts: 3`), and a retry also needs room in the retry budget and in the deadline',
      "prazo.config.yaml:9:5: error: dependencies[1].baseURL: unknown key; the file holds a dependency's timing, not its address: give `origin` to `createHttpClient` (or the interceptor) in code, with the same `name`",
    ]);
  });

  it('an unknown key does not hide the entry’s calibration problems', () => {
    const { problems } = checkConfigText(
      'dependencies:\n  - name: a\n    p99Ms: 180\n    defaultDeadlineMs: 100\n    timeoutt: 5\n',
      { readText: () => '' },
    );
    // Before: only the unknown key; the infeasible deadline came after it was fixed.
    expect(problems.map((p) => `${p.line}: ${p.key}`)).toEqual([
      '4: dependencies[0].defaultDeadlineMs',
      '5: dependencies[0].timeoutt',
    ]);
    expect(problems[0]!.message).toContain('infeasible');
  });

  it('config.dependency(name) throws with a suggestion, not a TypeError', () => {
    const dir = dirWith({
      'prazo.config.yaml':
        'dependencies:\n  - { name: supplier, p99Ms: 80 }\n  - { name: orders, p99Ms: 40 }\n',
    });
    const config = loadConfig(join(dir, 'prazo.config.yaml'));
    expect(config.dependency('supplier').options.p99Ms).toBe(80);
    // Before: `config.dependencies.get('suplier')!.options` → TypeError: Cannot read properties of undefined.
    let error: unknown;
    try {
      config.dependency('suplier');
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(InvalidOptionsError);
    expect((error as InvalidOptionsError).problems).toEqual([
      'no dependency "suplier"; did you mean `supplier`? (the file declares: supplier, orders)',
    ]);
  });
});

describe('friction 5: exit codes CI can use, and writes from a file', () => {
  it('an infeasible deadline exits 1', async () => {
    // Before: `deadline 150 ms INFEASIBLE`, exit 0.
    const r = await runCli(['calibrate', '--p99', '120', '--deadline', '150']);
    expect(r.out).toContain('150 ms INFEASIBLE');
    expect(r.code).toBe(1);
  });

  it('file calibration prints the p99Ms line, and --write puts it in the file (comments kept)', async () => {
    const config = [
      '# the shop',
      'dependencies:',
      '  - name: supplier # the supplier API',
      '    kind: cross-zone',
      '    attempts: 2',
      '  - { name: orders, kind: same-zone-database } # flow style',
      '',
    ].join('\n');
    const dir = dirWith({ 'lat.csv': tookInSeconds(), 'prazo.config.yaml': config });
    // Before: connect and response timeouts only; --write was `only with --prometheus <url>`.
    const shown = await runCli(['calibrate', '--histogram', 'lat.csv', '--unit', 's'], dir);
    expect(shown.out).toContain(
      '\nconfig\n  p99Ms: 129    # under the dependency in prazo.config.yaml (--dependency NAME --write puts it there)\n',
    );
    const write = (name: string) =>
      runCli(['calibrate', '--histogram', 'lat.csv', '--unit', 's', '--dependency', name, '--write'], dir);
    const first = await write('supplier');
    expect(first.code).toBe(0);
    expect(first.out).toContain(
      'p99Ms: 129    # written to prazo.config.yaml, supplier (was 12, assumed from kind cross-zone)',
    );
    expect((await write('orders')).code).toBe(0);
    expect(readFileSync(join(dir, 'prazo.config.yaml'), 'utf8')).toBe(
      [
        '# the shop',
        'dependencies:',
        '  - name: supplier # the supplier API',
        '    p99Ms: 129',
        '    kind: cross-zone',
        '    attempts: 2',
        '  - { name: orders, p99Ms: 129, kind: same-zone-database } # flow style',
        '',
      ].join('\n'),
    );
    // Measured now: nothing assumed, nothing to warn about; a second write changes only the digits.
    const check = await runCli(['check'], dir);
    expect(check.err).toBe('');
    expect(check.out).not.toContain('ASSUMED');
    // Ten times faster now: the second write changes the digits of that one number, nothing else.
    writeFileSync(join(dir, 'lat.csv'), tookInSeconds().replaceAll(',0.', ',0.0'));
    const again = await write('supplier');
    expect(again.code).toBe(0);
    const after = readFileSync(join(dir, 'prazo.config.yaml'), 'utf8');
    expect(after).toMatch(/\n {4}p99Ms: 1[23](\.\d+)?\n/);
    expect(after.replace(/p99Ms: 1[23](\.\d+)?\n/, 'p99Ms: 129\n')).toBe(
      config
        .replace('    kind: cross-zone', '    p99Ms: 129\n    kind: cross-zone')
        .replace('orders,', 'orders, p99Ms: 129,'),
    );
  });

  it('--write refuses a window too small to judge, and an entry whose p99 a histogram file gives', async () => {
    const dir = dirWith({
      'few.txt': '10\n12\n15\n',
      'h.txt': `${Array.from({ length: 200 }, (_, i) => 10 + (i % 7)).join('\n')}\n`,
      'prazo.config.yaml':
        'dependencies:\n  - { name: a, kind: same-zone-service }\n  - { name: inventory, histogram: { file: h.txt, unit: ms } }\n',
    });
    const few = await runCli(
      ['calibrate', '--histogram', 'few.txt', '--unit', 'ms', '--dependency', 'a', '--write'],
      dir,
    );
    expect(few.code).toBe(2);
    expect(few.err).toContain('not written: the window has too few calls to judge');
    const fromFile = await runCli(
      ['calibrate', '--histogram', 'h.txt', '--unit', 'ms', '--dependency', 'inventory', '--write'],
      dir,
    );
    expect(fromFile.code).toBe(2);
    expect(fromFile.err).toContain("not written: inventory's p99 is read from h.txt at load");
    const typo = await runCli(
      ['calibrate', '--histogram', 'h.txt', '--unit', 'ms', '--dependency', 'inventori', '--write'],
      dir,
    );
    expect(typo.err).toContain('no dependency "inventori"; did you mean `inventory`?');
    expect(readFileSync(join(dir, 'prazo.config.yaml'), 'utf8')).not.toContain('p99Ms');
  });
});

describe('the first dependency, from kind: to a measured p99 (issue 27)', () => {
  let supplier: Server | undefined;
  let client: HttpClient | undefined;
  afterEach(async () => {
    await client?.close();
    await new Promise((resolve) => (supplier === undefined ? resolve(undefined) : supplier.close(resolve)));
  });

  it('declares kind only, serves traffic on loopback, records its latencies, and writes the measured p99', async () => {
    const dir = dirWith({
      'prazo.config.yaml': [
        '# orders → supplier',
        'version: 1',
        'dependencies:',
        '  - name: supplier',
        '    kind: cross-region # not measured yet: starts from the published figures',
        '    attempts: 2',
        '',
      ].join('\n'),
    });
    const configFile = join(dir, 'prazo.config.yaml');
    // 1. The file loads with the assumed p99, and says so.
    const assumed = await runCli(['check'], dir);
    expect(assumed.code).toBe(0);
    expect(assumed.out).toContain(
      'supplier         p99 160 ms ASSUMED (cross-region, not measured) → 112 / 224 ms × 2',
    );
    expect(assumed.err).toContain('warning: dependencies[0].kind: p99 assumed: 160 ms');
    const entry = loadConfig(configFile).dependency('supplier');
    expect(entry.assumed).toMatchObject({ kind: 'cross-region', p99Ms: 160 });

    // 2. A supplier on loopback answering in 2 to 20 ms; the client built from the file's entry.
    let n = 0;
    supplier = createServer((_req, res) => {
      n += 1;
      setTimeout(() => res.end('ok'), 2 + ((n * 7) % 19));
    });
    await new Promise<void>((resolve) => supplier!.listen(0, '127.0.0.1', resolve));
    const { port } = supplier.address() as { port: number };
    client = createHttpClient({ ...entry.options, origin: `http://127.0.0.1:${port}` });
    expect(client.dependency.timeouts.responseMs).toBe(224); // ceil(160 × 1.4): explicit, never absent

    // 3. Traffic, each attempt's latency and outcome recorded as the project's own log would.
    const rows: string[] = ['latency_ms,outcome'];
    client.on((event) => {
      if (event.type === 'attempt-end') rows.push(`${event.latencyMs.toFixed(3)},${event.outcome}`);
    });
    for (let i = 0; i < 300; i += 1) {
      const res = await client.request('/stock', { deadline: 2_000 });
      await res.body.dump();
    }
    writeFileSync(join(dir, 'latency.csv'), `${rows.join('\n')}\n`);
    expect(rows.length).toBeGreaterThanOrEqual(301);

    // 4. Measured and written: only one line added, the comment kept.
    const w = await runCli(
      ['calibrate', '--histogram', 'latency.csv', '--dependency', 'supplier', '--write', '--json'],
      dir,
    );
    expect(w.err).toBe('');
    expect(w.code).toBe(0);
    const report = JSON.parse(w.out);
    expect(report.config).toMatchObject({
      dependency: 'supplier',
      fromMs: 160,
      assumed: 'cross-region',
      written: true,
    });
    const measured = report.configLine.p99Ms as number;
    expect(measured).toBeGreaterThan(2);
    expect(measured).toBeLessThan(160);
    const text = readFileSync(configFile, 'utf8');
    expect(text).toBe(
      [
        '# orders → supplier',
        'version: 1',
        'dependencies:',
        '  - name: supplier',
        `    p99Ms: ${measured}`,
        '    kind: cross-region # not measured yet: starts from the published figures',
        '    attempts: 2',
        '',
      ].join('\n'),
    );
    // 5. The file now plans with the measured p99: no assumption, no warning.
    const after = await runCli(['check'], dir);
    expect(after.code).toBe(0);
    expect(after.err).toBe('');
    expect(after.out).not.toContain('ASSUMED');
    const loaded = loadConfig(configFile).dependency('supplier');
    expect(loaded.assumed).toBeUndefined();
    expect(loaded.options.p99Ms).toBe(measured);
    expect(loaded.calibration.responseMs).toBe(report.recommendation.responseMs);
  }, 60_000);
});
