import { copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { run } from '../../../src/cli/main.js';
import { anyText, numberish, RUNS, TEN_MB } from './arbitraries.js';

/**
 * Fuzzing the CLI's arguments (`run(argv, io)`, in-process): any argv ends in exit 0, 1 or 2 with
 * output captured, never a throw, never "unexpected failure" (an exception that escaped a command),
 * never NaN printed. Files named on the command line come from a scratch directory of good and
 * hostile files; `--out` only ever points inside it, so the fuzz writes nowhere else.
 */

const examples = new URL('../../../examples/', import.meta.url).pathname;
let dir: string;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'prazo-cli-fuzz-'));
  copyFileSync(join(examples, 'prazo.config.yaml'), join(dir, 'prazo.config.yaml'));
  mkdirSync(join(dir, 'histograms'));
  for (const f of ['supplier-healthy.prom', 'supplier-degraded.prom']) {
    copyFileSync(join(examples, 'histograms', f), join(dir, 'histograms', f));
  }
  writeFileSync(join(dir, 'samples.txt'), '12\n15\n180\n22\n');
  writeFileSync(join(dir, 'binary.bin'), Buffer.from(Array.from({ length: 4096 }, (_, i) => (i * 37) % 256)));
  writeFileSync(join(dir, 'deep.yaml'), '['.repeat(2_000));
  writeFileSync(join(dir, 'proto.json'), '{"version":1,"__proto__":{"polluted":true}}');
  writeFileSync(join(dir, 'big.txt'), '1\n'.repeat(TEN_MB / 2));
  mkdirSync(join(dir, 'a-directory'));
});
afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

const files = fc.constantFrom(
  'prazo.config.yaml',
  'histograms/supplier-healthy.prom',
  'histograms/supplier-degraded.prom',
  'samples.txt',
  'binary.bin',
  'deep.yaml',
  'proto.json',
  'a-directory',
  'missing.yaml',
  '',
);
const options = fc.constantFrom(
  '--p99',
  '--histogram',
  '--unit',
  '--metric',
  '--column',
  '--deadline',
  '--attempts',
  '--slack',
  '--force-slack',
  '--overhead',
  '--baseline-p99',
  '--rps',
  '--json',
  '--strict',
  '--config',
  '--naming',
  '--help',
  '-V',
  '--',
  '-',
  '--p99=180',
  '--unknown',
);
const token = fc.oneof(
  { weight: 3, arbitrary: options },
  { weight: 3, arbitrary: numberish },
  { weight: 2, arbitrary: files },
  fc.constantFrom('s', 'ms', 'us', 'http_client_request_duration_seconds', 'latency_ms', 'otlp', 'exporter'),
  anyText,
);
const argv = fc
  .tuple(
    fc.constantFrom('calibrate', 'check', 'rules', 'help', '', 'unknown'),
    fc.array(token, { maxLength: 8 }),
  )
  .map(([command, rest]) => (command === '' ? rest : [command, ...rest]))
  .chain((args) =>
    fc.boolean().map((out) => (args[0] === 'rules' && out ? [...args, '--out', 'generated'] : args)),
  );

/** Output minus quoted echoes of the user's own input ("got \"NaN\"" is a fine refusal). */
const own = (r: { out: string; err: string }): string =>
  `${r.out}${r.err}`.replace(/(["'`])[^\n]*?\1/g, '""');

async function cli(args: readonly string[]): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const code = await run(args, { stdout: (s) => (out += s), stderr: (s) => (err += s), cwd: dir });
  return { code, out, err };
}

describe('fuzz: CLI arguments', () => {
  it('any argv: exit 0, 1 or 2, a reason printed for 2, no escaped exception, no NaN', async () => {
    await fc.assert(
      fc.asyncProperty(argv, async (args) => {
        const r = await cli(args);
        expect([0, 1, 2]).toContain(r.code);
        // docs/cli.md: exit 2 comes with its reason on stderr.
        if (r.code === 2) expect(r.err.trim().length, args.join(' ')).toBeGreaterThan(0);
        expect(r.err).not.toContain('unexpected failure');
        if (!args.some((a) => a.includes('NaN'))) expect(own(r)).not.toMatch(/\bNaN\b/);
        expect(({} as Record<string, unknown>).polluted).toBeUndefined();
      }),
      { numRuns: RUNS },
    );
  }, 300_000);

  it('hostile numbers for every numeric option: a clear refusal or a finite answer', async () => {
    const numeric = fc.constantFrom('--p99', '--deadline', '--attempts', '--slack', '--overhead', '--rps');
    await fc.assert(
      fc.asyncProperty(numeric, numberish, async (option, value) => {
        const r = await cli(['calibrate', '--p99', '180', option, value, '--json']);
        expect([0, 1, 2]).toContain(r.code);
        if (r.code !== 2) expect(() => JSON.parse(r.out)).not.toThrow();
        expect(own(r)).not.toMatch(/\bNaN\b|Infinity/);
      }),
      { numRuns: RUNS },
    );
  }, 300_000);

  it('a 5 MB histogram file (2.6 M lines, over the line limit) is refused at a bounded cost', async () => {
    const t0 = performance.now();
    const r = await cli(['calibrate', '--histogram', 'big.txt']);
    expect(performance.now() - t0).toBeLessThan(1_000);
    expect(r.code).toBe(2);
    expect(r.err).toMatch(/lines/);
  });
});
