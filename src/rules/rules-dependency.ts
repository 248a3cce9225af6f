import {
  increase,
  type Matcher,
  num,
  oneOf,
  rate,
  selector,
  successMatcher,
  sumBy,
  sumWithout,
} from '../calibrate/promql.js';
import { ATTR, CALIBRATED_PHASES } from '../otel/constants.js';
import { ALERTS, RULE_DEFAULTS as R } from './constants.js';
import type { ResolvedDependency } from './input.js';
import { familyNames, labelName, type NamingScheme, templateText } from './names.js';
import type { AlertRule } from './types.js';

/**
 * The alert rules of one dependency (SPEC R7, V1, V3, C5, H3, and the adaptive throttle's). Gauges (the retry ratio, the timeouts,
 * the live p99) are per process, so their rules keep every label and fire per instance; rates are
 * summed per `job` and dependency, so a fleet's abandonment is judged on all of its attempts.
 */

const L = {
  dependency: labelName(ATTR.dependency),
  kind: labelName(ATTR.attemptKind),
  phase: labelName(ATTR.timeoutPhase),
  outcome: labelName(ATTR.outcome),
  instance: labelName(ATTR.instance),
};
const BY = ['job', L.dependency];

const pct = (x: number): string => `${Number((x * 100).toPrecision(6))}%`;

/** le's unit in seconds: the configured-timeout gauge is in seconds. */
const UNIT_TO_S = Object.freeze({ s: 1, ms: 1e-3, us: 1e-6 });

/**
 * The fleet p99 of the dependency's successful calls (SPEC C5, X8): its latency histogram (the
 * config's `histogram.prometheus`, the one `prazo calibrate --prometheus` reads), every instance's
 * buckets summed by `le`, in the histogram's own unit.
 */
export function fleetP99(dep: ResolvedDependency, window: string = R.fleetP99Window): string {
  const s = dep.series;
  const ok: Matcher[] = s.outcomeLabel === undefined ? [] : [successMatcher(s.outcomeLabel)];
  return `histogram_quantile(0.99, ${sumBy(['le'], rate(`${s.metric}_bucket`, [...s.matchers, ...ok], window))})`;
}

/** {@link fleetP99} in seconds, the unit of prazo's timeout gauges (for the dashboard). */
export function fleetP99Seconds(dep: ResolvedDependency, window: string): string {
  const f = UNIT_TO_S[dep.series.unit];
  return f === 1 ? fleetP99(dep, window) : `${fleetP99(dep, window)} * ${num(f)}`;
}

