import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { generateAlertRules, renderAlertRules } from './alerts.js';
import { generateDashboard } from './dashboard.js';
import type { RulesInput } from './input.js';
import { hasPromtool, promtoolDir, substituteGrafana } from './promql.test-helpers.js';
import type { RuleFile } from './types.js';

/**
 * The generated rules judged by Prometheus itself: `promtool check rules` (its parser, type checks and
 * lint), and `promtool test rules` (its rule engine, on synthetic series at a 15 s scrape interval):
 * each alert fires in the incident it is written for, and stays quiet in the look-alike it must not
 * page on. promtool comes with Debian's `prometheus` package; without it these tests are skipped.
 */

const promtool = hasPromtool;
const dir = promtoolDir('prazo-promtool-');

const CONFIG: RulesInput = {
  dependencies: [
    { name: 'supplier', maxRatio: 0.1, minPerSecond: 3, attempts: 3 },
    { name: 'quiet' },
    { name: 'down' },
    { name: 'blip' },
  ],
  endpoints: [{ name: 'POST /orders', components: ['gateway', 'inventory'] }],
};
const T = { job: 'orders', instance: 'a', otel_scope_name: 'prazo' };

const series = (name: string, labels: Record<string, string>, values: string) => ({
  series: `${name}{${Object.entries({ ...T, ...labels })
    .map(([k, v]) => `${k}=${JSON.stringify(v)}`)
    .join(',')}}`,
  values,
});
const S = (dep: string, more: Record<string, string> = {}) => ({ prazo_dependency: dep, ...more });

// 15 s samples over 20 minutes. `0+1500x80`: a counter growing 100/s.
const INPUT = [
  // supplier: 100 originals/s and 6 retries/s; its ratio gauge 0.06, then 0.095 (at the cap) after 10 min.
  series('prazo_dependency_attempts_total', S('supplier', { prazo_attempt_kind: 'original' }), '0+1500x80'),
  series('prazo_dependency_attempts_total', S('supplier', { prazo_attempt_kind: 'retry' }), '0+90x80'),
  series('prazo_dependency_retry_ratio', S('supplier'), '0.06x40 0.095x40'),
  // supplier: 3 response timeouts/s of 106 attempts/s (2.8%), no errors: a healthy dependency cut too tight.
  series('prazo_dependency_timeouts_total', S('supplier', { prazo_timeout_phase: 'response' }), '0+45x80'),
  // supplier: configured 252 ms, live p99 250 ms.
  series(
    'prazo_dependency_timeout_configured',
    S('supplier', { prazo_timeout_phase: 'response' }),
    '0.252x80',
  ),
  series('prazo_dependency_latency_p99', S('supplier'), '0.25x80'),
  // supplier's fleet histogram (successes, 1000 per 15 s): half within 100 ms, the rest by 250 ms, so
  // histogram_quantile(0.99) = 0.1 + 0.98 × 0.15 = 0.247 s, and 0.247 × 1.1 > the 0.252 configured.
  ...[
    ['0.1', '0+500x80'],
    ['0.25', '0+1000x80'],
    ['+Inf', '0+1000x80'],
  ].map(([le, v]) =>
    series(
      'prazo_dependency_attempt_duration_bucket',
      S('supplier', { prazo_outcome: 'success', le: le! }),
      v!,
    ),
  ),
  // supplier: no refusals for 10 minutes, then 5/s.
  series(
    'prazo_dependency_budget_refusals_total',
    S('supplier', { prazo_attempt_kind: 'retry' }),
    '0x40 0+75x40',
  ),
  // quiet: 1 original/s with a high ratio (the floor governs), a failing dependency (errors 50%)
  // whose timeouts are not the timeout's fault, and a p99 far under its timeout.
  series('prazo_dependency_attempts_total', S('quiet', { prazo_attempt_kind: 'original' }), '0+15x80'),
  series('prazo_dependency_retry_ratio', S('quiet'), '0.5x80'),
  series('prazo_dependency_timeouts_total', S('quiet', { prazo_timeout_phase: 'response' }), '0+1.5x80'),
  series('prazo_dependency_attempt_duration_count', S('quiet', { prazo_outcome: 'error' }), '0+7.5x80'),
  series('prazo_dependency_timeout_configured', S('quiet', { prazo_timeout_phase: 'response' }), '0.252x80'),
  series('prazo_dependency_latency_p99', S('quiet'), '0.1x80'),
  // quiet's fleet p99 ≈ 50 ms, far under its timeout.
  ...[
    ['0.05', '0+15x80'],
    ['+Inf', '0+15x80'],
  ].map(([le, v]) =>
    series('prazo_dependency_attempt_duration_bucket', S('quiet', { prazo_outcome: 'success', le: le! }), v!),
  ),
  // supplier's instance s3, as process a sees it: no ejection for 10 minutes, then one a minute
  // (it fails again after each return). quiet's q1: one ejection at 5 minutes, then none.
  series(
    'prazo_instance_ejections_total',
    S('supplier', { prazo_instance: 's3', prazo_ejection_reason: 'failures' }),
    '0x40 0+0.25x40',
  ),
  series(
    'prazo_instance_ejections_total',
    S('quiet', { prazo_instance: 'q1', prazo_ejection_reason: 'failures' }),
    '0x20 1x60',
  ),
  // The adaptive throttle (#23), 100 calls/s each. down: healthy 5 minutes, then down: 90% of calls
  // refused (the cap), 10% sent as probes. blip: down 30 seconds at 5 minutes, the same 90% refused.
  series(
    'prazo_dependency_attempts_total',
    S('down', { prazo_attempt_kind: 'original' }),
    '0+1500x20 30000+150x60',
  ),
  series('prazo_dependency_throttled_total', S('down'), '0x20 0+1350x60'),
  series(
    'prazo_dependency_attempts_total',
    S('blip', { prazo_attempt_kind: 'original' }),
    '0+1500x20 30150 30300+1500x58',
  ),
  series('prazo_dependency_throttled_total', S('blip'), '0x20 1350 2700x59'),
  // POST /orders: gateway overruns 10% of its runs, inventory 1%.
  ...[
    ['gateway', '0+150x80'],
    ['inventory', '0+15x80'],
  ].flatMap(([component, overruns]) => [
    series(
      'prazo_endpoint_slice_observations_total',
      { prazo_endpoint: 'POST /orders', prazo_component: component! },
      '0+1500x80',
    ),
    series(
      'prazo_endpoint_slice_overruns_total',
      { prazo_endpoint: 'POST /orders', prazo_component: component! },
      overruns!,
    ),
  ]),
];

