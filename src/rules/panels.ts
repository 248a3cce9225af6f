import { increase, type Matcher, num, oneOf, quote, rate, selector, sumBy } from '../calibrate/promql.js';
import { ATTR, CALIBRATED_PHASES } from '../otel/constants.js';
import { RULE_DEFAULTS } from './constants.js';
import type { ResolvedInput } from './input.js';
import { familyNames, labelName } from './names.js';
import { fleetP99Seconds } from './rules-dependency.js';

/**
 * The dashboard's panels, row by row (SPEC V3: the retry ratio first, with its budget line; the
 * adaptive throttle's refusals beside the calls sent; then timeout vs p99 and timeouts by phase, hedges, server wasted work, latency-budget slices). Queries use
 * Grafana's `$dependency` variable and `$__rate_interval`, which Grafana substitutes before sending.
 */

export interface PanelTarget {
  readonly expr: string;
  readonly legendFormat: string;
}

export interface PanelSpec {
  readonly title: string;
  readonly description: string;
  /** Grafana unit id: `percentunit`, `s`, `reqps`, `short`. */
  readonly unit: string;
  readonly targets: readonly PanelTarget[];
}

export interface RowSpec {
  readonly title: string;
  readonly panels: readonly PanelSpec[];
}

const L = {
  dep: labelName(ATTR.dependency),
  kind: labelName(ATTR.attemptKind),
  phase: labelName(ATTR.timeoutPhase),
  outcome: labelName(ATTR.outcome),
  server: labelName(ATTR.server),
  endpoint: labelName(ATTR.endpoint),
  component: labelName(ATTR.component),
  instance: labelName(ATTR.instance),
  state: labelName(ATTR.instanceState),
  reason: labelName(ATTR.ejectionReason),
};
const W = '$__rate_interval';
/** Ejections are rare: counted over a fixed window rather than as a rate per second. */
const EVENTS_WINDOW = '5m';
const dep: Matcher = [L.dep, '=~', '$dependency'];

/**
 * A dependency that is several instances (SPEC X5): how many each process has ejected now and in
 * rotation, the load each instance gets, and its ejections. The instances gauge is per process (each
 * client ejects on what it sees), so the fleet's view is the worst process: the most ejected, the
 * fewest in rotation. The load per instance is summed over the fleet: what each instance serves.
 */
function instanceRow(N: ReturnType<typeof familyNames>): RowSpec {
  const process = [L.dep, 'job', 'instance'];
  const inRotation = sumBy(process, selector(N.instances, [dep, [L.state, '=~', 'active|probation']]));
  return {
    title: 'Instances (SPEC X5)',
    panels: [
      {
        title: 'Instances ejected now and in rotation',
        description:
          'Per dependency, the worst process: the most instances it has ejected, the fewest it has in rotation (active or on probation).',
        unit: 'short',
        targets: [
          {
            expr: `max by (${L.dep}) (${selector(N.instances, [dep, [L.state, '=', 'ejected']])})`,
            legendFormat: `ejected {{${L.dep}}}`,
          },
          { expr: `min by (${L.dep}) (${inRotation})`, legendFormat: `in rotation {{${L.dep}}}` },
        ],
      },
      {
        title: 'Load per instance',
        description:
          'Attempts per second each instance gets from the fleet: a slow or failing instance should fall behind its peers.',
        unit: 'reqps',
        targets: [
          {
            expr: sumBy([L.dep, L.instance], rate(N.instanceAttempts, [dep], W)),
            legendFormat: `{{${L.dep}}} {{${L.instance}}}`,
          },
        ],
      },
      {
        title: 'Ejections by instance and reason (per 5 minutes)',
        description:
          'Ejections over the last 5 minutes, summed over the fleet, by instance and reason (consecutive failures, or a p99 far above its peers); returns: back in rotation on probation.',
        unit: 'short',
        targets: [
          {
            expr: sumBy([L.dep, L.instance, L.reason], increase(N.instanceEjections, [dep], EVENTS_WINDOW)),
            legendFormat: `ejected {{${L.dep}}} {{${L.instance}}} {{${L.reason}}}`,
          },
          {
            expr: sumBy([L.dep, L.instance], increase(N.instanceReturns, [dep], EVENTS_WINDOW)),
            legendFormat: `returned {{${L.dep}}} {{${L.instance}}}`,
          },
        ],
      },
    ],
  };
}

