import { parseArgs } from 'node:util';
import { report } from '../lib/child.mjs';
import { Unavailable } from '../lib/prazo.mjs';
import { percentile, sortedCopy } from '../lib/stats.mjs';
import { createVariant } from './variants.mjs';

/**
 * One HTTP variant, one process: a closed loop of `concurrency` workers, each sending the next GET as
 * soon as the previous answer's body is read. A warm-up period is discarded; then requests completed
 * in the measured period give req/s, their latencies p50/p99, and the process's own CPU time per
 * request (less sensitive to the neighbours' load than wall-clock throughput).
 */
const { values } = parseArgs({
  options: {
    variant: { type: 'string' },
    origin: { type: 'string' },
    concurrency: { type: 'string', default: '50' },
    'warmup-ms': { type: 'string', default: '1000' },
    'duration-ms': { type: 'string', default: '3000' },
  },
});

const concurrency = Number(values.concurrency);
const warmupMs = Number(values['warmup-ms']);
const durationMs = Number(values['duration-ms']);

let variant;
try {
  variant = await createVariant(values.variant, { origin: values.origin });
} catch (error) {
  if (error instanceof Unavailable) {
    report({ variant: values.variant, skipped: error.message });
    process.exit(0);
  }
  throw error;
}

let phase = 'warmup';
let completed = 0;
let errors = 0;
let firstError;
let latencies = new Float64Array(1 << 16);

function keep(ms) {
  if (completed === latencies.length) {
    const bigger = new Float64Array(latencies.length * 2);
    bigger.set(latencies);
    latencies = bigger;
  }
  latencies[completed] = ms;
  completed += 1;
}

async function worker() {
  while (phase !== 'done') {
    const started = performance.now();
    try {
      await variant.call();
      if (phase === 'measure') keep(performance.now() - started);
    } catch (error) {
      if (phase === 'measure') errors += 1;
      firstError ??= error;
      if (errors > 1000) phase = 'done';
    }
  }
}

const workers = Array.from({ length: concurrency }, () => worker());
await new Promise((r) => setTimeout(r, warmupMs));
phase = 'measure';
const cpuStart = process.cpuUsage();
const t0 = performance.now();
await new Promise((r) => setTimeout(r, durationMs));
const elapsedMs = performance.now() - t0;
const cpu = process.cpuUsage(cpuStart);
const measured = completed;
phase = 'done';
await Promise.all(workers);
await variant.close();

const sorted = sortedCopy(latencies.subarray(0, measured));
report({
  variant: values.variant,
  requests: measured,
  errors,
  firstError: firstError ? String(firstError?.stack ?? firstError).split('\n')[0] : null,
  elapsedMs,
  reqPerSec: (measured / elapsedMs) * 1000,
  p50Ms: percentile(sorted, 0.5) ?? null,
  p99Ms: percentile(sorted, 0.99) ?? null,
  cpuUsPerReq: measured > 0 ? (cpu.user + cpu.system) / measured : null,
  stats: variant.stats?.() ?? null,
});
