import { systemClock } from '../clock/system.js';
import type { DependencyCore } from './core.js';
import { Listeners } from './events.js';

const NO_BUDGET_STATE = Object.freeze({ originals: 0, extras: 0, ratio: 0 });
const NO_WINDOW = Object.freeze({
  count: 0,
  successes: 0,
  errors: 0,
  timeouts: 0,
  p50: undefined,
  p95: undefined,
  p99: undefined,
  p999: undefined,
  max: undefined,
  startedAt: 0,
  endedAt: 0,
});

/**
 * The plan of a call to something nobody configured (an origin an interceptor passes through),
 * declared once: one attempt (no retry, no hedge, no budget spent), bounded by the deadline alone
 * (every timeout infinite, no D4 floor but the 1 ms every attempt needs), nothing recorded, no
 * throttle or limit, every answer the server's (no classifier, no pushback). `unmanagedPlan` names
 * it and gives it the caller's clock.
 */
export const UNMANAGED: DependencyCore = Object.freeze({
  name: 'unmanaged',
  p99Ms: 0,
  maxAttempts: 1,
  attemptTimeoutMs: Number.POSITIVE_INFINITY,
  connectTimeoutMs: Number.POSITIVE_INFINITY,
  defaultDeadlineMs: Number.POSITIVE_INFINITY,
  clock: systemClock,
  random: Math.random,
  backoff: Object.freeze({ baseMs: 0, capMs: 0 }),
  budget: Object.freeze({ recordOriginal: () => {}, tryConsume: () => false, state: () => NO_BUDGET_STATE }),
  recorder: Object.freeze({
    record: () => {},
    quantile: () => undefined,
    lastWindow: () => undefined,
    currentWindow: () => NO_WINDOW,
  }),
  hedge: undefined,
  limiter: undefined,
  patience: false,
  throttle: undefined,
  retryResponseTimeout: false,
  pushback: false,
  classifyError: () => ({ retryable: false, immediate: false, kind: 'unknown' }) as const,
  headerFormat: undefined,
  events: new Listeners(),
  attemptTimers: undefined,
}) as DependencyCore;
