/**
 * `prazo/config`: the one reviewable configuration file (SPEC C7, B1, B2), `prazo.config.yaml`: its
 * dependencies, endpoints (latency budgets) and incoming-deadline settings, loaded and validated once
 * with every problem reported together. The only entry point that loads the YAML parser.
 *
 * @module prazo/config
 */
export type { EndpointConfig } from './body.js';
export { DEFAULT_CONFIG_FILE } from './constants.js';
export type { DependencyConfig } from './dependency.js';
export type { HistogramRef, ReadText } from './histogram.js';
export {
  type CheckOptions,
  type ConfigCheck,
  checkConfigFile,
  checkConfigText,
  loadConfig,
  type PrazoConfig,
} from './load.js';
export { type ConfigProblem, formatProblem } from './problem.js';
export type { ServiceConfig } from './sections.js';
export type { DependencySettings } from './settings.js';
