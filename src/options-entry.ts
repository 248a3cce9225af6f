/**
 * `prazo/options`: the declaration of every option of the core (SPEC C1–C7, D1–D8, R1–R6, H1–H3),
 * as data. Each `*_OPTIONS` is the one place an option is declared — its key, type, unit, default
 * and range — and what the library validates with, the config file reads, and the option types are
 * derived from (`DependencyOptions` is `OptionsOf<typeof DEPENDENCY_OPTIONS>`). Read the defaults
 * (`DEPENDENCY_OPTIONS.defaults.attempts`), the bounds (`DEPENDENCY_OPTIONS.specs.p99Ms.max`), or
 * list the keys (`DEPENDENCY_OPTIONS.keys`) from here. The integrations export their own
 * (`SERVER_DEADLINE_OPTIONS` from `prazo/server`, ...).
 *
 * This file is an entry, not a layer: it gathers the declarations from every floor of the library,
 * so it sits beside `index.ts`, above them all, while `options/` stays the ground-floor kernel
 * (`declare.ts`, `validator.ts`, `suggest.ts`) that every component imports and that imports nothing
 * above `clock/` and `errors/`. Inside `options/` it would be a kernel file reaching up to the
 * executor, the exception `test/architecture.test.ts` would have to allow.
 *
 * @module prazo/options
 */

export {
  DISCOVERY_OPTIONS,
  EJECTION_OPTIONS,
  INSTANCES_OPTIONS,
  LATENCY_EJECTION_OPTIONS,
  PEAK_EWMA_OPTIONS,
} from './balance/options.js';
export { RETRY_BUDGET_OPTIONS } from './budget/options.js';
export {
  CALIBRATE_FROM_DISTRIBUTION_OPTIONS,
  CALIBRATE_TIMEOUT_OPTIONS,
  CHECK_DRIFT_OPTIONS,
  DRIFT_MONITOR_OPTIONS,
  DRIFT_THRESHOLD_OPTIONS,
  HEALTH_THRESHOLD_OPTIONS,
  HEALTHY_WINDOW_TRACKER_OPTIONS,
  POOL_CHECK_OPTIONS,
} from './calibrate/options.js';
export { CSV_OPTIONS } from './calibrate/sources/csv.js';
export { PROMETHEUS_OPTIONS } from './calibrate/sources/prometheus.js';
export { SOURCE_OPTIONS } from './calibrate/sources/types.js';
export { CALL_WITH_DEADLINE_OPTIONS } from './deadline/call.js';
export { DEADLINE_OPTIONS, HEADER_FORMAT_OPTIONS } from './deadline/deadline.js';
export { INCOMING_DEADLINE_OPTIONS } from './deadline/headers.js';
export { DEPENDENCY_OPTIONS, DEPENDENCY_UPDATE_OPTIONS, EXECUTE_OPTIONS } from './dependency/options.js';
export { HEDGE_OPTIONS } from './hedge/options.js';
export { RECORDER_OPTIONS } from './latency/options.js';
export { ADAPTIVE_LIMIT_OPTIONS, CONCURRENCY_LIMIT_OPTIONS } from './limit/options.js';
export type {
  AnySpec,
  Check,
  CheckContext,
  Defaults,
  IsRequired,
  NumberRules,
  OptionKind,
  OptionPath,
  OptionSpec,
  OptionsOf,
  OptionsSchema,
  Report,
  Resolved,
  ResolvedValue,
  Specs,
  ValueOf,
  ValueTest,
  Widen,
} from './options/declare.js';
export { BACKOFF_OPTIONS } from './retry/backoff.js';
export { BUDGET_OPTION, OVERRUN_TRACKER_OPTIONS } from './slo/overrun.js';
export { SLICE_RUNNER_OPTIONS } from './slo/slice.js';
