/**
 * Alert rules and a dashboard generated from the configuration (SPEC R7, V1, V3, B3, C5, X3), read by
 * `prazo rules`. Pure data in, pure data out: no OpenTelemetry import (names come from
 * `otel/constants.ts`, which imports nothing).
 */
export { generateAlertRules, renderAlertRules } from './alerts.js';
export { ALERTS, RULE_DEFAULTS } from './constants.js';
export { type GrafanaDashboard, generateDashboard } from './dashboard.js';
export type { RulesDependency, RulesEndpoint, RulesInput, RulesOptions } from './input.js';
export {
  exportedSeriesNames,
  familyNames,
  labelName,
  NAMING_SCHEMES,
  type NamingScheme,
  prometheusName,
} from './names.js';
export type { AlertRule, RuleFile, RuleGroup } from './types.js';
