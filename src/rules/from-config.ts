import { isRetryBudget, type RetryBudgetOptions } from '../budget/budget.js';
import type { PrometheusSeries } from '../calibrate/options.js';
import type { PrazoConfig } from '../config/load.js';
import { InvalidOptionsError } from '../errors/options.js';
import type { RulesDependency, RulesInput } from './input.js';

/** `histogram.prometheus` without the calibration-only `baselineP99Ms`. */
const seriesOf = ({ baselineP99Ms: _, ...series }: PrometheusSeries & { baselineP99Ms?: number }) => series;

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null;

/**
 * Refuses what is not a loaded config (INVALID_OPTIONS) rather than failing inside as a TypeError:
 * the two Maps `loadConfig`/`checkConfigText` return, each entry with the part read below.
 */
function checkConfig(config: unknown): void {
  const problems: string[] = [];
  const c = isObject(config) ? config : {};
  const entries = (key: 'dependencies' | 'endpoints', part: string, ok: (v: unknown) => boolean) => {
    const map = c[key];
    if (!(map instanceof Map)) {
      problems.push(`\`${key}\` must be the Map of a loaded config (loadConfig, checkConfigText)`);
      return;
    }
    for (const [name, value] of map)
      if (!ok(value)) problems.push(`\`${key}\` entry ${JSON.stringify(String(name))} has no ${part}`);
  };
  entries('dependencies', '`options`', (v) => isObject(v) && isObject(v.options));
  entries(
    'endpoints',
    '`budget` with components',
    (v) =>
      isObject(v) &&
      isObject(v.budget) &&
      Array.isArray(v.budget.components) &&
      v.budget.components.every(isObject),
  );
  if (problems.length > 0) throw new InvalidOptionsError('rulesInputFromConfig', problems);
}

/**
 * `prazo.config.yaml`, as loaded by `loadConfig`/`checkConfigFile`, to what the generators read: per
 * dependency its budget ratio, floor, attempts, whether it hedges and whether its throttle is on; per endpoint its components.
 * A dependency given a shared budget *object* (in code, not in the file) keeps the budget defaults.
 */
export function rulesInputFromConfig(config: Pick<PrazoConfig, 'dependencies' | 'endpoints'>): RulesInput {
  checkConfig(config);
  const dependencies = [...config.dependencies.values()].map(
    ({ options, prometheus, assumed }): RulesDependency => {
      const budget = isRetryBudget(options.retryBudget)
        ? undefined
        : (options.retryBudget as RetryBudgetOptions | undefined);
      return {
        name: options.name,
        maxRatio: budget?.maxRatio,
        minPerSecond: budget?.minPerSecond,
        hedging: options.hedge !== undefined && options.hedge !== false,
        attempts: options.attempts,
        throttle: options.throttle !== false,
        ...(prometheus === undefined ? {} : { prometheus: seriesOf(prometheus) }),
        ...(assumed === undefined ? {} : { assumedP99Ms: assumed.p99Ms }),
      };
    },
  );
  const endpoints = [...config.endpoints.values()].map(({ budget }) => ({
    name: budget.endpoint,
    components: budget.components.map((c) => c.name),
  }));
  return { dependencies, endpoints };
}