const alert = (severity: string, labels: Record<string, string>) => ({ exp_labels: { severity, ...labels } });
const supplierGauge = { ...T, prazo_dependency: 'supplier' };
const fleet = (dep: string) => ({ job: 'orders', prazo_dependency: dep });

const TESTS = [
  { eval_time: '8m', alertname: 'PrazoRetryRatioHigh', exp_alerts: [alert('warning', supplierGauge)] },
  { eval_time: '8m', alertname: 'PrazoRetryBudgetExhausted', exp_alerts: [] },
  {
    eval_time: '18m',
    alertname: 'PrazoRetryBudgetExhausted',
    exp_alerts: [alert('critical', supplierGauge)],
  },
  { eval_time: '9m', alertname: 'PrazoTimeoutBelowP99', exp_alerts: [] },
  {
    eval_time: '12m',
    alertname: 'PrazoTimeoutBelowP99',
    // judged on the fleet: the timeout's max against the fleet p99, one alert per dependency
    exp_alerts: [alert('warning', { prazo_dependency: 'supplier' })],
  },
  { eval_time: '12m', alertname: 'PrazoAbandonmentHigh', exp_alerts: [alert('warning', fleet('supplier'))] },
  { eval_time: '9m', alertname: 'PrazoBudgetRefusalsClimbing', exp_alerts: [] },
  {
    eval_time: '17m',
    alertname: 'PrazoBudgetRefusalsClimbing',
    exp_alerts: [alert('warning', fleet('supplier'))],
  },
  {
    eval_time: '18m',
    alertname: 'PrazoSliceOverrun',
    exp_alerts: [
      alert('warning', { job: 'orders', prazo_endpoint: 'POST /orders', prazo_component: 'gateway' }),
    ],
  },
  { eval_time: '10m', alertname: 'PrazoSliceOverrun', exp_alerts: [] },
  // Two ejections by 12m: not yet; three by 13m, held 1 minute: firing at 14m. quiet's one: never.
  // down: 10% of the 5-minute calls refused ~35 s into the outage, held 2 minutes: firing by 7m45s.
  // blip: 2,700 refused of 30,000 calls in its worst 5 minutes (9%): never.
  { eval_time: '7m', alertname: 'PrazoDependencyThrottled', exp_alerts: [] },
  { eval_time: '9m', alertname: 'PrazoDependencyThrottled', exp_alerts: [alert('warning', fleet('down'))] },
  { eval_time: '18m', alertname: 'PrazoDependencyThrottled', exp_alerts: [alert('warning', fleet('down'))] },
  { eval_time: '12m', alertname: 'PrazoInstanceEjectedRepeatedly', exp_alerts: [] },
  {
    eval_time: '15m',
    alertname: 'PrazoInstanceEjectedRepeatedly',
    exp_alerts: [alert('warning', { ...fleet('supplier'), prazo_instance: 's3' })],
  },
];

