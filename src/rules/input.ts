import { RETRY_BUDGET_OPTIONS } from '../budget/options.js';
import type { FleetSeries } from '../calibrate/fleet.js';
import { CALIBRATE_TIMEOUT_OPTIONS, PROMETHEUS_SERIES_OPTIONS } from '../calibrate/options.js';
import { defineOptions, type OptionsOf, option } from '../options/declare.js';
import { OptionsValidator } from '../options/validator.js';
import { latencySeries, NAMING_SCHEMES, type NamingScheme, PRINTABLE_NAME } from './names.js';

/**
 * What the generators need from `prazo.config.yaml`: the dependencies with their retry budget, and
 * the endpoints with their budget components. Kept apart from the config loader's own types so the
 * generators can be fed by anything (a test, another config format).
 */

const names = option.matching<readonly string[]>(
  `a non-empty list of component names, each ${PRINTABLE_NAME.describe}`,
  (v) => Array.isArray(v) && v.length > 0 && v.every(PRINTABLE_NAME.test),
);

/** One dependency the rules watch: its retry budget (the budget's own declarations), attempts, hedging. */
export const RULES_DEPENDENCY = defineOptions({
  /** The dependency's name, as in its metrics. Required; printable, 1 to 200 characters. */
  name: option.string({ required: true, pattern: PRINTABLE_NAME }),
  /** The retry budget's ratio: extra attempts allowed per original request. Default 0.1; [0, 10]. */
  maxRatio: RETRY_BUDGET_OPTIONS.specs.maxRatio,
  /** The budget's floor, extra attempts per second. Default 3; [0, 1000000]. */
  minPerSecond: RETRY_BUDGET_OPTIONS.specs.minPerSecond,
  /** Whether the dependency hedges (hedges spend the same budget, SPEC H3). Default false. */
  hedging: option.boolean({ default: false }),
  /**
   * Attempts per call, the original included. Default 2; integer [1, 10]. With 1 and no hedging
   * nothing ever draws on the budget, so its rules (ratio, refusals) are left out rather than watching
   * a constant 0.
   */
  attempts: CALIBRATE_TIMEOUT_OPTIONS.specs.attempts,
  /**
   * Whether the dependency's adaptive throttle is on (the executor's `throttle`, on unless `false`;
   * docs/throttling.md). Default true. Off, its refusal alert is left out: it would watch a constant 0.
   */
  throttle: option.boolean({ default: true }),
  /**
   * Where the dependency's latency histogram is in the fleet's Prometheus: the config's
   * `histogram.prometheus` (metric, selector, outcome label, unit), the one `prazo calibrate
   * --prometheus` reads. The timeout alert compares the configured timeout with that histogram's fleet
   * p99. Default: prazo/otel's own attempt-duration histogram of the dependency.
   */
  prometheus: option.nested(PROMETHEUS_SERIES_OPTIONS),
  /**
   * The p99 its timeouts derive from when it was never measured, in ms: the starting value of its
   * `kind` (SPEC C8). Given, an alert fires while it serves traffic on that assumption. Default: none
   * (measured); (0, 86400000].
   */
  assumedP99Ms: option.number({ unit: 'ms', min: 0, exclusiveMin: true, max: 86_400_000 }),
});

export type RulesDependency = OptionsOf<typeof RULES_DEPENDENCY>;

/** One endpoint and the components (slices) of its latency budget (SPEC B1). */
export const RULES_ENDPOINT = defineOptions({
  /** The endpoint, e.g. `POST /pedidos`. Required; printable, 1 to 200 characters. */
  name: option.string({ required: true, pattern: PRINTABLE_NAME }),
  /** Names of the components (slices) of the endpoint's latency budget. Required, non-empty. */
  components: option.required(names),
});

export type RulesEndpoint = OptionsOf<typeof RULES_ENDPOINT>;

const list = option.matching<readonly object[]>('an array', Array.isArray);

/** What the generators read: the dependencies and endpoints (`rulesInputFromConfig` makes it from a config). */
export const RULES_INPUT = defineOptions({
  /** The dependencies. Required. */
  dependencies: option.required(list),
  /** The endpoints. Default none. */
  endpoints: list,
});

export interface RulesInput {
  readonly dependencies: readonly RulesDependency[];
  readonly endpoints?: readonly RulesEndpoint[];
}

/** Options of the generators. */
export const RULES_OPTIONS = defineOptions({
  /** How metric names look in the user's Prometheus (see `names.ts`). Default `exporter`. */
  naming: option.oneOf(NAMING_SCHEMES, { default: 'exporter' }),
});

export type RulesOptions = OptionsOf<typeof RULES_OPTIONS>;

export interface ResolvedDependency {
  readonly name: string;
  readonly maxRatio: number;
  readonly minPerSecond: number;
  readonly hedging: boolean;
  readonly attempts: number;
  /** Whether its adaptive throttle is on (then it has a refusal alert). */
  readonly throttle: boolean;
  /** The latency histogram's series in the fleet's Prometheus, resolved under the naming scheme. */
  readonly series: FleetSeries;
  /** Set when its p99 is assumed (a `kind`'s starting value, SPEC C8), in ms. */
  readonly assumedP99Ms?: number | undefined;
}

export interface ResolvedInput {
  readonly dependencies: readonly ResolvedDependency[];
  readonly endpoints: readonly RulesEndpoint[];
  readonly naming: NamingScheme;
}

function unique(v: OptionsValidator, what: string, names: readonly (string | undefined)[]): void {
  const seen = new Set<string>();
  for (const n of names) {
    if (n === undefined) continue; // a missing or invalid name, already reported
    if (seen.has(n)) v.problem(`${what} ${JSON.stringify(n)} appears twice`);
    seen.add(n);
  }
}

/** Checks the generators' input once; every problem is reported together (INVALID_OPTIONS). */
export function resolveInput(input: RulesInput, options: RulesOptions, context: string): ResolvedInput {
  const v = new OptionsValidator(context);
  const top = v.read(RULES_INPUT, input);
  const { naming } = v.read(RULES_OPTIONS, options);
  const dependencies = (top.dependencies ?? []).map((d, i): ResolvedDependency => {
    const read = v.read(RULES_DEPENDENCY, d, ['dependencies', i]);
    let series: FleetSeries;
    try {
      series = latencySeries(read.name ?? '', read.prometheus, naming ?? 'exporter');
    } catch {
      // already reported by the read above (a selector that is not label matchers)
      series = latencySeries(read.name ?? '', undefined, naming ?? 'exporter');
    }
    return { ...read, series };
  });
  unique(
    v,
    'dependency',
    dependencies.map((d) => d.name),
  );
  const endpoints = (top.endpoints ?? []).map(
    (e, i): RulesEndpoint => v.read(RULES_ENDPOINT, e, ['endpoints', i]),
  );
  unique(
    v,
    'endpoint',
    endpoints.map((e) => e.name),
  );
  // A budget's slices are distinct components (parseBudget refuses a repeated one too).
  endpoints.forEach((e, i) => {
    const endpoint = e.name === undefined ? `endpoints[${i}]` : `endpoint ${JSON.stringify(e.name)}`;
    unique(v, `${endpoint}'s component`, e.components ?? []);
  });
  v.done();
  return { dependencies, endpoints, naming };
}
