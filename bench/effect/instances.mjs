import { prazo } from '../lib/prazo.mjs';
import { percentile, sortedCopy } from '../lib/stats.mjs';
import { mulberry32 } from './prng.mjs';

/**
 * Picking and hedging over three instances (SPEC X5, H1–H3; issue 15 item 7). On a fake clock, three
 * instances answer in 8–12 ms, except that one of them takes 10× (80–120 ms) on 5% of its answers,
 * drawn per attempt from a seeded PRNG. `requests` calls arrive at 200/s after 10 s of warm-up. Four
 * ways of choosing the instance of each attempt, through one prazo executor each:
 *
 * - `roundRobin`: every instance in turn, no hedging (what the demo's services did by hand);
 * - `picking`: power of two choices over peak-EWMA × (in flight + 1), prazo's instance set with its
 *   defaults (10 s decay, 30 ms initial estimate, ejection on), no hedging;
 * - `hedging`: round robin, with a hedge at the live p95 (the hedge may land on the slow instance);
 * - `both`: picking and a hedge at the live p95, the hedge to another instance than the one it hedges,
 *   as prazo/http does.
 *
 * Reported: caller p50/p95/p99/max, extra requests sent (share of calls), the slow instance's share.
 */
const RATE_PER_SECOND = 200;
const SLOW_SHARE = 0.05;
const SLOW_FACTOR = 10;
const WARMUP_MS = 10_000;
const INSTANCES = 3;

function latencyModel(seed) {
  const random = mulberry32(seed);
  return (instance) => {
    const base = 8 + 4 * random();
    return instance === 0 && random() < SLOW_SHARE ? base * SLOW_FACTOR : base;
  };
}

async function simulate(parts, { seed, requests, pick, hedge }) {
  const { FakeClock, createDependency, createRetryBudget, InstanceSet, ejectionSettings, sleep } = parts;
  const clock = new FakeClock();
  const latency = latencyModel(seed);
  const random = mulberry32(seed + 1_000);
  const set = new InstanceSet({
    clock,
    random,
    decayMs: 10_000,
    initialEstimateMs: 30,
    ejection: ejectionSettings(true),
    floorMs: () => 150,
    penaltyMs: () => 150,
  });
  set.replace(Array.from({ length: INSTANCES }, (_, i) => ({ key: `i${i}`, value: i })));
  const dependency = createDependency({
    name: 'instances',
    clock,
    p99Ms: 150,
    attempts: 1,
    retryBudget: createRetryBudget({ clock }),
    hedge: hedge ? { percentile: 0.95 } : false,
  });
  let turn = 0;
  let sent = 0;
  const perInstance = new Array(INSTANCES).fill(0);
  const makeOperation = () => {
    const used = [];
    return async ({ signal }) => {
      const started = clock.now();
      let instance;
      if (pick) {
        instance = set.pick(started, used);
        used.push(instance);
      }
      const index = pick ? instance.value : turn++ % INSTANCES;
      sent += 1;
      perInstance[index] += 1;
      try {
        await sleep(clock, latency(index), signal);
      } catch (error) {
        // The hedge race's loser: what it had run when it lost is a lower bound of its latency.
        if (pick) set.settle(instance, 'lost', clock.now() - started, clock.now());
        throw error;
      }
      if (pick) set.settle(instance, 'success', clock.now() - started, clock.now());
      return 'ok';
    };
  };
  const interval = 1000 / RATE_PER_SECOND;
  const warmup = Math.round(WARMUP_MS / interval);
  const latencies = new Float64Array(requests);
  const pending = [];
  let sentAtStart = 0;
  let slowAtStart = 0;
  let failed = 0;
  for (let i = 0; i < warmup + requests; i += 1) {
    if (i === warmup) {
      sentAtStart = sent;
      slowAtStart = perInstance[0];
    }
    const started = clock.now();
    const measured = i - warmup;
    const settle = () => {
      if (measured >= 0) latencies[measured] = clock.now() - started;
    };
    pending.push(
      dependency.execute(makeOperation(), { idempotent: true }).then(settle, () => {
        failed += measured >= 0 ? 1 : 0;
        settle();
      }),
    );
    await clock.advanceAsync(interval);
  }
  await clock.runAllAsync();
  await Promise.all(pending);
  const sorted = sortedCopy(latencies);
  const sentMeasured = sent - sentAtStart;
  return {
    requests,
    failed,
    p50Ms: percentile(sorted, 0.5),
    p95Ms: percentile(sorted, 0.95),
    p99Ms: percentile(sorted, 0.99),
    maxMs: sorted[sorted.length - 1],
    extraRequestsShare: (sentMeasured - requests) / requests,
    slowInstanceShare: (perInstance[0] - slowAtStart) / sentMeasured,
  };
}

export async function instances({ seed, requests }) {
  const parts = {
    FakeClock: await prazo('testing', 'FakeClock'),
    createDependency: await prazo('dependency', 'createDependency'),
    createRetryBudget: await prazo('budget', 'createRetryBudget'),
    InstanceSet: await prazo('balance', 'InstanceSet'),
    ejectionSettings: await prazo('balance', 'ejectionSettings'),
    sleep: await prazo('clock', 'sleep'),
  };
  const run = (pick, hedge) => simulate(parts, { seed, requests, pick, hedge });
  return {
    seed,
    slowShare: SLOW_SHARE,
    slowFactor: SLOW_FACTOR,
    roundRobin: await run(false, false),
    picking: await run(true, false),
    hedging: await run(false, true),
    both: await run(true, true),
  };
}
