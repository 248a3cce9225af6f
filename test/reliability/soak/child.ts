import { getEventListeners } from 'node:events';
import { setImmediate as tick } from 'node:timers/promises';
import { getHeapSpaceStatistics } from 'node:v8';
import { Deadline } from '../../../src/deadline/deadline.js';
import { runWithDeadline } from '../../../src/deadline/index.js';
import { createHttpClient, type HttpClient } from '../../../src/http/index.js';
import { activeResources, drive, type Outcomes } from './driver.js';
import { SOAK_TIMEOUTS } from './mix.js';
import { pendingPromisesAfter } from './promises.js';

/**
 * The soak's client process, run as `node --expose-gc --no-flush-bytecode soak.mjs <origin> <calls> <concurrency>` (a
 * bundle of this file), so that its heap, handles and listeners are prazo's and the driver's alone.
 * Prints one JSON line with the before/after figures; the parent test judges them.
 */

const gc = (globalThis as { gc?: () => void }).gc;
if (gc === undefined) throw new Error('run with node --expose-gc');

/**
 * Heap used by data after GC: every V8 space but those of compiled code and bytecode (`code_*`, and
 * `trusted_*`, where V8 12+ keeps bytecode arrays). The JIT tiers up and flushes code on its own
 * schedule, differently on each Node line (on Node 26 the trusted space alone moved by -1 MB between
 * two readings), and none of prazo's objects live there: the change of this figure is what the test
 * judges (against the whole heap at the start). The child also runs with `--no-flush-bytecode`, so
 * what V8 would drop for functions used only in the warm-up (their feedback, in the old space) does
 * not show as a shrink either.
 */
const CODE_SPACES = /^(code|trusted|shared_trusted|read_only)_|^(code|trusted)_large_object_space$/;
function dataHeapUsed(): number {
  let used = 0;
  for (const space of getHeapSpaceStatistics())
    if (!CODE_SPACES.test(space.space_name)) used += space.space_used_size;
  return used;
}

async function settle(): Promise<void> {
  for (let i = 0; i < 4; i += 1) {
    await tick();
    gc!();
  }
}

const warnings: string[] = [];
let unhandled = 0;
process.on('warning', (w) => warnings.push(`${w.name}: ${w.message}`));
process.on('unhandledRejection', () => {
  unhandled += 1;
});

const [origin = '', callsArg = '200000', concurrencyArg = '64'] = process.argv.slice(2);
const calls = Number(callsArg);
const concurrency = Number(concurrencyArg);
const client = (): HttpClient =>
  createHttpClient({ name: 'soak', origin, attempts: 3, ...SOAK_TIMEOUTS, connections: concurrency });

async function run(prefix: string, n: number, signal: AbortSignal, seed: number): Promise<Outcomes> {
  const c = client();
  try {
    return await drive({ client: c, calls: n, concurrency, seed, prefix, signal, deadlineMs: 2_000 });
  } finally {
    await c.destroy();
  }
}

async function main(): Promise<void> {
  const shutdown = new AbortController(); // one long-lived signal shared by every call
  const ambient = Deadline.after(3_600_000); // a long-lived ambient deadline, as in a server handler
  void ambient.signal; // armed now, so its own timer is part of the baseline
  await runWithDeadline(ambient, () => run('w', 5_000, shutdown.signal, 1));
  await settle();
  const before = {
    heapUsed: process.memoryUsage().heapUsed,
    dataHeapUsed: dataHeapUsed(),
    resources: activeResources(),
  };
  const t0 = performance.now();
  const outcomes = await runWithDeadline(ambient, () => run('s', calls, shutdown.signal, 2));
  const durationMs = performance.now() - t0;
  await settle();
  const after = {
    heapUsed: process.memoryUsage().heapUsed,
    dataHeapUsed: dataHeapUsed(),
    resources: activeResources(),
  };
  const listeners = {
    callerSignal: getEventListeners(shutdown.signal, 'abort').length,
    deadlineSignal: getEventListeners(ambient.signal, 'abort').length,
  };
  const promises = {
    small: await pendingPromisesAfter(() => run('p', 1_000, shutdown.signal, 3).then(() => {}), settle),
    large: await pendingPromisesAfter(() => run('q', 5_000, shutdown.signal, 4).then(() => {}), settle),
  };
  const report = {
    calls,
    concurrency,
    durationMs,
    outcomes,
    before,
    after,
    listeners,
    promises,
    warnings,
    unhandled,
  };
  process.stdout.write(`${JSON.stringify(report)}\n`);
}

await main();
