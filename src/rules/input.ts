import { OptionsValidator } from '../options/validator.js';
import { DEPENDENCY_DEFAULTS } from './constants.js';
import { NAMING_SCHEMES, type NamingScheme } from './names.js';

/**
 * What the generators need from `prazo.config.yaml`: the dependencies with their retry budget, and
 * the endpoints with their budget components. Kept apart from the config loader's own types so the
 * generators can be fed by anything (a test, another config format).
 */

export interface RulesDependency {
  readonly name: string;
  /** The retry budget's ratio: extra attempts allowed per original request. Default 0.1; [0, 10]. */
  readonly maxRatio?: number;
  /** The budget's floor, extra attempts per second. Default 3; >= 0. */
  readonly minPerSecond?: number;
  /** Whether the dependency hedges (hedges spend the same budget, SPEC H3). Default false. */
  readonly hedging?: boolean;
  /**
   * Attempts per call, the original included. Default 2. With 1 and no hedging nothing ever draws on
   * the budget, so its rules (ratio, refusals) are left out rather than watching a constant 0.
   */
  readonly attempts?: number;
}

export interface RulesEndpoint {
  readonly name: string;
  /** Names of the components (slices) of the endpoint's latency budget (SPEC B1). */
  readonly components: readonly string[];
}

export interface RulesInput {
  readonly dependencies: readonly RulesDependency[];
  readonly endpoints?: readonly RulesEndpoint[];
}

export interface RulesOptions {
  /** How metric names look in the user's Prometheus (see `names.ts`). Default `exporter`. */
  readonly naming?: NamingScheme;
}

export interface ResolvedDependency {
  readonly name: string;
  readonly maxRatio: number;
  readonly minPerSecond: number;
  readonly hedging: boolean;
  readonly attempts: number;
}

export interface ResolvedInput {
  readonly dependencies: readonly ResolvedDependency[];
  readonly endpoints: readonly RulesEndpoint[];
  readonly naming: NamingScheme;
}

const name = (v: OptionsValidator, where: string, value: unknown): string =>
  v.string(`${where}.name`, value ?? '', '?');

function unique(v: OptionsValidator, what: string, names: readonly string[]): void {
  const seen = new Set<string>();
  for (const n of names) {
    if (seen.has(n)) v.problem(`${what} ${JSON.stringify(n)} appears twice`);
    seen.add(n);
  }
}

/** Checks the generators' input once; every problem is reported together (INVALID_OPTIONS). */
export function resolveInput(input: RulesInput, options: RulesOptions, context: string): ResolvedInput {
  const v = new OptionsValidator(context);
  const given = (input ?? {}) as Partial<RulesInput>;
  const deps = Array.isArray(given.dependencies) ? given.dependencies : [];
  if (!Array.isArray(given.dependencies)) v.problem('`dependencies` must be an array');
  const dependencies = deps.map((d, i): ResolvedDependency => {
    const at = `dependencies[${i}]`;
    const dep = (d ?? {}) as Partial<RulesDependency>;
    return {
      name: name(v, at, dep.name),
      maxRatio: v.number(`${at}.maxRatio`, dep.maxRatio, {
        default: DEPENDENCY_DEFAULTS.maxRatio,
        min: 0,
        max: 10,
      }),
      minPerSecond: v.number(`${at}.minPerSecond`, dep.minPerSecond, {
        default: DEPENDENCY_DEFAULTS.minPerSecond,
        min: 0,
      }),
      hedging: v.boolean(`${at}.hedging`, dep.hedging, false),
      attempts: v.number(`${at}.attempts`, dep.attempts, { default: 2, min: 1, max: 10, integer: true }),
    };
  });
  unique(
    v,
    'dependency',
    dependencies.map((d) => d.name),
  );
  const eps = given.endpoints === undefined ? [] : Array.isArray(given.endpoints) ? given.endpoints : [];
  if (given.endpoints !== undefined && !Array.isArray(given.endpoints))
    v.problem('`endpoints` must be an array');
  const endpoints = eps.map((e, i): RulesEndpoint => {
    const at = `endpoints[${i}]`;
    const ep = (e ?? {}) as Partial<RulesEndpoint>;
    const components = Array.isArray(ep.components) ? ep.components : [];
    if (!Array.isArray(ep.components) || components.length === 0)
      v.problem(`\`${at}.components\` must list at least one component`);
    return {
      name: name(v, at, ep.name),
      components: components.map((c, j) => v.string(`${at}.components[${j}]`, c, '?')),
    };
  });
  unique(
    v,
    'endpoint',
    endpoints.map((e) => e.name),
  );
  const naming = v.oneOf('naming', options?.naming, NAMING_SCHEMES, 'exporter');
  v.done();
  return { dependencies, endpoints, naming };
}
