import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it, vi } from 'vitest';
import { parse, stringify } from 'yaml';
import {
  createOverrunTracker,
  createSliceRunner,
  type DependencyProfile,
  deriveTimeouts,
  type LatencyBudget,
  type OverrunTracker,
  parseBudget,
  validateBudget,
} from '../../../src/calibrate/index.js';
import { FakeClock } from '../../../src/clock/fake.js';
import { checkConfigText } from '../../../src/config/load.js';
import { isInvalidOptions } from '../../../src/errors/guards.js';
import type { InvalidOptionsError } from '../../../src/errors/options.js';
import { dashboardProblems } from '../../../src/rules/dashboard.test-helpers.js';
import {
  generateAlertRules,
  generateDashboard,
  type RuleFile,
  type RulesInput,
  renderAlertRules,
  rulesInputFromConfig,
} from '../../../src/rules/index.js';
import { hasPromtool, parsePromQL, promtoolDir } from '../../../src/rules/promql.test-helpers.js';

/**
 * Attacks on `prazo/rules` (the generated Prometheus rules and Grafana dashboard, SPEC R7, V1, V3,
 * B3, C5, X3) and the latency budgets `prazo/calibrate` exports (SPEC B1–B3): names with quotes,
 * backslashes, template braces, Grafana variables, control characters, line separators and unpaired
 * surrogates; budgets that are malformed, hand-built, or written in decimals. The rules are judged by
 * Prometheus' own `promtool` (Debian's `prometheus`; skipped without it, as src/rules/promtool.test.ts
 * does), which parses the YAML with Go's reader, type-checks the PromQL and expands the templates.
 */

const promtool = hasPromtool;
const dir = promtoolDir('prazo-rules-attack-');

/** Runs promtool in the test directory; what it printed (both streams), or an Error carrying it. */
function run(args: string[]): string {
  const out = spawnSync('promtool', args, { cwd: dir, encoding: 'utf8' });
  const text = `${out.stdout ?? ''}${out.stderr ?? ''}`;
  if (out.status !== 0) throw new Error(`promtool ${args.join(' ')} failed:\n${text}`);
  return text;
}

function checkRules(file: string, yaml: string): string {
  writeFileSync(join(dir, file), yaml);
  return run(['check', 'rules', file]);
}

/** The rule file without annotations (promtool test rules would compare their rendered text). */
const bare = (file: RuleFile): RuleFile => ({
  groups: file.groups.map((g) => ({
    ...g,
    rules: g.rules.map(({ annotations: _, ...rule }) => rule as never),
  })),
});

/**
 * What Prometheus makes of a label or annotation written as a Go template, for the one construct
 * the generator may use around a name: `{{ "{" }}` prints `{`; any other `{{` is an action.
 */
const expandedText = (text: string): string => text.replaceAll('{{ "{" }}', '{');
/** What Grafana sends for a panel query: its variables replaced (all dependencies, a 1m rate window). */
const grafana = (expr: string): string =>
  expr.replaceAll('$__rate_interval', '1m').replaceAll('=~"$dependency"', '=~".*"');
const allRules = (file: RuleFile) => file.groups.flatMap((g) => g.rules);

const thrown = (f: () => unknown): unknown => {
  try {
    f();
  } catch (error) {
    return error;
  }
  throw new Error('did not throw');
};

/** What the generators take as a name (src/rules/names.ts `PRINTABLE_NAME`, restated). */
const printable = (name: string): boolean =>
  name.length <= 200 && !/[\p{Cc}\p{Cs}\u2028\u2029\ufeff\ufffe\uffff]/u.test(name);

/** Names the rules must carry as they are: quoting, escaping, templates, Grafana variables. */
const HOSTILE = [
  'a"b\\c',
  "it's",
  '\\',
  '\\"',
  'a{{b',
  '{{ $value }}',
  '{{ $labels.job }}',
  '}}{{',
  '{{{x}}}',
  'x{',
  '{',
  'GET /items/{id}',
  'pay$__range',
  // biome-ignore lint/suspicious/noTemplateCurlyInString: Grafana's variable syntax, literally.
  '${datasource}',
  '[[dependency]]',
  '$dependency',
  'ünïcødé 😀 日本',
  '#comment',
  '- dash',
  '*star',
  '&anchor',
  '!tag',
  'key: value',
  '? q',
  '%percent',
  '@at',
  '`tick`',
  '|pipe',
  '>fold',
  "'",
  '"',
  // YAML 1.1 words and numbers (Go's reader knows some): a label value must stay the text it is
  'yes',
  'No',
  'on',
  'y',
  '=',
  '<<',
  '1:20',
  '0o17',
  '0b101',
  '1_000',
  '.inf',
  '.NaN',
  '2001-12-14',
  ' lead and trail ',
  'null',
  'true',
  '0x10',
  '1e9',
  '~',
  '__proto__',
  'constructor',
  'x'.repeat(200),
  'a long: name '.repeat(15).slice(0, 200),
  // and a few any-Unicode names the input takes (a fixed seed: the same ones on every run)
  ...fc
    .sample(fc.string({ unit: 'binary', minLength: 1, maxLength: 40 }).filter(printable), {
      numRuns: 16,
      seed: 7,
    })
    .map((name, i) => `${i}${name}`),
];

