import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Command } from 'commander';
import { afterEach, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { dashboardProblems } from '../../rules/dashboard.test-helpers.js';
import { parsePromQL } from '../../rules/promql.test-helpers.js';
import type { RuleFile } from '../../rules/types.js';
import { attachContext, type CliContext, ExitCode, UsageError } from '../context.js';
import { OUTPUT_FILES, register } from './rules.js';

/** `prazo rules` in-process, on the example config shipped in examples/ (SPEC X3). */

const EXAMPLE = resolve(import.meta.dirname, '../../../examples/prazo.config.yaml');
const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

async function prazoRules(args: string[], cwd: string) {
  const out: string[] = [];
  const err: string[] = [];
  const context: CliContext = {
    io: { stdout: (s) => out.push(s), stderr: (s) => err.push(s), cwd },
    exitCode: ExitCode.ok,
  };
  const program = new Command('prazo').exitOverride();
  attachContext(program, context);
  register(program);
  await program.parseAsync(['rules', ...args], { from: 'user' });
  return { stdout: out.join(''), stderr: err.join(''), code: context.exitCode };
}

const tmp = () => {
  const d = mkdtempSync(join(tmpdir(), 'prazo-rules-'));
  dirs.push(d);
  return d;
};

describe('prazo rules', () => {
  it('writes alert rules and a dashboard from the example config', async () => {
    const dir = tmp();
    const result = await prazoRules(['--config', EXAMPLE, '--out', 'generated'], dir);
    expect(result.code).toBe(ExitCode.ok);
    expect(result.stdout).toMatch(/wrote \d+ alert rule\(s\) to .*prazo-alerts\.yaml/);
    const alerts = parse(readFileSync(join(dir, 'generated', OUTPUT_FILES.alerts), 'utf8')) as RuleFile;
    const rules = alerts.groups.flatMap((g) => g.rules);
    for (const rule of rules) expect(parsePromQL(rule.expr).errors).toEqual([]);
    const about = (dep: string) =>
      rules.filter((r) => r.expr.includes(`prazo_dependency="${dep}"`)).map((r) => r.alert);
    // orders: 1 attempt, no hedge: nothing draws on its budget, so no budget alerts.
    expect(about('orders')).toEqual([
      'PrazoTimeoutBelowP99',
      'PrazoAbandonmentHigh',
      'PrazoInstanceEjectedRepeatedly',
      'PrazoDependencyThrottled',
    ]);
    // inventory retries and hedges: every alert.
    expect(about('inventory')).toContain('PrazoRetryRatioHigh');
    expect(about('inventory')).toContain('PrazoBudgetRefusalsClimbing');
    expect(rules.find((r) => r.alert === 'PrazoSliceOverrun')?.expr).toContain(
      'prazo_endpoint="POST /pedidos"',
    );
    const dashboard = JSON.parse(readFileSync(join(dir, 'generated', OUTPUT_FILES.dashboard), 'utf8'));
    expect(dashboardProblems(dashboard)).toEqual([]);
  });

  it('--naming otlp writes the suffixed names', async () => {
    const dir = tmp();
    await prazoRules(['--config', EXAMPLE, '--out', dir, '--naming', 'otlp'], dir);
    const text = readFileSync(join(dir, OUTPUT_FILES.alerts), 'utf8');
    expect(text).toContain('prazo_dependency_timeout_configured_seconds');
    expect(text).not.toMatch(/prazo_dependency_timeout_configured\{/);
  });

  it('a config with problems is refused with every problem and its line, and nothing is written', async () => {
    const dir = tmp();
    writeFileSync(
      join(dir, 'bad.yaml'),
      'version: 1\ndependencies:\n  - name: a\n    p99Ms: -3\n  - p99Ms: 10\n',
    );
    const failure = await prazoRules(['--config', 'bad.yaml', '--out', 'x'], dir).catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(UsageError);
    const message = (failure as UsageError).message;
    expect(message).toContain('bad.yaml:4');
    expect(message).toContain('bad.yaml:5');
    expect(() => readFileSync(join(dir, 'x', OUTPUT_FILES.alerts))).toThrow();
  });

  it('a missing config or an unknown naming scheme is bad input', async () => {
    const dir = tmp();
    await expect(prazoRules(['--config', 'nope.yaml'], dir)).rejects.toBeInstanceOf(UsageError);
    await expect(prazoRules(['--config', EXAMPLE, '--naming', 'graphite'], dir)).rejects.toThrow(
      /--naming must be one of/,
    );
  });
});
