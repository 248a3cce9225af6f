import { stringify } from 'yaml';
import { num, rate, sumBy } from '../calibrate/promql.js';
import { ATTR } from '../otel/constants.js';
import { ALERTS, RULE_DEFAULTS as R } from './constants.js';
import {
  type ResolvedDependency,
  type ResolvedInput,
  type RulesEndpoint,
  type RulesInput,
  type RulesOptions,
  resolveInput,
} from './input.js';
import { familyNames, labelName, type NamingScheme, templateText, UNPRINTABLE } from './names.js';
import { dependencyRules } from './rules-dependency.js';
import type { AlertRule, RuleFile } from './types.js';

/**
 * Prometheus alerting rules generated from the configuration (SPEC R7, V1, V3, B3, C5, X3): the
 * thresholds come from the same file the clients are built from (each dependency's budget ratio and
 * floor, each endpoint's budget components), so an alert cannot disagree with the budget it watches.
 */

function sliceRule(endpoint: RulesEndpoint, naming: NamingScheme): AlertRule {
  const N = familyNames(naming);
  const by = ['job', labelName(ATTR.endpoint), labelName(ATTR.component)];
  const e = [labelName(ATTR.endpoint), '=', endpoint.name] as const;
  const overruns = sumBy(by, rate(N.sliceOverruns, [e], R.sliceWindow));
  const observations = sumBy(by, rate(N.sliceObservations, [e], R.sliceWindow));
  // Labels and annotations are Go templates to Prometheus: names go in as text that prints itself.
  const name = templateText(endpoint.name);
  const components = templateText(endpoint.components.join(', '));
  return {
    alert: ALERTS.sliceOverrun,
    expr: `${overruns} / ${observations} > ${num(R.sliceOverrunRatio)}`,
    for: R.sliceFor,
    labels: { severity: 'warning', [labelName(ATTR.endpoint)]: name },
    annotations: {
      summary: `A component of ${name} keeps overrunning its latency budget slice`,
      description: `{{ $labels.prazo_component }} overran its slice in {{ $value | humanizePercentage }} of runs of ${name} (components: ${components}) (SPEC B3).`,
      runbook: `The budget design no longer holds for ${name}: add a cache or a queue in front of the component, or renegotiate the SLO, then update its slice in prazo.config.yaml.`,
    },
  };
}

/**
 * A dependency whose timeouts derive from an assumed p99 (its `kind`'s starting value, SPEC C8) while
 * it serves traffic: the drift check has nothing measured to compare with (C5), so the assumption
 * itself is the drift to fix. It clears when the file holds a measured `p99Ms` and the rules are
 * generated again (`prazo calibrate --write` does the first, `prazo rules` the second).
 */
function assumedRule(dep: ResolvedDependency, naming: NamingScheme): AlertRule {
  const N = familyNames(naming);
  const d = [labelName(ATTR.dependency), '=', dep.name] as const;
  const traffic = sumBy(['job', labelName(ATTR.dependency)], rate(N.attempts, [d], R.rateWindow));
  const name = templateText(dep.name);
  return {
    alert: ALERTS.p99Assumed,
    expr: `${traffic} > 0`,
    for: R.assumedFor,
    labels: { severity: 'warning', [labelName(ATTR.dependency)]: name },
    annotations: {
      summary: `The timeouts of ${name} come from an assumed p99, never measured`,
      description: `${name} is declared with a kind of call and no measured p99: its timeouts derive from the kind's starting p99 (${num(dep.assumedP99Ms!)} ms, docs/calibration.md), while it serves {{ $value | humanize }} attempts/s. Its own healthy p99 is the number to plan with (SPEC C1, C8).`,
      runbook: `Measure ${name} and write its p99 into prazo.config.yaml: prazo calibrate --prometheus URL --write (or --histogram FILE --unit ms --dependency ${name} --write), then run prazo rules again.`,
    },
  };
}

function build(input: ResolvedInput): RuleFile {
  const groups = [];
  const deps = input.dependencies;
  if (deps.length > 0) {
    const rules = deps.flatMap((d) => dependencyRules(d, input.naming));
    const timeout = (r: AlertRule) =>
      r.alert === ALERTS.timeoutBelowP99 || r.alert === ALERTS.abandonmentHigh;
    const instance = (r: AlertRule) => r.alert === ALERTS.instanceEjectedRepeatedly;
    const throttle = (r: AlertRule) => r.alert === ALERTS.dependencyThrottled;
    groups.push(
      { name: 'prazo-retries', rules: rules.filter((r) => !timeout(r) && !instance(r) && !throttle(r)) },
      { name: 'prazo-timeouts', rules: rules.filter(timeout) },
      { name: 'prazo-instances', rules: rules.filter(instance) },
    );
    const throttling = rules.filter(throttle);
    if (throttling.length > 0) groups.push({ name: 'prazo-throttling', rules: throttling });
    const assumed = deps.filter((d) => d.assumedP99Ms !== undefined).map((d) => assumedRule(d, input.naming));
    if (assumed.length > 0) groups.push({ name: 'prazo-calibration', rules: assumed });
  }
  if (input.endpoints.length > 0) {
    groups.push({
      name: 'prazo-latency-budgets',
      rules: input.endpoints.map((e) => sliceRule(e, input.naming)),
    });
  }
  return { groups };
}

/** The rule file as data (validated input; throws `InvalidOptionsError` listing every problem). */
export function generateAlertRules(input: RulesInput, options: RulesOptions = {}): RuleFile {
  return build(resolveInput(input, options, 'generateAlertRules'));
}

/**
 * `source` as it can stand in the header comment: a comment ends at a line break, and Go's YAML reader
 * also breaks lines at NEL, U+2028 and U+2029, so a path holding one would end the comment and write
 * the rest as YAML; control characters are refused outright. Each is written as its `\\u` escape.
 */
const commentText = (source: string): string =>
  source.replace(
    new RegExp(UNPRINTABLE.source, 'gu'),
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );

/** The rule file as YAML, ready for `rule_files:` in prometheus.yml. */
export function renderAlertRules(file: RuleFile, source = 'prazo.config.yaml'): string {
  const header =
    `# Generated by \`prazo rules\` from ${commentText(String(source))}. Do not edit: regenerate after changing the config.\n` +
    '# Check with: promtool check rules <this file>\n';
  return header + stringify(file, { lineWidth: 0 });
}