describe('prazo/rules under hostile names (SPEC R7, V3, X3)', () => {
  it('Was a defect: a name holding `{{` broke the rule file (a Go template action) or became the alert’s value', () => {
    // Before: `a{{b` made promtool refuse the file ("function \"b\" not defined"), and a dependency
    // named `{{ $value }}` loaded fine and was labelled with the alert's value instead of its name.
    const names = ['a{{b', '{{ $value }}', '}}{{', '{{{x}}}', '{{'];
    const file = generateAlertRules({
      dependencies: names.map((name) => ({ name, attempts: 3, assumedP99Ms: 50 })),
      endpoints: names.map((name) => ({ name, components: [name, `${name}-c`] })),
    });
    for (const rule of allRules(file)) {
      const name = rule.labels.prazo_dependency ?? rule.labels.prazo_endpoint!;
      // Prometheus expands the label as a template: it must come out as the name
      expect(names).toContain(expandedText(name));
      for (const text of [name, ...Object.values(rule.annotations)]) {
        // without the `{{ "{" }}` that print a brace and the generator's own `$value`/`$labels`
        // actions, no `{{` may be left to open an action
        const rest = text
          .replaceAll('{{ "{" }}', '')
          .replace(/\{\{ \$(value|labels\.\w+)( \| \w+)? \}\}/g, '');
        expect(rest, text).not.toContain('{{');
      }
    }
  });

  it('property: any name is either refused with INVALID_OPTIONS or carried whole into every label and annotation', () => {
    const name = fc.oneof(
      fc.string({ unit: 'binary', maxLength: 30 }),
      fc.string({ unit: 'grapheme', maxLength: 10 }),
      fc.stringMatching(/^[{}$[\]"\\ a]{1,12}$/),
    );
    fc.assert(
      fc.property(name, (n) => {
        let file: RuleFile;
        try {
          file = generateAlertRules({
            dependencies: [{ name: n, assumedP99Ms: 5 }],
            endpoints: [{ name: n, components: [n] }],
          });
        } catch (error) {
          expect(isInvalidOptions(error)).toBe(true);
          expect(n.length > 0 && printable(n)).toBe(false);
          return;
        }
        expect(n.length > 0 && printable(n)).toBe(true);
        for (const rule of allRules(file)) {
          const label = rule.labels.prazo_dependency ?? rule.labels.prazo_endpoint!;
          expect(expandedText(label)).toBe(n);
          for (const text of [label, ...Object.values(rule.annotations)])
            expect(
              text.replaceAll('{{ "{" }}', '').replace(/\{\{ \$(value|labels\.\w+)( \| \w+)? \}\}/g, ''),
            ).not.toContain('{{');
        }
      }),
      { numRuns: 60 },
    );
  });

  it('Was a defect: names with control characters, line separators, a BOM or unpaired surrogates reached the YAML; now every one is refused together', () => {
    // Before: DEL/C1 and U+2028 were written raw (Go's YAML reader refused the file: "control
    // characters are not allowed", "could not find expected ':'"), and `\ud800` was written as a YAML
    // escape Go refuses ("invalid Unicode character escape code").
    const bad = [
      'a\x7fb',
      'a\x85b',
      'a\u2028b',
      'a\u2029b',
      'a\ud800b',
      'b\udc00',
      '\ufeffa',
      'a\nb',
      'a\tb',
      'a\x00',
    ];
    const error = thrown(() =>
      generateAlertRules({
        dependencies: bad.map((name) => ({ name })),
        endpoints: [{ name: 'e\u2028', components: ['ok', 'c\x9f'] }],
      }),
    );
    expect(isInvalidOptions(error)).toBe(true);
    const problems = (error as InvalidOptionsError).problems;
    expect((error as InvalidOptionsError).code).toBe('INVALID_OPTIONS');
    for (let i = 0; i < bad.length; i += 1)
      expect(problems.some((p) => p.includes(`dependencies[${i}].name`) && p.includes('printable'))).toBe(
        true,
      );
    expect(problems.some((p) => p.includes('endpoints[0].name'))).toBe(true);
    expect(problems.some((p) => p.includes('endpoints[0].components'))).toBe(true);
    // the dashboard takes the same input, and refuses the same way
    expect(isInvalidOptions(thrown(() => generateDashboard({ dependencies: [{ name: 'a\ud800' }] })))).toBe(
      true,
    );
    // a surrogate *pair* is one printable character, and stays
    expect(() => generateAlertRules({ dependencies: [{ name: 'a😀b' }] })).not.toThrow();
  });

  it('Was a defect: a source path with a line break wrote YAML into the rule file’s header comment', () => {
    const file = generateAlertRules({ dependencies: [{ name: 'a' }] });
    for (const source of [
      'x\ngroups: []\n#',
      'x\rgroups: []',
      'x\u2028groups: []',
      'x\x85groups: []',
      'x\x00',
    ]) {
      const yaml = renderAlertRules(file, source);
      const header = yaml.split('\n').slice(0, 2);
      expect(header.every((l) => l.startsWith('#'))).toBe(true);
      for (const c of ['\r', '\u2028', '\x85', '\x00']) expect(yaml.includes(c)).toBe(false);
      expect(parse(yaml)).toEqual(JSON.parse(JSON.stringify(file)));
    }
  });

  it('Was a defect (an invalid name was reported again as `dependency undefined appears twice`): refuses what is not input, every problem together', () => {
    const error = thrown(() =>
      generateAlertRules({
        dependencies: [
          { name: 'a' },
          { name: 'a' },
          { name: '' },
          { name: 'x'.repeat(201) },
          { name: 'b', maxRatio: Number.NaN, attempts: 1.5, minPerSecond: -1, nme: 1 } as never,
          null as never,
          new Map() as never,
        ],
        endpoints: [
          { name: 'e', components: [] },
          { name: 'e', components: [''] },
        ],
      }),
    ) as InvalidOptionsError;
    expect(isInvalidOptions(error)).toBe(true);
    const text = error.problems.join('\n');
    for (const part of [
      'dependency "a" appears twice',
      'endpoint "e" appears twice',
      'dependencies[2].name',
      'dependencies[3].name',
      'dependencies[4].maxRatio',
      'dependencies[4].attempts',
      'dependencies[4].minPerSecond',
      'dependencies[4].nme',
      'dependencies[5]',
      'endpoints[0].components',
      'endpoints[1].components',
    ])
      expect(text).toContain(part);
    expect(text).toContain('unknown option `dependencies[4].nme`');
    // an invalid name is reported once, not again as a duplicate
    expect(text).not.toContain('undefined');
    for (const input of [undefined, null, [], new Map(), { dependencies: new Map() }, { dependencies: 'a' }])
      expect(isInvalidOptions(thrown(() => generateAlertRules(input as never)))).toBe(true);
    expect(
      isInvalidOptions(thrown(() => generateDashboard({ dependencies: [] }, { naming: 'otel' as never }))),
    ).toBe(true);
  });

  it('Was a defect: rulesInputFromConfig given what is not a loaded config threw TypeErrors', () => {
    for (const config of [
      undefined,
      null,
      5,
      {},
      { dependencies: [], endpoints: [] },
      { dependencies: new Map([['a', null]]), endpoints: new Map() },
      { dependencies: new Map([['a', {}]]), endpoints: new Map() },
      { dependencies: new Map(), endpoints: new Map([['e', { budget: { components: [null] } }]]) },
    ]) {
      const error = thrown(() => rulesInputFromConfig(config as never));
      expect(isInvalidOptions(error), JSON.stringify(config)).toBe(true);
    }
    expect(rulesInputFromConfig({ dependencies: new Map(), endpoints: new Map() })).toEqual({
      dependencies: [],
      endpoints: [],
    });
  });

  it('a config file’s hostile names go through the loader into rules Prometheus accepts, or a clear refusal', () => {
    const yaml = (name: string) =>
      [
        'dependencies:',
        `  - name: ${JSON.stringify(name)}`,
        '    p99Ms: 50',
        'endpoints:',
        `  - endpoint: ${JSON.stringify(`GET /${name}`)}`,
        '    total_slo_ms: 100',
        '    components:',
        `      - { name: ${JSON.stringify(name)}, kind: remote, slice_ms: 100, dependency: ${JSON.stringify(name)} }`,
      ].join('\n');
    for (const name of ['a{{b', 'pay$__range', '{{ $value }}', 'GET /{id}']) {
      const { config, problems } = checkConfigText(yaml(name));
      expect(
        problems.filter((p) => p.severity === 'error'),
        name,
      ).toEqual([]);
      const rules = generateAlertRules(rulesInputFromConfig(config!));
      expect(
        allRules(rules).every(
          (r) => expandedText(r.labels.prazo_dependency ?? '') === name || r.labels.prazo_endpoint,
        ),
      ).toBe(true);
    }
    const { config } = checkConfigText(yaml('a\u2028b'));
    if (config !== undefined)
      expect(isInvalidOptions(thrown(() => generateAlertRules(rulesInputFromConfig(config))))).toBe(true);
  });

  it('Was a defect: an endpoint listing one component twice was accepted (parseBudget refuses it)', () => {
    const error = thrown(() =>
      generateAlertRules({ dependencies: [], endpoints: [{ name: 'e', components: ['a', 'b', 'a'] }] }),
    );
    expect(isInvalidOptions(error)).toBe(true);
    expect((error as InvalidOptionsError).problems).toEqual(['endpoint "e"\'s component "a" appears twice']);
    const unnamed = thrown(() =>
      generateAlertRules({ dependencies: [], endpoints: [{ name: '', components: ['a', 'a'] }] }),
    ) as InvalidOptionsError;
    expect(unnamed.problems[1]).toBe('endpoints[0]\'s component "a" appears twice');
  });

  it('Was a defect: editing one generated dashboard’s data source edited every panel, and every dashboard generated after it', () => {
    const first = generateDashboard({ dependencies: [{ name: 'a' }] });
    const panel = first.panels.find((p) => p.type === 'timeseries')!;
    if (panel.type !== 'timeseries') throw new Error('no timeseries panel');
    panel.datasource.uid = 'my-prometheus';
    const others = first.panels.filter((p) => p.type === 'timeseries' && p !== panel);
    // biome-ignore lint/suspicious/noTemplateCurlyInString: Grafana's variable syntax, literally.
    for (const p of others) if (p.type === 'timeseries') expect(p.datasource.uid).toBe('${datasource}');
    const rules = generateAlertRules({ dependencies: [{ name: 'a' }] });
    (rules.groups[0]!.rules[0]!.labels as { severity: string }).severity = 'info';
    (rules.groups[0]!.rules[1]!.annotations as { summary: string }).summary = 'edited';
    const second = generateDashboard({ dependencies: [{ name: 'a' }] });
    expect(JSON.stringify(second)).not.toContain('my-prometheus');
    expect(generateAlertRules({ dependencies: [{ name: 'a' }] })).not.toEqual(rules);
  });

  it('the dashboard of hostile names and of 60 dependencies has the shape Grafana imports', () => {
    for (const input of [
      {
        dependencies: HOSTILE.map((name) => ({ name })),
        endpoints: HOSTILE.map((name) => ({ name, components: [name] })),
      },
      { dependencies: Array.from({ length: 60 }, (_, i) => ({ name: `d${i}`, throttle: i % 2 === 0 })) },
      { dependencies: [] },
    ]) {
      const dashboard = generateDashboard(input);
      expect(dashboardProblems(JSON.parse(JSON.stringify(dashboard)))).toEqual([]);
    }
  });

  it('every hostile printable name yields PromQL the Prometheus grammar parses, and a dashboard that is plain JSON', () => {
    const input: RulesInput = {
      dependencies: HOSTILE.map((name) => ({ name, attempts: 1, throttle: false, assumedP99Ms: 1e-300 })),
      endpoints: HOSTILE.map((name) => ({ name, components: [name] })),
    };
    // the rules' PromQL, when promtool (below, which parses it) is not there to judge it
    if (!promtool)
      for (const rule of allRules(generateAlertRules(input)))
        expect(parsePromQL(rule.expr).errors, rule.expr).toEqual([]);
    const dashboard = generateDashboard(input);
    expect(JSON.parse(JSON.stringify(dashboard))).toEqual(dashboard);
    for (const p of dashboard.panels)
      for (const t of 'targets' in p ? p.targets : [])
        expect(
          parsePromQL(t.expr.replaceAll('$__rate_interval', '1m').replaceAll('$dependency', '.*')).errors,
        ).toEqual([]);
  });

  it('Was a defect: a panel with more than 26 queries got refIds `[`, `\\`, `]`…; now A…Z, AA, AB… as Grafana names them', () => {
    const dashboard = generateDashboard({
      dependencies: Array.from({ length: 60 }, (_, i) => ({ name: `d${i}` })),
    });
    const fleet = dashboard.panels.find((p) => p.title === 'Configured timeout vs live p99');
    const ids = fleet !== undefined && 'targets' in fleet ? fleet.targets.map((t) => t.refId) : [];
    expect(ids).toHaveLength(62);
    expect(new Set(ids).size).toBe(62);
    for (const id of ids) expect(id).toMatch(/^[A-Z]+$/);
    expect(ids.slice(24, 29)).toEqual(['Y', 'Z', 'AA', 'AB', 'AC']);
  });

  // biome-ignore lint/suspicious/noTemplateCurlyInString: Grafana's variable syntax, literally.
  it('Was a defect: `$name`, `${name}` and `[[name]]` in a name or selector reached Grafana, which substitutes them before sending the query', () => {
    // Grafana's variable syntax (public/app/features/variables/utils.ts, variableRegex): it replaces
    // every match, string literals included, when a variable (or a global like $__range) has the name.
    const GRAFANA_VARIABLE = /\$(\w+)|\[\[(\w+?)(?::(\w+))?\]\]|\${(\w+)(?:\.([^:^}]+))?(?::([^}]+))?}/g;
    const dashboard = generateDashboard({
      dependencies: [
        { name: 'pay$__range' },
        // biome-ignore lint/suspicious/noTemplateCurlyInString: Grafana's variable syntax, literally.
        { name: '${datasource}' },
        { name: '[[dependency]]' },
        { name: '$dependency' },
        {
          name: 'histo',
          prometheus: { metric: 'http_ms_bucket', selector: '{job=~"api-$__interval|[[datasource]]$"}' },
        },
      ],
      endpoints: [{ name: 'GET /$__range', components: ['a'] }],
    });
    for (const p of dashboard.panels)
      for (const t of 'targets' in p ? p.targets : [])
        for (const [m] of t.expr.matchAll(GRAFANA_VARIABLE))
          expect(['$dependency', '$__rate_interval'], t.expr).toContain(m);
  });
});