/** The rule file without annotations: `promtool test rules` would otherwise compare their rendered text. */
const bare = (file: RuleFile): RuleFile => ({
  groups: file.groups.map((g) => ({
    ...g,
    rules: g.rules.map(({ annotations: _, ...rule }) => rule as never),
  })),
});

// Never a silent pass: without promtool the tests below cannot run, and this one says so.
it('promtool is installed (Debian `prometheus`; .ci/run installs it)', () => {
  expect(promtool, 'apt-get install prometheus: the rule tests need promtool').toBe(true);
});

/** Writes a `promtool test rules` file into the test directory and runs it; its output, or why it failed. */
function promtoolTest(file: string, tests: object): string {
  writeFileSync(join(dir, file), stringify(tests, { lineWidth: 0 }));
  try {
    return execFileSync('promtool', ['test', 'rules', file], { cwd: dir, encoding: 'utf8', stdio: 'pipe' });
  } catch (error) {
    const e = error as { stdout?: string; stderr?: string };
    throw new Error(`promtool test rules failed:\n${e.stdout ?? ''}${e.stderr ?? ''}`);
  }
}

describe.skipIf(!promtool)(
  'generated rules under Prometheus’ own promtool (skipped: no promtool on PATH)',
  () => {
    it('promtool check rules: parse, types and lint pass, for both naming schemes', () => {
      for (const naming of ['exporter', 'otlp'] as const) {
        const path = join(dir, `alerts-${naming}.yaml`);
        writeFileSync(path, renderAlertRules(generateAlertRules(CONFIG, { naming })));
        const out = execFileSync('promtool', ['check', 'rules', path], { encoding: 'utf8' });
        expect(out).toContain('SUCCESS');
      }
    });

    it('promtool test rules: each alert fires in its incident and stays quiet in the look-alike', () => {
      writeFileSync(join(dir, 'rules.yaml'), stringify(bare(generateAlertRules(CONFIG)), { lineWidth: 0 }));
      const tests = {
        rule_files: ['rules.yaml'],
        evaluation_interval: '15s',
        tests: [{ interval: '15s', input_series: INPUT, alert_rule_test: TESTS }],
      };
      expect(promtoolTest('tests.yaml', tests)).toContain('SUCCESS');
    });

    it('promtool evaluates the throttle panels (#23): refusal share and probability beside the calls sent', () => {
      // Two processes of `orders` call `stock`, 50 calls/s each. From 5 minutes the throttle refuses
      // 90% of a's calls and 80% of b's; their gauges read 0.9 and 0.8.
      const P = (process: string, more: Record<string, string> = {}) => ({
        ...S('stock', more),
        instance: process,
      });
      const input = [
        ...[
          ['a', '0+750x20 15000+75x20', '0x20 0+675x20', '0x20 0.9x20'],
          ['b', '0+750x20 15000+150x20', '0x20 0+600x20', '0x20 0.8x20'],
        ].flatMap(([p, sent, refused, probability]) => [
          series('prazo_dependency_attempts_total', P(p!, { prazo_attempt_kind: 'original' }), sent!),
          series('prazo_dependency_throttled_total', P(p!), refused!),
          series('prazo_dependency_throttle_probability', P(p!), probability!),
        ]),
      ];
      const panels = generateDashboard(CONFIG).panels as { title?: string; targets?: { expr: string }[] }[];
      const exprs = (title: string) =>
        panels.find((p) => p.title?.startsWith(title))!.targets!.map((t) => substituteGrafana(t.expr));
      const [share, probability] = exprs('Throttle refusal share');
      const [sent, refused] = exprs('Calls sent and refused');
      const stock = '{prazo_dependency="stock"}';
      const at = (eval_time: string, expr: string, value: number) => ({
        expr,
        eval_time,
        exp_samples: [{ labels: stock, value }],
      });
      const tests = {
        evaluation_interval: '15s',
        tests: [
          {
            interval: '15s',
            input_series: input,
            promql_expr_test: [
              at('4m', share!, 0),
              at('4m', sent!, 100),
              // the fleet: (45 + 40) refused of 100 calls; the worst process's probability
              at('9m', share!, 0.85),
              at('9m', probability!, 0.9),
              at('9m', sent!, 15),
              at('9m', refused!, 85),
            ],
          },
        ],
      };
      expect(promtoolTest('throttle-panels.yaml', tests)).toContain('SUCCESS');
    });

    it('promtool evaluates the instance panels (SPEC X5): ejected now, in rotation, load and ejections per instance', () => {
      // Two processes of `orders` call `stock`'s three instances; process a has ejected s3, b has not.
      const P = (process: string, more: Record<string, string>) => ({
        ...S('stock', more),
        instance: process,
      });
      const gauge = (process: string, state: string, v: string) =>
        series('prazo_dependency_instances', P(process, { prazo_instance_state: state }), v);
      const input = [
        gauge('a', 'active', '2x40'),
        gauge('a', 'probation', '0x40'),
        gauge('a', 'ejected', '1x40'),
        gauge('b', 'active', '2x40'),
        gauge('b', 'probation', '1x40'),
        gauge('b', 'ejected', '0x40'),
        // 10/s to s1 and s2 from each process; s3 gets 1/s from a (ejected there), 5/s from b.
        ...['a', 'b'].flatMap((p) =>
          ['s1', 's2'].map((i) =>
            series('prazo_instance_attempts_total', P(p, { prazo_instance: i }), '0+150x40'),
          ),
        ),
        series('prazo_instance_attempts_total', P('a', { prazo_instance: 's3' }), '0+15x40'),
        series('prazo_instance_attempts_total', P('b', { prazo_instance: 's3' }), '0+75x40'),
        // a ejects s3 for failures once a minute and takes it back once a minute.
        series(
          'prazo_instance_ejections_total',
          P('a', { prazo_instance: 's3', prazo_ejection_reason: 'failures' }),
          '0+0.25x40',
        ),
        series('prazo_instance_returns_total', P('a', { prazo_instance: 's3' }), '0+0.25x40'),
      ];
      const panels = generateDashboard(CONFIG).panels as { title?: string; targets?: { expr: string }[] }[];
      const exprs = (title: string) =>
        panels.find((p) => p.title?.startsWith(title))!.targets!.map((t) => substituteGrafana(t.expr));
      const [ejected, inRotation] = exprs('Instances ejected now');
      const [load] = exprs('Load per instance');
      const [ejections, returns] = exprs('Ejections by instance');
      const at = (expr: string, exp_samples: { labels: string; value: number }[]) => ({
        expr,
        eval_time: '9m',
        exp_samples,
      });
      const tests = {
        evaluation_interval: '15s',
        tests: [
          {
            interval: '15s',
            input_series: input,
            promql_expr_test: [
              // the worst process: the most ejected (a: 1), the fewest in rotation (a: 2, b: 3)
              at(ejected!, [{ labels: '{prazo_dependency="stock"}', value: 1 }]),
              at(inRotation!, [{ labels: '{prazo_dependency="stock"}', value: 2 }]),
              at(load!, [
                { labels: '{prazo_dependency="stock", prazo_instance="s1"}', value: 20 },
                { labels: '{prazo_dependency="stock", prazo_instance="s2"}', value: 20 },
                { labels: '{prazo_dependency="stock", prazo_instance="s3"}', value: 6 },
              ]),
              at(ejections!, [
                {
                  labels: '{prazo_dependency="stock", prazo_ejection_reason="failures", prazo_instance="s3"}',
                  value: 5,
                },
              ]),
              at(returns!, [{ labels: '{prazo_dependency="stock", prazo_instance="s3"}', value: 5 }]),
            ],
          },
        ],
      };
      expect(promtoolTest('panels.yaml', tests)).toContain('SUCCESS');
    });
  },
);
