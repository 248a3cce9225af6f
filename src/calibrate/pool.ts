import { readOptions } from '../options/validator.js';
import { POOL_CHECK_OPTIONS, type PoolCheckInput } from './options.js';

export type { PoolCheckInput } from './options.js';

/**
 * Pool check by Little's law (SPEC C6). A timeout does not protect the request, it protects the
 * shared resource the request holds while it waits. With arrival rate λ (req/s) and a pool of N
 * connections, in-flight calls are λ × W, so the longest latency the pool tolerates is W = N / λ
 * (the seed: 100 req/s over 50 connections → 500 ms). A timeout above it lets a slow dependency fill
 * the pool, and then the service refuses traffic that has nothing to do with that dependency.
 */

export interface PoolCheckResult {
  /** N / λ, in ms: the longest latency the pool tolerates without running dry. */
  readonly maxLatencyMs: number;
  readonly ok: boolean;
  /** Null when the timeout fits; otherwise names the timeout, N, λ and the limit. */
  readonly warning: string | null;
}

export function checkPool(input: PoolCheckInput): PoolCheckResult {
  const { poolSize, rps, timeoutMs } = readOptions('checkPool', POOL_CHECK_OPTIONS, input);
  // A rate near 0 (5e-324 req/s passes `rps > 0`) tolerates any latency: the largest number says so,
  // where N / λ overflowed to Infinity, which JSON writes as null.
  const maxLatencyMs = Math.min(Number.MAX_VALUE, (poolSize / rps) * 1000);
  if (timeoutMs <= maxLatencyMs) return Object.freeze({ maxLatencyMs, ok: true, warning: null });
  const warning =
    `timeout of ${timeoutMs} ms exceeds the ${round(maxLatencyMs)} ms a pool of ${poolSize} tolerates ` +
    `at ${rps} req/s (Little's law: N / λ): a slow dependency would exhaust the pool`;
  return Object.freeze({ maxLatencyMs, ok: false, warning });
}

const round = (ms: number): number => (Math.abs(ms) < 1e300 ? Math.round(ms * 10) / 10 : ms);

/**
 * Room a fixed concurrency limit keeps above the in-flight count at p99 (SPEC C6, X7): bursts, and
 * the retries and hedges that count as attempts in flight too. 1.25: a 25% burst over the expected
 * rate, with every call at the p99, is still admitted.
 */
export const LITTLE_HEADROOM = 1.25;

/** The largest `concurrencyLimit.maxInFlight` accepted; a suggestion is never above it. */
const MAX_SUGGESTED = 100_000;

/** What Little's law says a fixed concurrency limit should be. */
export interface ConcurrencySuggestion {
  /** The expected rate, req/s. */
  readonly rps: number;
  /** The p99 in ms. */
  readonly p99Ms: number;
  /** rate × p99 (s): the calls in flight when every call takes the p99. */
  readonly inFlightAtP99: number;
  /** ceil(rate × p99 × LITTLE_HEADROOM), in [1, 100000]. */
  readonly suggested: number;
}

/**
 * A fixed concurrency limit from Little's law (SPEC C6, X7): N = ceil(λ × W × headroom), with W the
 * p99 (`prazo check` shows it for each dependency whose rate it knows). Undefined when the rate or the
 * p99 is not a finite positive number: without a rate there is nothing to suggest. Monotone in both,
 * an integer in [1, 100000] (the limit's own range), never NaN or ∞.
 */
export function suggestConcurrencyLimit(rps: number, p99Ms: number): ConcurrencySuggestion | undefined {
  if (!(Number.isFinite(rps) && rps > 0 && Number.isFinite(p99Ms) && p99Ms > 0)) return undefined;
  const inFlightAtP99 = Math.min(Number.MAX_VALUE, (rps * p99Ms) / 1000);
  const suggested = Math.min(MAX_SUGGESTED, Math.max(1, Math.ceil(inFlightAtP99 * LITTLE_HEADROOM)));
  return Object.freeze({ rps, p99Ms, inFlightAtP99, suggested });
}
