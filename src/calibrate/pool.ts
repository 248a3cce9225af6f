import { OptionsValidator } from '../options/validator.js';

/**
 * Pool check by Little's law (SPEC C6). A timeout does not protect the request, it protects the
 * shared resource the request holds while it waits. With arrival rate λ (req/s) and a pool of N
 * connections, in-flight calls are λ × W, so the longest latency the pool tolerates is W = N / λ
 * (the seed: 100 req/s over 50 connections → 500 ms). A timeout above it lets a slow dependency fill
 * the pool, and then the service refuses traffic that has nothing to do with that dependency.
 */

export interface PoolCheckInput {
  /** Connections (or workers, or concurrency slots) in the pool. Integer [1, 10^6]. */
  readonly poolSize: number;
  /** Arrival rate of calls into the pool, requests per second. (0, 10^7]. */
  readonly rps: number;
  /** The timeout that bounds how long one call holds a connection, in ms. (0, 2^31-1]. */
  readonly timeoutMs: number;
}

export interface PoolCheckResult {
  /** N / λ, in ms: the longest latency the pool tolerates without running dry. */
  readonly maxLatencyMs: number;
  readonly ok: boolean;
  /** Null when the timeout fits; otherwise names the timeout, N, λ and the limit. */
  readonly warning: string | null;
}

export function checkPool(input: PoolCheckInput): PoolCheckResult {
  const v = new OptionsValidator('checkPool');
  const i = (input ?? {}) as Partial<PoolCheckInput>;
  for (const key of ['poolSize', 'rps', 'timeoutMs'] as const) {
    if (i[key] === undefined) v.problem(`\`${key}\` is required`);
  }
  const poolSize = v.number('poolSize', i.poolSize, { default: 1, min: 1, max: 1e6, integer: true });
  const rps = v.number('rps', i.rps, { default: 1, min: 0, exclusiveMin: true, max: 1e7 });
  const timeoutMs = v.number('timeoutMs', i.timeoutMs, {
    default: 1,
    min: 0,
    exclusiveMin: true,
    max: 2 ** 31 - 1,
  });
  v.done();
  const maxLatencyMs = (poolSize / rps) * 1000;
  if (timeoutMs <= maxLatencyMs) return Object.freeze({ maxLatencyMs, ok: true, warning: null });
  const warning =
    `timeout of ${timeoutMs} ms exceeds the ${round(maxLatencyMs)} ms a pool of ${poolSize} tolerates ` +
    `at ${rps} req/s (Little's law: N / λ): a slow dependency would exhaust the pool`;
  return Object.freeze({ maxLatencyMs, ok: false, warning });
}

const round = (ms: number): number => Math.round(ms * 10) / 10;
