/**
 * `prazo/config`: the one reviewable configuration file (SPEC C7, B1, B2), `prazo.config.yaml`: its
 * dependencies, endpoints (latency budgets) and incoming-deadline settings, loaded and validated once
 * with every problem reported together, and watched live (`watchConfig`: a new version applied in
 * place to the dependencies bound to it, SPEC X9). The only entry point that loads the YAML parser.
 *
 * @module prazo/config
 */

export type { ConfigVersion } from '../dependency/types.js';
export type { EndpointConfig, MeshDefaults, ServiceConfig } from './body.js';
export { DEFAULT_CONFIG_FILE } from './constants.js';
export type {
  AssumedP99,
  ConcurrencyCheck,
  DependencyConfig,
  HistogramRef,
  MeshPlacement,
  ReadText,
  StoreConfig,
} from './dependency.js';
export {
  type CheckOptions,
  type ConfigCheck,
  checkConfigFile,
  checkConfigText,
  loadConfig,
  type PrazoConfig,
} from './load.js';
export { type ConfigProblem, formatProblem } from './problem.js';
/** The declarations of the `mesh:` keys (`prazo export`): their defaults and bounds. */
export { MESH_DEFAULTS_IN_FILE, MESH_IN_FILE } from './schema.js';
export {
  type CheckOutcome,
  type ConfigChange,
  ConfigRejectedError,
  type ConfigWatcher,
  type RejectionReason,
  WATCH_CONFIG_OPTIONS,
  type WatchConfigOptions,
  watchConfig,
} from './watch.js';
export type { ConfigTarget, DependencyChange } from './watch-bind.js';
