import { isRetryBudget, type RetryBudgetOptions } from '../budget/budget.js';
import type { PrometheusSeries } from '../calibrate/options.js';
import type { PrazoConfig } from '../config/load.js';
import type { RulesDependency, RulesInput } from './input.js';

/** `histogram.prometheus` without the calibration-only `baselineP99Ms`. */
const seriesOf = ({ baselineP99Ms: _, ...series }: PrometheusSeries & { baselineP99Ms?: number }) => series;

/**
 * `prazo.config.yaml`, as loaded by `loadConfig`/`checkConfigFile`, to what the generators read: per
 * dependency its budget ratio, floor, attempts, whether it hedges and whether its throttle is on; per endpoint its components.
 * A dependency given a shared budget *object* (in code, not in the file) keeps the budget defaults.
 */
export function rulesInputFromConfig(config: Pick<PrazoConfig, 'dependencies' | 'endpoints'>): RulesInput {
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
