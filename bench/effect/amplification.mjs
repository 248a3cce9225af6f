import { prazo } from '../lib/prazo.mjs';

/**
 * Load amplification under a total outage (SPEC R1, V4; Google SRE book, "Handling Overload": three
 * attempts per request triple the load on a failing backend, a 10% retry budget holds it near 1.1×).
 *
 * On a fake clock: `rps` requests per second; 10 healthy seconds (the budget's window fills with
 * originals, as in production), then `outageSeconds` in which every attempt fails with a 503. Counted:
 * attempts that reach the dependency per original request during the outage, overall and in its first
 * second (a budget dries up "in the first instants").
 *
 * - naive: three attempts per request, no budget (the "conservative" classic the seed warns about).
 * - prazo, budget only: `createDependency(...).execute` with 3 attempts and the default retry budget
 *   (10%, 3/s floor), the adaptive throttle off.
 * - prazo (defaults): the same with the adaptive throttle on (issue 23): most calls are refused
 *   locally once the outage is seen; the probe share (10%) and its retries still reach the dependency.
 */
const HEALTHY_SECONDS = 10;
const HEALTHY_LATENCY_MS = 10;
const FAIL_LATENCY_MS = 2;
const ATTEMPTS = 3;

function outageError() {
  return Object.assign(new Error('503 Service Unavailable'), { status: 503 });
}

/** Drives arrivals on the fake clock and counts what reaches the dependency, per phase. */
async function simulate({ clock, rps, outageSeconds, call }) {
  const sleep = await prazo('clock', 'sleep');
  const interval = 1000 / rps;
  const outageAt = HEALTHY_SECONDS * 1000;
  const firstSecondEnd = outageAt + 1000;
  const counts = { originals: 0, attempts: 0, firstOriginals: 0, firstAttempts: 0, failedCalls: 0 };
  const operation = async ({ signal } = {}) => {
    const now = clock.now();
    const inOutage = now >= outageAt;
    if (inOutage) {
      counts.attempts += 1;
      if (now < firstSecondEnd) counts.firstAttempts += 1;
      await sleep(clock, FAIL_LATENCY_MS, signal);
      throw outageError();
    }
    await sleep(clock, HEALTHY_LATENCY_MS, signal);
    return 'ok';
  };
  const pending = [];
  const total = (HEALTHY_SECONDS + outageSeconds) * rps;
  for (let i = 0; i < total; i += 1) {
    const now = clock.now();
    if (now >= outageAt) {
      counts.originals += 1;
      if (now < firstSecondEnd) counts.firstOriginals += 1;
    }
    pending.push(
      call(operation).catch(() => {
        if (now >= outageAt) counts.failedCalls += 1;
      }),
    );
    await clock.advanceAsync(interval);
  }
  await clock.runAllAsync();
  await Promise.all(pending);
  return {
    originals: counts.originals,
    attempts: counts.attempts,
    amplification: counts.attempts / counts.originals,
    firstSecondAmplification: counts.firstAttempts / counts.firstOriginals,
    failedCalls: counts.failedCalls,
  };
}

export async function amplification({ rps, outageSeconds }) {
  const FakeClock = await prazo('testing', 'FakeClock');
  const naiveClock = new FakeClock();
  const naive = await simulate({
    clock: naiveClock,
    rps,
    outageSeconds,
    call: async (operation) => {
      let last;
      for (let attempt = 0; attempt < ATTEMPTS; attempt += 1) {
        try {
          return await operation();
        } catch (error) {
          last = error;
        }
      }
      throw last;
    },
  });
  let withBudget;
  let throttled;
  try {
    withBudget = await prazoRun({ FakeClock, rps, outageSeconds, throttle: false });
    throttled = await prazoRun({ FakeClock, rps, outageSeconds, throttle: true });
  } catch (error) {
    withBudget = { skipped: error.message };
    throttled = { skipped: error.message };
  }
  return { rps, outageSeconds, attemptsPerRequest: ATTEMPTS, naive, prazo: withBudget, throttled };
}

async function prazoRun({ FakeClock, rps, outageSeconds, throttle }) {
  const createDependency = await prazo('dependency', 'createDependency');
  const createRetryBudget = await prazo('budget', 'createRetryBudget');
  const clock = new FakeClock();
  const retryBudget = createRetryBudget({ clock });
  const dependency = createDependency({
    name: 'supplier',
    clock,
    p99Ms: 20,
    attempts: ATTEMPTS,
    retryBudget,
    throttle,
  });
  let refused = 0;
  let throttledCalls = 0;
  dependency.on?.((event) => {
    if (event.type === 'budget-refused') refused += 1;
    if (event.type === 'throttled') throttledCalls += 1;
  });
  const result = await simulate({
    clock,
    rps,
    outageSeconds,
    call: (operation) => dependency.execute(operation, { idempotent: true }),
  });
  return { ...result, budgetRefused: refused, throttled: throttledCalls, budgetState: retryBudget.state() };
}