describe.skipIf(!promtool)(
  'prazo/rules under Prometheus’ own promtool (skipped: no promtool on PATH)',
  () => {
    const input: RulesInput = {
      dependencies: HOSTILE.map((name, i) => ({
        name,
        attempts: 1 + (i % 3),
        hedging: i % 2 === 0,
        throttle: i % 4 !== 0,
        maxRatio: i % 5 === 0 ? 0 : 0.1,
        assumedP99Ms: 20,
      })),
      endpoints: HOSTILE.map((name) => ({ name, components: [name, 'b'] })),
    };

    it('Was a defect: promtool check rules accepts the rule file of every hostile name', () => {
      // Before: `a{{b` and friends failed the template check of labels and annotations.
      // (the naming scheme changes metric names only: src/rules/promtool.test.ts checks both)
      const { groups } = generateAlertRules(input);
      expect(generateAlertRules({ dependencies: [] })).toEqual({ groups: [] });
      expect(checkRules('hostile.yaml', renderAlertRules({ groups }))).toContain('SUCCESS');
    });

    it('Was a defect: Prometheus reads every hostile name back exactly, in the selector and in the alert’s labels', () => {
      // Each dependency serves traffic for 20 minutes: its "p99 assumed" alert fires, labelled with the
      // name as Prometheus expanded the label template; the series is only matched if the selector's
      // string literal reads back as the name too. Before: `{{ $value }}` was labelled `1`.
      const { groups } = bare(generateAlertRules(input));
      const calibration = { groups: groups.filter((g) => g.name === 'prazo-calibration') };
      writeFileSync(join(dir, 'hostile-rules.yaml'), stringify(calibration, { lineWidth: 0 }));
      const tests = {
        rule_files: ['hostile-rules.yaml'],
        evaluation_interval: '1m',
        tests: [
          {
            interval: '1m',
            input_series: HOSTILE.map((name) => ({
              series: `prazo_dependency_attempts_total{job="j",prazo_dependency=${JSON.stringify(name)}}`,
              values: '0+60x20',
            })),
            alert_rule_test: [
              {
                eval_time: '18m',
                alertname: 'PrazoDependencyP99Assumed',
                exp_alerts: HOSTILE.map((name) => ({
                  exp_labels: { severity: 'warning', job: 'j', prazo_dependency: name },
                })),
              },
            ],
          },
        ],
      };
      // as JSON (YAML too): the expected labels are quoted strings, never read as another type
      writeFileSync(join(dir, 'hostile-tests.yaml'), JSON.stringify(tests));
      expect(run(['test', 'rules', 'hostile-tests.yaml'])).toContain('SUCCESS');
    });

    it('Was a defect: the dashboard’s queries read every hostile name back (label_replace took `$x` for a capture group)', () => {
      // A budget line per dependency: label_replace's replacement expands `$1`/`${x}`, so `pay$__range`
      // was labelled `pay`. And the slice-overrun panel's endpoint regex matches each endpoint exactly.
      const dashboard = generateDashboard(input);
      const targets = (title: string) => {
        const panel = dashboard.panels.find((p) => p.title === title);
        return panel !== undefined && 'targets' in panel ? panel.targets : [];
      };
      const lines = targets('Retry ratio (extra attempts / originals)').slice(1);
      const withRatio = input.dependencies.filter((d) => d.maxRatio! > 0);
      expect(lines).toHaveLength(withRatio.length);
      const [overrun] = targets('Slice overrun rate by component');
      const endpoint = (name: string) => ({ prazo_endpoint: name, prazo_component: 'b' });
      const seriesText = (metric: string, labels: Record<string, string>) =>
        `${metric}{${Object.entries(labels)
          .map(([k, v]) => `${k}=${JSON.stringify(v)}`)
          .join(',')}}`;
      const tests = {
        evaluation_interval: '1m',
        tests: [
          {
            interval: '1m',
            input_series: HOSTILE.flatMap((name) => [
              {
                series: seriesText('prazo_endpoint_slice_observations_total', endpoint(name)),
                values: '0+60x10',
              },
              { series: seriesText('prazo_endpoint_slice_overruns_total', endpoint(name)), values: '0+6x10' },
            ]),
            promql_expr_test: [
              ...lines.map((t, i) => ({
                expr: grafana(t.expr),
                eval_time: '1m',
                exp_samples: [
                  { labels: seriesText('', { prazo_dependency: withRatio[i]!.name }), value: 0.1 },
                ],
              })),
              {
                expr: grafana(overrun!.expr),
                eval_time: '8m',
                exp_samples: HOSTILE.map((name) => ({ labels: seriesText('', endpoint(name)), value: 0.1 })),
              },
            ],
          },
        ],
      };
      writeFileSync(join(dir, 'dashboard-tests.yaml'), JSON.stringify(tests));
      expect(run(['test', 'rules', 'dashboard-tests.yaml'])).toContain('SUCCESS');
    });
  },
);

