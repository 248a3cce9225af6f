import { openLoop } from '../lib/open-loop.mjs';
import { prazo } from '../lib/prazo.mjs';
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
  const dependency = createDependency({
    name: 'instances',
    clock,
    p99Ms: 150,
    attempts: 1,
    retryBudget: createRetryBudget({ clock }),
    hedge: hedge ? { percentile: 0.95 } : false,
  });
  const { responseMs } = dependency.timeouts;
  const set = new InstanceSet({
    clock,
    random,
    decayMs: 10_000,
    initialEstimateMs: 30,
    ejection: ejectionSettings(true),
    // As prazo/http sets them: the p99 as latency ejection's floor, the attempt timeout, a failure
    // worth ten of them, hedges at the p95 (5% of attempts may be overtaken without being slow).
    floorMs: () => 150,
    penaltyMs: () => 10 * responseMs,
    timeoutMs: () => responseMs,
    unansweredFloor: () => (hedge ? 0.05 : 0),
  });
  set.replace(Array.from({ length: INSTANCES }, (_, i) => ({ key: `i${i}`, value: i })));
  let turn = 0;
  let sent = 0;
  const perInstance = new Array(INSTANCES).fill(0);
  const makeOperation = () => {
    const used = [];
    return async ({ signal, kind }) => {
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
        // A hedge race's loser, as prazo/http settles it: overtaken by its hedge (evidence against its
        // instance), or a hedge beaten by the attempt it hedged (a lower bound only).
        if (pick)
          set.settle(instance, kind === 'hedge' ? 'lost' : 'unanswered', clock.now() - started, clock.now());
        throw error;
      }
      if (pick) set.settle(instance, 'success', clock.now() - started, clock.now());
      return 'ok';
    };
  };
  let sentAtStart = 0;
  let slowAtStart = 0;
  const caller = await openLoop({
    clock,
    rate: RATE_PER_SECOND,
    warmupMs: WARMUP_MS,
    requests,
    call: () => dependency.execute(makeOperation(), { idempotent: true }),
    onMeasureStart: () => {
      sentAtStart = sent;
      slowAtStart = perInstance[0];
    },
  });
  const sentMeasured = sent - sentAtStart;
  return {
    ...caller,
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
