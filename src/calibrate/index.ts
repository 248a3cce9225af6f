export { CALIBRATION_DEFAULTS, CALIBRATION_LIMITS, DRIFT_DEFAULTS, HEALTH_DEFAULTS } from './constants.js';
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
export { checkPool, type PoolCheckInput, type PoolCheckResult } from './pool.js';
export {
  type LatencyDistribution,
  type LatencyUnit,
  parseCsv,
  parsePrometheus,
  parseSampleList,
  type ReadSourceOptions,
  readLatencySource,
  SourceError,
  type SourceFormat,
} from './sources/index.js';
export {
  type CalibrateTimeoutInput,
  calibrateTimeout,
  slackedTimeoutMs,
  type TimeoutCalibration,
} from './timeout.js';
