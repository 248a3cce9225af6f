/**
 * prazo: timeouts, deadlines, retry budgets and hedged requests derived from measurement.
 *
 * The root entry holds what most services use, and nothing that loads an optional peer or a parser:
 * deadlines (absolute, ambient, read from headers), a call bounded by one, a dependency's executor
 * with its retry budget and latency recorder, the timeout calibration, the errors and their guards,
 * and the `Clock` everything takes. The rest lives in subpaths: `prazo/calibrate` (latency sources,
 * drift, healthy windows, pool check, latency budgets), `prazo/config` (the configuration file),
 * `prazo/retry` (failure classification, Retry-After, idempotency, hedging), `prazo/rules` (alert
 * rules and dashboards), `prazo/http`, `prazo/server`, `prazo/fastify`, `prazo/grpc`, `prazo/pg`,
 * `prazo/mysql`, `prazo/redis`, `prazo/otel` and `prazo/testing`. `api/*.api.md` lists each entry's names.
 *
 * @module prazo
 */

export {
  createRetryBudget,
  type RetryBudget,
  type RetryBudgetOptions,
  type RetryBudgetState,
} from './budget/budget.js';
export {
  type CalibrateTimeoutInput,
  calibrateTimeout,
  type TimeoutCalibration,
} from './calibrate/timeout.js';
export type { Clock } from './clock/clock.js';
export { currentDeadline, runWithDeadline } from './deadline/ambient.js';
export { type CallWithDeadlineOptions, callWithDeadline, type DeadlineCallContext } from './deadline/call.js';
export { Deadline, type DeadlineOptions, type HeaderFormat } from './deadline/deadline.js';
export { deadlineFromHeaders, type HeadersLike, type IncomingDeadlineOptions } from './deadline/headers.js';
export * from './dependency/index.js';
export * from './errors/index.js';
export {
  createLatencyRecorder,
  type LatencyRecorder,
  type LatencyRecorderOptions,
} from './latency/recorder.js';
export type { LatencySnapshot, LatencySource, Outcome } from './latency/types.js';
