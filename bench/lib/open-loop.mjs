import { percentile, sortedCopy } from './stats.mjs';

/**
 * The effect suite's load: an open loop on a fake clock. `call()` is started every `1000 / rate` ms
 * (it need not finish first), `warmupMs` of them unmeasured (the live windows fill), then `requests`
 * measured ones; then every timer is run and every call awaited. Each measured call counts with the
 * time it took, a failed one with the time it took to fail. `onMeasureStart` runs just before the first
 * measured call (to take counters' starting values).
 *
 * Returns the caller's latency summary (p50/p95/p99/p99.9/max, ms) and the failed count.
 */
export async function openLoop({ clock, rate, warmupMs, requests, call, onMeasureStart }) {
  const interval = 1000 / rate;
  const warmup = Math.round(warmupMs / interval);
  const latencies = new Float64Array(requests);
  const pending = [];
  let failed = 0;
  for (let i = 0; i < warmup + requests; i += 1) {
    if (i === warmup) onMeasureStart?.();
    const started = clock.now();
    const measured = i - warmup;
    const settle = () => {
      if (measured >= 0) latencies[measured] = clock.now() - started;
    };
    pending.push(
      call().then(settle, () => {
        if (measured >= 0) failed += 1;
        settle();
      }),
    );
    await clock.advanceAsync(interval);
  }
  await clock.runAllAsync();
  await Promise.all(pending);
  const sorted = sortedCopy(latencies);
  return {
    requests,
    failed,
    p50Ms: percentile(sorted, 0.5),
    p95Ms: percentile(sorted, 0.95),
    p99Ms: percentile(sorted, 0.99),
    p999Ms: percentile(sorted, 0.999),
    maxMs: sorted[sorted.length - 1],
  };
}
