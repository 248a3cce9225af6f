/**
 * `prazo/calibrate`: where the numbers come from (SPEC C1, C4-C6, B1-B3). Latency sources (Prometheus
 * histograms, CSV, sample lists) read into a distribution and calibrated; the healthy-window check that
 * refuses a degraded window; the drift check and monitor that alarm when a timeout falls below the
 * measured p99; the pool check against Little's law; the starting p99 per kind of call before anything
 * is measured (SPEC C8), and the range a measured one must fall in; and latency budgets per endpoint,
 * from which the timeouts of its components derive. `calibrateTimeout` itself is in the root entry.
 *
 * @module prazo/calibrate
 */

export {
  type ComponentTimeouts,
  type DependencyProfile,
  type DerivedTimeouts,
  deriveTimeouts,
} from '../slo/derive.js';
export {
  type ComponentOverrun,
  createOverrunTracker,
  type OverrunTracker,
  type OverrunTrackerOptions,
} from '../slo/overrun.js';
export { type ParsedBudget, parseBudget } from '../slo/parse.js';
export { createSliceRunner, type SliceRunner, type SliceRunnerOptions } from '../slo/slice.js';
export type { BudgetComponent, BudgetProblem, ComponentKind, LatencyBudget, Severity } from '../slo/types.js';
export { validateBudget } from '../slo/validate.js';
export {
  checkDrift,
  type DriftInput,
  type DriftResult,
  type DriftStatus,
  type DriftThresholds,
} from './drift.js';
export { createDriftMonitor, type DriftMonitor, type DriftMonitorOptions } from './drift-monitor.js';
export {
  type CalibrateFromDistributionOptions,
  calibrateFromDistribution,
  type DistributionCalibration,
} from './from-distribution.js';
export {
  assessWindow,
  type HealthThresholds,
  type ResolvedHealthThresholds,
  resolveHealthThresholds,
  type WindowHealth,
  type WindowStats,
  type WindowVerdict,
} from './health.js';
export {
  createHealthyWindowTracker,
  type HealthyWindowTracker,
  type HealthyWindowTrackerOptions,
} from './health-tracker.js';
export {
  DEPENDENCY_KINDS,
  type DeclaredIn,
  type DependencyKind,
  implausibleP99,
  KIND_PROFILES,
  type KindProfile,
  startingP99Ms,
} from './kinds.js';
export type { PrometheusSeries } from './options.js';
export {
  type ConcurrencySuggestion,
  checkPool,
  LITTLE_HEADROOM,
  type PoolCheckInput,
  type PoolCheckResult,
  suggestConcurrencyLimit,
} from './pool.js';
export { type CsvOptions, parseCsv } from './sources/csv.js';
export { type ReadSourceOptions, readLatencySource } from './sources/detect.js';
export { type PrometheusOptions, parsePrometheus } from './sources/prometheus.js';
export { parseSampleList } from './sources/samples.js';
export {
  type LatencyDistribution,
  type LatencyUnit,
  SourceError,
  type SourceFormat,
} from './sources/types.js';
