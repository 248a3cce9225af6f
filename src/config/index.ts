export type { EndpointConfig } from './body.js';
export { CONFIG_LIMITS, DEFAULT_CONFIG_FILE } from './constants.js';
export type { DependencyConfig } from './dependency.js';
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