export function dependencyRules(dep: ResolvedDependency, naming: NamingScheme): AlertRule[] {
  const N = familyNames(naming);
  const d: Matcher = [L.dependency, '=', dep.name];
  // The dependency as a rule label too: the same alert name per dependency stays a distinct rule.
  // Labels and annotations are Go templates to Prometheus: the name goes in as text that prints itself.
  const name = templateText(dep.name);
  const own = { [L.dependency]: name };
  const rules: AlertRule[] = [];
  const hedges = dep.hedging ? ' Hedges spend the same budget (SPEC H3): check the hedge panel too.' : '';

  const spends = dep.attempts > 1 || dep.hedging;
  if (spends && dep.maxRatio > 0) {
    // The ratio alone misleads at low traffic, where the budget's floor (not its ratio) governs.
    const originals = sumWithout([L.kind], rate(N.attempts, [d, [L.kind, '=', 'original']], R.rateWindow));
    const governs = `${originals} * ${num(dep.maxRatio)} > ${num(dep.minPerSecond)}`;
    const ratio = selector(N.retryRatio, [d]);
    const warn = dep.maxRatio * R.warnFraction;
    rules.push({
      alert: ALERTS.retryRatioHigh,
      expr: `(${ratio} > ${num(warn)}) and (${governs})`,
      for: R.warnFor,
      labels: { severity: 'warning', ...own },
      annotations: {
        summary: `Retries to ${name} are above ${pct(warn)} of original requests`,
        description: `The retry ratio of ${name} is {{ $value | humanizePercentage }} (budget ${pct(dep.maxRatio)}). Retries are masking a degradation: the error rate follows in about a minute (SPEC R7).${hedges}`,
        runbook: `Look at ${name}'s timeouts by phase and error rate now, before users see failures; if it is degrading, shed load or fail over before the budget runs out.`,
      },
    });
    const exhausted = dep.maxRatio * R.exhaustedFraction;
    rules.push({
      alert: ALERTS.retryBudgetExhausted,
      expr: `(${ratio} >= ${num(exhausted)}) and (${governs})`,
      for: R.exhaustedFor,
      labels: { severity: 'critical', ...own },
      annotations: {
        summary: `The retry budget of ${name} is spent (ratio at its ${pct(dep.maxRatio)} cap)`,
        description: `The retry ratio of ${name} is {{ $value | humanizePercentage }}, at the budget's cap: further failures are no longer retried and reach callers as errors, by design (SPEC R1).${hedges}`,
        runbook: `Treat ${name} as down: check its health and its own dependencies; do not raise the budget ratio, that only multiplies load on a failing service.`,
      },
    });
  }

  const refusals = (window: string) => sumBy(BY, rate(N.budgetRefusals, [d], window));
  if (spends)
    rules.push({
      alert: ALERTS.budgetRefusalsClimbing,
      expr:
        `(${refusals(R.rateWindow)} > ${num(R.refusalsMinPerSecond)}) and ` +
        `(${refusals(R.rateWindow)} > ${num(R.refusalsClimbFactor)} * ${refusals(R.refusalsBaseline)})`,
      for: R.refusalsFor,
      labels: { severity: 'warning', ...own },
      annotations: {
        summary: `The retry budget of ${name} is refusing more and more extra attempts`,
        description: `{{ $value | humanize }} refusals/s for ${name}, over ${num(R.refusalsClimbFactor)}× its hourly rate: failures now exceed what the budget retries (SPEC R1, H3).`,
        runbook: `Check ${name}'s error rate and timeouts by phase; refusals are the budget protecting it, so fix the cause rather than the budget.`,
      },
    });

  const response: Matcher = [L.phase, '=', 'response'];
  rules.push({
    alert: ALERTS.timeoutBelowP99,
    expr: `max(${selector(N.timeoutConfigured, [d, response])}) < (${fleetP99(dep)} * ${num(UNIT_TO_S[dep.series.unit] * R.timeoutHeadroom)})`,
    for: R.timeoutFor,
    labels: { severity: 'warning', ...own },
    annotations: {
      summary: `The response timeout of ${name} is below (or within ${pct(R.timeoutHeadroom - 1)} of) its fleet p99`,
      description: `Configured response timeout {{ $value | humanizeDuration }} for ${name} no longer clears the p99 of ${dep.series.metric} summed over the fleet: healthy calls are being cut (SPEC C5, V1, X8).`,
      runbook: `Recalibrate ${name} from the fleet's healthy windows (prazo calibrate --prometheus URL --write), or find why its p99 grew (deploy, volume, a missing index).`,
    },
  });

  const attempts = sumBy(BY, rate(N.attempts, [d], R.abandonmentWindow));
  const abandoned = sumBy(
    BY,
    rate(N.timeouts, [d, [L.phase, '=~', oneOf(CALIBRATED_PHASES)]], R.abandonmentWindow),
  );
  const errors = sumBy(
    BY,
    rate(`${N.attemptDuration}_count`, [d, [L.outcome, '=', 'error']], R.abandonmentWindow),
  );
  rules.push({
    alert: ALERTS.abandonmentHigh,
    expr: `(${abandoned} / ${attempts} > ${num(R.abandonmentRatio)}) unless (${errors} / ${attempts} >= ${num(R.healthyErrorRatio)})`,
    for: R.abandonmentFor,
    labels: { severity: 'warning', ...own },
    annotations: {
      summary: `Over ${pct(R.abandonmentRatio)} of attempts to a healthy ${name} end in a timeout`,
      description: `{{ $value | humanizePercentage }} of attempts to ${name} hit the response/body timeout while its error rate is low: the timeout is too tight (SPEC C5).`,
      runbook: `Compare ${name}'s configured timeout with its p99 panel and recalibrate; if p99 is stable and low, look for a few slow instances instead.`,
    },
  });

  // Summed over the fleet per instance: each process ejects on what it sees (SPEC X5).
  const ejections = sumBy([...BY, L.instance], increase(N.instanceEjections, [d], R.instanceWindow));
  rules.push({
    alert: ALERTS.instanceEjectedRepeatedly,
    expr: `${ejections} >= ${num(R.instanceEjections)}`,
    for: R.instanceFor,
    labels: { severity: 'warning', ...own },
    annotations: {
      summary: `An instance of ${name} keeps being ejected`,
      description: `{{ $labels.prazo_instance }} of ${name} was ejected {{ $value | humanize }} times in ${R.instanceWindow}: it fails again after each return on probation. Callers are kept off it (SPEC X5), at the cost of the capacity it should give.`,
      runbook: `Look at {{ $labels.prazo_instance }} itself (its logs, its host, its own dependencies) and replace or drain it; the Load per instance panel shows how little traffic it gets now.`,
    },
  });
  if (dep.throttle) {
    // Calls made = refused + sent (a refused call starts no attempt), summed over the fleet.
    const throttled = sumBy(BY, rate(N.throttled, [d], R.rateWindow));
    const sent = sumBy(BY, rate(N.attempts, [d, [L.kind, '=', 'original']], R.rateWindow));
    rules.push({
      alert: ALERTS.dependencyThrottled,
      expr: `(${throttled} / (${throttled} + ${sent}) > ${num(R.throttledShare)}) and (${throttled} > ${num(R.throttledMinPerSecond)})`,
      for: R.throttledFor,
      labels: { severity: 'warning', ...own },
      annotations: {
        summary: `Over ${pct(R.throttledShare)} of calls to ${name} are refused by its adaptive throttle`,
        description: `{{ $value | humanizePercentage }} of calls to ${name} failed at once with THROTTLED over ${R.rateWindow}: most attempts it was sent were not accepted (timeouts, connect failures, 5xx), so the client sends only a share of calls and fails the rest without touching a socket (docs/throttling.md, SPEC V2).`,
        runbook: `Treat ${name} as down or browning out: check its health, errors and timeouts by phase; the throttle lets calls through again by itself within about two seconds of its recovery, so do not switch it off.`,
      },
    });
  }
  return rules;
}