const budget = (slo: unknown, slices: unknown[], extra: object = {}) =>
  parseBudget({
    endpoint: 'POST /pedidos',
    total_slo_ms: slo,
    components: slices.map((s, i) => ({ name: `c${i}`, kind: 'local', slice_ms: s })),
    ...extra,
  });

describe('latency budgets (prazo/calibrate: SPEC B1–B3)', () => {
  it('refuses malformed SLOs and slices with their paths, every problem together', () => {
    for (const slo of [
      0,
      -0,
      -1,
      Number.NaN,
      Number.POSITIVE_INFINITY,
      1e308,
      3_600_001,
      '800',
      '99.9%%',
      '800ms',
      null,
      true,
      [],
      {},
    ]) {
      const r = budget(slo, [100]);
      expect(r.budget, String(slo)).toBeUndefined();
      expect(r.problems.some((p) => p.path.join('.') === 'total_slo_ms')).toBe(true);
    }
    for (const slice of [0, -1, Number.NaN, '5ms', '', null, Number.NEGATIVE_INFINITY]) {
      const r = budget(100, [slice]);
      expect(r.budget, String(slice)).toBeUndefined();
      expect(r.problems.some((p) => p.path.join('.') === 'components.0.slice_ms')).toBe(true);
    }
    const many = budget(Number.NaN, [1, 'x', -3], { totl_slo_ms: 5 });
    expect(many.problems.map((p) => p.path.join('.'))).toEqual(
      expect.arrayContaining([
        'total_slo_ms',
        'components.1.slice_ms',
        'components.2.slice_ms',
        'totl_slo_ms',
      ]),
    );
    for (const raw of [
      undefined,
      null,
      'POST /x',
      [],
      new Map(),
      { endpoint: 'e', total_slo_ms: 5, components: [] },
    ])
      expect(parseBudget(raw).budget).toBeUndefined();
    const dup = parseBudget({
      endpoint: 'e',
      total_slo_ms: 10,
      components: [
        { name: 'a', kind: 'local', slice_ms: 5 },
        { name: ' a ', kind: 'local', slice_ms: 5 },
      ],
    });
    expect(dup.problems.some((p) => p.message.includes('duplicate component a'))).toBe(true);
  });

  it('Was a defect: a slice of 1e308 ms was accepted, and validateBudget said the slices exceed the SLO "by Infinity ms"', () => {
    const r = budget(100, [1e308, 1e308]);
    expect(r.budget).toBeUndefined();
    expect(r.problems.map((p) => p.path.join('.'))).toEqual([
      'components.0.slice_ms',
      'components.1.slice_ms',
    ]);
    expect(r.problems[0]!.message).toContain('at most 3600000 ms');
    // at the bound: accepted, and the sum stays finite
    const edge = budget(3_600_000, [3_600_000]);
    expect(edge.problems).toEqual([]);
    expect(validateBudget(edge.budget!)).toEqual([]);
  });

  it('Was a defect: slices written in decimals that add up to the SLO were refused as falling short "by 0 ms"', () => {
    // 63 × 56249.9 + 56256.29 = 3599999.99 in decimal, 4.7e-9 off in binary.
    const r = budget(3_599_999.99, [...Array(63).fill(56_249.9), 56_256.29]);
    expect(r.problems).toEqual([]);
    expect(validateBudget(r.budget!)).toEqual([]);
    // any slices in hundredths of a ms, with their exact decimal sum as the SLO
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: 1, max: 5_600_000 }), { minLength: 1, maxLength: 64 }),
        (cents) => {
          const total = cents.reduce((a, b) => a + b, 0);
          fc.pre(total <= 360_000_000);
          const b = budget(
            total / 100,
            cents.map((c) => c / 100),
          ).budget!;
          expect(validateBudget(b).filter((p) => p.severity === 'error')).toEqual([]);
        },
      ),
      { numRuns: 200 },
    );
    // a real shortfall is still seen, and said with a number that is not 0
    const short = validateBudget(budget(100, [50, 49.99999]).budget!);
    expect(short).toHaveLength(1);
    expect(short[0]!.message).toMatch(/fall short of total_slo_ms by 0\.00001 ms/);
  });

  const handBuilt = (sliceMs: unknown, totalSloMs: unknown = 100): LatencyBudget =>
    ({ endpoint: 'e', totalSloMs, components: [{ name: 'a', kind: 'local', sliceMs }] }) as LatencyBudget;

  it('Was a defect: a hand-built budget with a NaN slice passed validateBudget with no problem; a wrong shape was a TypeError', () => {
    for (const bad of [
      handBuilt(Number.NaN),
      handBuilt(Number.POSITIVE_INFINITY),
      handBuilt(-5),
      handBuilt(50, Number.NaN),
      { endpoint: 'e', totalSloMs: 10, components: [null] },
      {
        endpoint: 'e',
        totalSloMs: 10,
        components: [
          { name: 'a', kind: 'remote', sliceMs: 5 },
          { name: 'a', kind: 'remote', sliceMs: 5 },
        ],
      },
      { endpoint: 'e', totalSloMs: 10, components: [{ name: 'a', kind: 'fast', sliceMs: 10 }] },
      {},
      null,
      [],
    ]) {
      const v = thrown(() => validateBudget(bad as LatencyBudget));
      expect(isInvalidOptions(v), JSON.stringify(bad)).toBe(true);
      const d = thrown(() => deriveTimeouts(bad as LatencyBudget));
      expect(isInvalidOptions(d), JSON.stringify(bad)).toBe(true);
      expect((d as InvalidOptionsError).problems[0]).toMatch(/^budget /);
    }
  });

  it('Was a defect: deriveTimeouts with a record where the Map of dependencies goes threw a TypeError', () => {
    const b = parseBudget({
      endpoint: 'e',
      total_slo_ms: 800,
      components: [{ name: 'inv', kind: 'remote', slice_ms: 800, dependency: 'inventory' }],
    }).budget!;
    const profile: DependencyProfile = { p99Ms: 100 };
    const error = thrown(() => deriveTimeouts(b, { inventory: profile } as never, [], [] as never));
    expect(isInvalidOptions(error)).toBe(true);
    expect((error as InvalidOptionsError).problems).toEqual([
      'dependencies must be a Map of dependency name to its profile',
      'invalid must be a Set of dependency names',
    ]);
    // the Map it expects still works, and an unknown or invalid profile is a problem, not a throw
    expect(deriveTimeouts(b, new Map([['inventory', profile]])).components[0]!.responseMs).toBeGreaterThan(0);
    const broken = deriveTimeouts(b, new Map([['inventory', { p99Ms: Number.NaN }]]));
    expect(broken.problems[0]!.message).toContain('cannot calibrate inventory');
  });

  it('Was a defect: createSliceRunner and createOverrunTracker ran a hand-built NaN budget (the component ran with a NaN slice)', () => {
    const clock = new FakeClock();
    for (const b of [
      handBuilt(Number.NaN),
      handBuilt(50, Number.NaN),
      { components: [null] },
      { components: [] },
    ]) {
      expect(isInvalidOptions(thrown(() => createSliceRunner({ budget: b as LatencyBudget, clock })))).toBe(
        true,
      );
      expect(
        isInvalidOptions(thrown(() => createOverrunTracker({ budget: b as LatencyBudget, clock }))),
      ).toBe(true);
    }
  });

  it('refuses malformed tracker and runner options, every problem together, with "did you mean"', () => {
    const b = budget(10, [10]).budget!;
    const clock = new FakeClock();
    for (const bad of [
      { windowMs: 0 },
      { windowMs: -3_600_000 },
      { windowMs: '1h' },
      { windowMs: '0d' },
      { windowMs: 1e9 * 86_400_000 },
      { windowMs: Number.NaN },
      { maxOverrunRate: 1.5 },
      { maxOverrunRate: 100 },
      { maxOverrunRate: '99.9%%' },
      { maxOverrunRate: -0.1 },
      { minCalls: 0 },
      { minCalls: 2.5 },
      { onAlarm: 'log' },
      { clock: Date },
      { windowMs: Number.POSITIVE_INFINITY, maxOverrunRat: 0.1 },
    ]) {
      const error = thrown(() => createOverrunTracker({ budget: b, clock, ...bad } as never));
      expect(isInvalidOptions(error), JSON.stringify(bad)).toBe(true);
    }
    const many = thrown(() =>
      createOverrunTracker({ budget: b, windowMs: -1, maxOverrunRat: 0.1, minCalls: 0 } as never),
    ) as InvalidOptionsError;
    expect(many.problems).toHaveLength(3);
    expect(many.problems.join('\n')).toContain('did you mean `maxOverrunRate`');
    for (const options of [
      undefined,
      null,
      'budget',
      [],
      new Map(),
      { budget: b, trackr: {} },
      { budget: b, tracker: {} },
    ])
      expect(isInvalidOptions(thrown(() => createSliceRunner(options as never)))).toBe(true);
  });

  it('Was a defect: `const { alarms } = tracker` threw a TypeError (alarms read `this.report`)', () => {
    const clock = new FakeClock();
    const tracker = createOverrunTracker({ budget: budget(10, [10]).budget!, clock, minCalls: 1 });
    const { alarms, report, observe } = tracker;
    expect(observe('c0', 20)).toBe(true);
    expect(alarms().map((a) => a.name)).toEqual(['c0']);
    expect(report()[0]!.rate).toBe(1);
    // NaN and unknown names are ignored; ±Infinity are a run like any other
    expect(observe('c0', Number.NaN)).toBe(false);
    expect(observe('nope', 1e9)).toBe(false);
    expect(observe('c0', Number.NEGATIVE_INFINITY)).toBe(false);
    expect(report()[0]!.calls).toBe(2);
    clock.advance(60_000);
    expect(report()[0]!.calls).toBe(0);
  });

  it('Was a defect: an onAlarm that threw escaped from observe, was called again on every later run, and replaced the component’s result in the slice runner', async () => {
    const warn = vi.spyOn(process, 'emitWarning').mockImplementation(() => undefined);
    try {
      const clock = new FakeClock();
      const b = budget(10, [10]).budget!;
      let calls = 0;
      const tracker = createOverrunTracker({
        budget: b,
        clock,
        minCalls: 1,
        onAlarm: () => {
          calls += 1;
          throw new Error('alarm handler bug');
        },
      });
      expect(tracker.observe('c0', 20)).toBe(true);
      expect(tracker.observe('c0', 20)).toBe(true);
      expect(calls).toBe(1);
      expect(warn).toHaveBeenCalledTimes(1);
      expect(String(warn.mock.calls[0]![0])).toContain('alarm handler bug');
      const runner = createSliceRunner({ budget: b, clock, tracker });
      const slow = await runner.run('c0', () => {
        clock.advance(15);
        return 'answer';
      });
      expect(slow).toBe('answer');
    } finally {
      warn.mockRestore();
    }
  });

  it('Was a defect: a problem path that is not a list (`at`) threw a TypeError or was spread into characters', () => {
    const b = budget(10, [10]).budget!;
    for (const [i, at] of [5, 'endpoints', null, {}, [{}], [Symbol('x')]].entries()) {
      expect(isInvalidOptions(thrown(() => parseBudget({}, at as never))), `#${i}`).toBe(true);
      expect(isInvalidOptions(thrown(() => validateBudget(b, at as never))), `#${i}`).toBe(true);
      expect(isInvalidOptions(thrown(() => deriveTimeouts(b, new Map(), at as never))), `#${i}`).toBe(true);
    }
    expect(parseBudget({}, ['endpoints', 3]).problems[0]!.path).toEqual(['endpoints', 3, 'endpoint']);
  });

  it('Was a defect: an elapsed time given as a string was compared as a number and counted as an overrun', () => {
    const tracker = createOverrunTracker({ budget: budget(10, [10]).budget!, clock: new FakeClock() });
    for (const elapsed of ['5000', null, undefined, 20n, {}, [50]])
      expect(tracker.observe('c0', elapsed as never), String(elapsed)).toBe(false);
    expect(tracker.report()[0]!.calls).toBe(0);
  });

  it('Was a defect: a tracker whose observe threw replaced the component’s result (and its error) in SliceRunner.run', async () => {
    const warn = vi.spyOn(process, 'emitWarning').mockImplementation(() => undefined);
    try {
      const tracker = {
        observe: () => {
          throw new Error('tracker bug');
        },
      };
      const runner = createSliceRunner({
        budget: budget(10, [10]).budget!,
        clock: new FakeClock(),
        tracker: tracker as unknown as OverrunTracker,
      });
      expect(await runner.run('c0', () => 'answer')).toBe('answer');
      const own = new Error('the component failed');
      expect(
        await runner
          .run('c0', () => {
            throw own;
          })
          .catch((e: unknown) => e),
      ).toBe(own);
      expect(warn).toHaveBeenCalledTimes(2);
    } finally {
      warn.mockRestore();
    }
  });

  it('Was a defect: SliceRunner.run with work that is not a function rejected with a TypeError', async () => {
    const runner = createSliceRunner({ budget: budget(10, [10]).budget!, clock: new FakeClock() });
    for (const fn of [undefined, null, 5, 'fn', {}]) {
      const error = await runner.run('c0', fn as never).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(isInvalidOptions(error), String(fn)).toBe(true);
    }
    const typo = await runner.run('c1', () => 1).catch((e: unknown) => e);
    expect(isInvalidOptions(typo)).toBe(true);
    expect(runner.sliceMs('__proto__')).toBeUndefined();
  });
});
