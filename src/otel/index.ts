/**
 * `prazo/otel`: prazo's metrics through the OpenTelemetry API (SPEC R7, V1, V3, B3, C5, D6, H3, X3).
 * `@opentelemetry/api` is an optional peer, imported only under this entry point: the rest of prazo
 * never loads it. See docs/observability.md.
 */

export { rulesInputFromConfig } from '../rules/from-config.js';
// The rule and dashboard generators behind `prazo rules`, for programmatic use.
export {
  type AlertRule,
  type GrafanaDashboard,
  generateAlertRules,
  generateDashboard,
  type NamingScheme,
  type RuleFile,
  type RulesInput,
  type RulesOptions,
  renderAlertRules,
} from '../rules/index.js';
export {
  ATTEMPT_KINDS,
  ATTR,
  CALIBRATED_PHASES,
  DURATION_BUCKETS_S,
  EXTRA_KINDS,
  type InstrumentKind,
  METER_NAME,
  METRICS,
  type MetricKey,
  type MetricSpec,
  OUTCOMES,
  TIMEOUT_PHASES,
} from './constants.js';
export { type InstrumentableDependency, recordDependencyEvents } from './dependency.js';
export { type InstrumentPrazoOptions, instrumentPrazo, type PrazoInstrumentation } from './instrument.js';
export { createInstruments, type PrazoInstruments } from './instruments.js';
export {
  type InstrumentableServer,
  recordServerEvents,
  type ServerEventLike,
  type ServerEventSource,
} from './server.js';
export type { OverrunObserver } from './slices.js';