/**
 * The adaptive throttle (docs/throttling.md): the share of calls it refuses over time, beside the
 * calls sent, per dependency. The share is the fleet's (refused / (refused + sent): a refused call
 * starts no attempt), the number the alert judges; the probability is the worst process's now (the
 * gauge is per process: each one throttles on what it sees). Sent falls to the probe share while
 * refused rises, and both return as the dependency answers again.
 */
function throttleRow(N: ReturnType<typeof familyNames>): RowSpec {
  const refused = sumBy([L.dep], rate(N.throttled, [dep], W));
  const sent = sumBy([L.dep], rate(N.attempts, [dep, [L.kind, '=', 'original']], W));
  return {
    title: 'Adaptive throttling (docs/throttling.md)',
    panels: [
      {
        title: 'Throttle refusal share (refused / calls)',
        description: `Share of calls refused locally, summed over the fleet, and the refusal probability now in the worst process. Nothing is refused while half of the attempts are accepted; the probe share keeps it below its cap (90% by default). The alert fires above ${num(RULE_DEFAULTS.throttledShare * 100)}% held ${RULE_DEFAULTS.throttledFor}.`,
        unit: 'percentunit',
        targets: [
          { expr: `${refused} / (${refused} + ${sent})`, legendFormat: `refused share {{${L.dep}}}` },
          {
            expr: `max by (${L.dep}) (${selector(N.throttleProbability, [dep])})`,
            legendFormat: `probability now, worst process {{${L.dep}}}`,
          },
        ],
      },
      {
        title: 'Calls sent and refused by the throttle',
        description:
          'Original attempts sent per second, and calls refused without an attempt: what reaches the dependency, and what failed fast instead.',
        unit: 'reqps',
        targets: [
          { expr: sent, legendFormat: `sent {{${L.dep}}}` },
          { expr: refused, legendFormat: `refused {{${L.dep}}}` },
        ],
      },
    ],
  };
}

