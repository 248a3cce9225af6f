import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { checkConfigText } from '../config/load.js';
import { generateAlertRules } from './alerts.js';
import { rulesInputFromConfig } from './from-config.js';
import { hasPromtool, promtoolDir } from './promql.test-helpers.js';
import type { RuleFile } from './types.js';

/**
 * SPEC C8: a dependency whose p99 is assumed (a `kind`'s starting value) and that serves traffic has
 * an alert of its own — the drift check has nothing measured to compare with. Judged by promtool's rule
 * engine: it fires for the assumed dependency with traffic, not for an assumed one without, and a
 * measured dependency has no such rule.
 */

const CONFIG = `dependencies:
  - name: supplier
    kind: same-zone-service
  - name: idle
    kind: cross-region
  - name: orders
    p99Ms: 80
`;

const rulesOf = (): RuleFile => {
  const { config, problems } = checkConfigText(CONFIG, { readText: () => '' });
  expect(problems.filter((p) => p.severity === 'error')).toEqual([]);
  return generateAlertRules(rulesInputFromConfig(config!));
};

const promtool = hasPromtool;
const dir = promtoolDir('prazo-assumed-');

describe('PrazoDependencyP99Assumed (issue 27)', () => {
  it('one rule per assumed dependency, none for a measured one', () => {
    const group = rulesOf().groups.find((g) => g.name === 'prazo-calibration');
    expect(group?.rules.map((r) => [r.alert, r.labels?.prazo_dependency])).toEqual([
      ['PrazoDependencyP99Assumed', 'supplier'],
      ['PrazoDependencyP99Assumed', 'idle'],
    ]);
    const supplier = group!.rules[0]!;
    expect(supplier.expr).toBe(
      'sum by (job, prazo_dependency) (rate(prazo_dependency_attempts_total{prazo_dependency="supplier"}[5m])) > 0',
    );
    expect(supplier.annotations?.description).toContain("the kind's starting p99 (10 ms");
    expect(group!.rules[1]!.annotations?.description).toContain('(160 ms');
  });

  it.skipIf(!promtool)('promtool: fires while the assumed dependency serves traffic, not when idle', () => {
    const bare: RuleFile = {
      groups: rulesOf().groups.map((g) => ({
        ...g,
        rules: g.rules.map(({ annotations: _, ...rule }) => rule as never),
      })),
    };
    writeFileSync(join(dir, 'rules.yaml'), stringify(bare, { lineWidth: 0 }));
    const labels = (dep: string) =>
      `{job="orders",instance="a",prazo_dependency="${dep}",prazo_attempt_kind="original"}`;
    const tests = {
      rule_files: ['rules.yaml'],
      evaluation_interval: '15s',
      tests: [
        {
          interval: '15s',
          input_series: [
            // supplier: 10 calls/s for 30 minutes; idle: a counter that never moves.
            { series: `prazo_dependency_attempts_total${labels('supplier')}`, values: '0+150x120' },
            { series: `prazo_dependency_attempts_total${labels('idle')}`, values: '0x120' },
          ],
          alert_rule_test: [
            { eval_time: '10m', alertname: 'PrazoDependencyP99Assumed', exp_alerts: [] },
            {
              eval_time: '25m',
              alertname: 'PrazoDependencyP99Assumed',
              exp_alerts: [
                { exp_labels: { severity: 'warning', job: 'orders', prazo_dependency: 'supplier' } },
              ],
            },
          ],
        },
      ],
    };
    writeFileSync(join(dir, 'tests.yaml'), stringify(tests, { lineWidth: 0 }));
    let out: string;
    try {
      out = execFileSync('promtool', ['test', 'rules', 'tests.yaml'], {
        cwd: dir,
        encoding: 'utf8',
        stdio: 'pipe',
      });
    } catch (error) {
      const e = error as { stdout?: string; stderr?: string };
      throw new Error(`promtool test rules failed:\n${e.stdout ?? ''}${e.stderr ?? ''}`);
    }
    expect(out).toContain('SUCCESS');
  });
});
