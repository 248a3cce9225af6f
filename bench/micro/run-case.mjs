import { parseArgs } from 'node:util';
import { report } from '../lib/child.mjs';
import { Unavailable } from '../lib/prazo.mjs';
import { summarize } from '../lib/stats.mjs';
import { MICRO_CASES } from './cases.mjs';

/**
 * One micro case, one process. The loop count is calibrated so a batch lasts about `batch-ms`; after a
 * warm-up batch (JIT), `batches` batches are timed and the median batch gives ns per operation.
 * Results are kept in a ring, so the optimiser cannot drop the calls.
 */
const { values } = parseArgs({
  options: {
    case: { type: 'string' },
    'batch-ms': { type: 'string', default: '50' },
    batches: { type: 'string', default: '10' },
  },
});
const batchMs = Number(values['batch-ms']);
const batches = Number(values.batches);
const spec = MICRO_CASES.find((c) => c.name === values.case);
if (!spec) throw new Error(`unknown micro case: ${values.case}`);

let op;
try {
  op = await spec.setup();
} catch (error) {
  if (error instanceof Unavailable) {
    report({ case: spec.name, skipped: error.message });
    process.exit(0);
  }
  throw error;
}

// A ring the results are stored in: an allocation whose result escapes cannot be optimised away.
const ring = new Array(1024).fill(null);
let slot = 0;
const consume = (value) => {
  slot = (slot + 1) & 1023;
  ring[slot] = value;
};

function runSync(n) {
  const t0 = performance.now();
  for (let i = 0; i < n; i += 1) consume(op());
  return performance.now() - t0;
}

async function runAsync(n) {
  const t0 = performance.now();
  for (let i = 0; i < n; i += 1) consume(await op());
  return performance.now() - t0;
}

/** `n` operations by `spec.inFlight` workers at once, each awaiting its own: calls that overlap. */
async function runInFlight(n) {
  const t0 = performance.now();
  let left = n;
  const worker = async () => {
    while (left > 0) {
      left -= 1;
      consume(await op());
    }
  };
  await Promise.all(Array.from({ length: spec.inFlight }, worker));
  return performance.now() - t0;
}

const run = spec.inFlight ? runInFlight : spec.async ? runAsync : runSync;
let n = 1_000;
for (let elapsed = await run(n); elapsed < batchMs / 4; elapsed = await run(n)) n *= 2;
const measured = await run(n);
n = Math.max(1, Math.round((n * batchMs) / Math.max(measured, 0.001)));
await run(n); // warm-up at the final size
const perOp = [];
for (let b = 0; b < batches; b += 1) perOp.push(((await run(n)) * 1e6) / n);
const s = summarize(perOp);
report({
  case: spec.name,
  nsPerOp: s.median,
  batchMin: s.min,
  batchMax: s.max,
  opsPerBatch: n,
  kept: ring.filter((v) => v !== null).length,
});
