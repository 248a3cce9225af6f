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
  const maxLatencyMs = (poolSize / rps) * 1000;
  if (timeoutMs <= maxLatencyMs) return Object.freeze({ maxLatencyMs, ok: true, warning: null });
  const warning =
    `timeout of ${timeoutMs} ms exceeds the ${round(maxLatencyMs)} ms a pool of ${poolSize} tolerates ` +
    `at ${rps} req/s (Little's law: N / λ): a slow dependency would exhaust the pool`;
  return Object.freeze({ maxLatencyMs, ok: false, warning });
}

const round = (ms: number): number => Math.round(ms * 10) / 10;