export function dashboardRows(input: ResolvedInput): RowSpec[] {
  const N = familyNames(input.naming);
  const byDep = (extra: string[] = []) => [L.dep, ...extra];
  // One flat line per dependency at its budget's ratio, from the config: the alert's own threshold.
  // The name is label_replace's replacement, where `$1`/`${x}` are capture groups: `$$` writes a `$`.
  const labelled = (expr: string, name: string): string =>
    `label_replace(${expr}, ${quote(L.dep)}, ${quote(name.replace(/\$/g, () => '$$'))}, "", "")`;
  const budgetLines = input.dependencies
    .filter((d) => d.maxRatio > 0)
    .map((d) => ({
      expr: labelled(`vector(${num(d.maxRatio)})`, d.name),
      legendFormat: `budget {{${L.dep}}}`,
    }));
  const attempts = sumBy(byDep(), rate(N.attempts, [dep], W));
  const retries: RowSpec = {
    title: 'Retries and the retry budget (SPEC R1, R7, V3)',
    panels: [
      {
        title: 'Retry ratio (extra attempts / originals)',
        description: 'Moves about a minute before the error rate. Flat lines: each budget ratio.',
        unit: 'percentunit',
        targets: [
          { expr: selector(N.retryRatio, [dep]), legendFormat: `{{${L.dep}}} {{instance}}` },
          ...budgetLines,
        ],
      },
      {
        title: 'Attempts by kind',
        description: 'Original requests, retries and hedges per second.',
        unit: 'reqps',
        targets: [
          {
            expr: sumBy(byDep([L.kind]), rate(N.attempts, [dep], W)),
            legendFormat: `{{${L.dep}}} {{${L.kind}}}`,
          },
        ],
      },
      {
        title: 'Budget refusals by kind',
        description: 'Retries and hedges the budget said no to: failures beyond what the budget retries.',
        unit: 'reqps',
        targets: [
          {
            expr: sumBy(byDep([L.kind]), rate(N.budgetRefusals, [dep], W)),
            legendFormat: `{{${L.dep}}} {{${L.kind}}}`,
          },
        ],
      },
      {
        title: 'Deadline-insufficient fast failures',
        description: 'Calls never sent because the time left could not fit the p99 (SPEC D4).',
        unit: 'reqps',
        targets: [
          { expr: sumBy(byDep(), rate(N.deadlineInsufficient, [dep], W)), legendFormat: `{{${L.dep}}}` },
        ],
      },
    ],
  };
  const timeouts: RowSpec = {
    title: 'Timeouts (SPEC C5, D6, V1)',
    panels: [
      {
        title: 'Configured timeout vs live p99',
        description:
          "The timeout must stay above the p99 of a healthy dependency: each process's own, and the fleet's (every instance's histogram summed), which the timeout alert judges.",
        unit: 's',
        targets: [
          {
            expr: selector(N.timeoutConfigured, [dep]),
            legendFormat: `timeout {{${L.dep}}} {{${L.phase}}} {{instance}}`,
          },
          { expr: selector(N.latencyP99, [dep]), legendFormat: `p99 {{${L.dep}}} {{instance}}` },
          // The fleet's p99 (every instance's buckets), the number the timeout alert judges (SPEC X8).
          ...input.dependencies.map((d) => ({
            expr: labelled(fleetP99Seconds(d, W), d.name),
            legendFormat: `fleet p99 {{${L.dep}}}`,
          })),
        ],
      },
      {
        title: 'Timeouts by phase',
        description:
          'connect = instance down; response = slow server; body = stalled stream; deadline = caller out of time.',
        unit: 'reqps',
        targets: [
          {
            expr: sumBy(byDep([L.phase]), rate(N.timeouts, [dep], W)),
            legendFormat: `{{${L.dep}}} {{${L.phase}}}`,
          },
        ],
      },
      {
        title: 'Abandonment (response/body timeouts / attempts)',
        description: `Above ${num(RULE_DEFAULTS.abandonmentRatio * 100)}% on a healthy dependency: too tight; ~0 with a stable p99: idle margin.`,
        unit: 'percentunit',
        targets: [
          {
            expr: `${sumBy(byDep(), rate(N.timeouts, [dep, [L.phase, '=~', oneOf(CALIBRATED_PHASES)]], W))} / ${attempts}`,
            legendFormat: `{{${L.dep}}}`,
          },
        ],
      },
      {
        title: 'Attempt latency p99 by outcome',
        description: 'From the attempt-duration histogram.',
        unit: 's',
        targets: [
          {
            expr: `histogram_quantile(0.99, ${sumBy(['le', ...byDep([L.outcome])], rate(`${N.attemptDuration}_bucket`, [dep], W))})`,
            legendFormat: `{{${L.dep}}} {{${L.outcome}}}`,
          },
        ],
      },
    ],
  };
  const hedging: RowSpec = {
    title: 'Hedging and server-side waste (SPEC H1–H3, D7)',
    panels: [
      {
        title: 'Hedges sent and won',
        description: 'Hedges are paid from the retry budget; a hedge that rarely wins is load for nothing.',
        unit: 'reqps',
        targets: [
          {
            expr: sumBy(byDep(), rate(N.attempts, [dep, [L.kind, '=', 'hedge']], W)),
            legendFormat: `sent {{${L.dep}}}`,
          },
          { expr: sumBy(byDep(), rate(N.hedgesWon, [dep], W)), legendFormat: `won {{${L.dep}}}` },
        ],
      },
      {
        title: 'Wasted work and expired requests',
        description:
          'Responses finished after their deadline (nobody waited), and requests refused on arrival.',
        unit: 'reqps',
        targets: [
          { expr: sumBy([L.server], rate(N.wastedWork, [], W)), legendFormat: `wasted {{${L.server}}}` },
          {
            expr: sumBy([L.server], rate(N.rejectedExpired, [], W)),
            legendFormat: `rejected expired {{${L.server}}}`,
          },
          {
            expr: sumBy([L.server], rate(N.wastedWorkTime, [], W)),
            legendFormat: `busy seconds/s wasted {{${L.server}}}`,
          },
        ],
      },
    ],
  };
  const rows = [retries, timeouts, hedging, instanceRow(N)];
  if (input.dependencies.some((d) => d.throttle)) rows.splice(1, 0, throttleRow(N));
  if (input.endpoints.length > 0) {
    const endpoints: Matcher = [L.endpoint, '=~', oneOf(input.endpoints.map((e) => e.name))];
    const by = [L.endpoint, L.component];
    rows.push({
      title: 'Latency budgets (SPEC B1, B3)',
      panels: [
        {
          title: 'Slice overrun rate by component',
          description: `Share of runs over their slice; above ${num(RULE_DEFAULTS.sliceOverrunRatio * 100)}% the budget design no longer holds.`,
          unit: 'percentunit',
          targets: [
            {
              expr: `${sumBy(by, rate(N.sliceOverruns, [endpoints], W))} / ${sumBy(by, rate(N.sliceObservations, [endpoints], W))}`,
              legendFormat: `{{${L.endpoint}}} {{${L.component}}}`,
            },
          ],
        },
      ],
    });
  }
  return rows;
}
