/**
 * prazo: timeouts, deadlines, retry budgets and hedged requests derived from measurement.
 * The root entry point holds the core, dependency-free parts; integrations live in subpaths
 * (`prazo/testing`, and later `prazo/http`, `prazo/server`, `prazo/grpc`, `prazo/pg`, `prazo/otel`).
 */

export * from './budget/index.js';
export * from './calibrate/index.js';
export {
  type Clock,
  clampDelay,
  MAX_TIMER_DELAY_MS,
  sleep,
  systemClock,
  type Timer,
  type TimerOptions,
} from './clock/index.js';
export * from './config/index.js';
export * from './deadline/index.js';
export * from './dependency/index.js';
export * from './errors/index.js';
export * from './hedge/index.js';
export * from './latency/index.js';
export { OptionsValidator } from './options/validator.js';
export * from './retry/index.js';
export * from './slo/index.js';
