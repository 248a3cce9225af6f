/**
 * `prazo/rules`: Prometheus alert rules and a Grafana dashboard generated from the configuration
 * (SPEC R7, V1, V3, B3, C5, X3), as `prazo rules` writes them. Pure data in, pure data out: no
 * OpenTelemetry import (metric names come from `otel/constants.ts`, which imports nothing), so a
 * pipeline that only generates alerts needs no OpenTelemetry package.
 *
 * @module prazo/rules
 */
export { generateAlertRules, renderAlertRules } from './alerts.js';
export { type GrafanaDashboard, generateDashboard } from './dashboard.js';
export { rulesInputFromConfig } from './from-config.js';
export {
  RULES_DEPENDENCY,
  RULES_ENDPOINT,
  RULES_INPUT,
  RULES_OPTIONS,
  type RulesDependency,
  type RulesEndpoint,
  type RulesInput,
  type RulesOptions,
} from './input.js';
export type { NamingScheme } from './names.js';
export type { AlertRule, RuleFile, RuleGroup } from './types.js';
