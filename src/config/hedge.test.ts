import { describe, expect, it } from 'vitest';
import { FakeClock } from '../clock/fake.js';
import { createDependency } from '../dependency/dependency.js';
import { hedgePlanOf } from '../hedge/options.js';
import type { LatencySnapshot, LatencySource } from '../latency/types.js';
import { meshPolicies } from '../mesh/policy.js';
import { checkConfigText, type PrazoConfig } from './index.js';

/**
 * `hedge` is declared once (hedge/options.ts: HEDGE_OPTIONS, and `hedgePlanOf` for what "on", the
 * defaults and the delay's ceiling mean). The config file, its check, the mesh export and the
 * executor all read a dependency's `hedge` from there: the same entry must give the same verdict
 * through each — hedge or not, after how long, at which quantile. A reader that writes its own copy
 * (its own default floor, its own ceiling) drifts from the others and fails here.
 */

const P99_MS = 100;

const configOf = (hedge: string): { config: PrazoConfig | undefined; errors: string[] } => {
  const text = `dependencies:\n  - { name: a, p99Ms: ${P99_MS}, defaultDeadlineMs: 5000${hedge}, mesh: { hedgeDelayMs: LIVE } }\n`;
  const { config, problems } = checkConfigText(text.replace('LIVE', String(LIVE_MS)), { readText: () => '' });
  return { config, errors: problems.filter((p) => p.severity === 'error').map((p) => p.message) };
};

/** The live latency the executor reads (every quantile), and the fixed one the mesh exports. */
let LIVE_MS = 40;

/** A latency source whose every quantile is `LIVE_MS`; it remembers which quantiles were asked. */
function liveSource(asked: Set<number>): LatencySource {
  const empty: LatencySnapshot = {
    count: 0,
    successes: 0,
    errors: 0,
    timeouts: 0,
    p50: undefined,
    p95: undefined,
    p99: undefined,
    p999: undefined,
    max: undefined,
    startedAt: 0,
    endedAt: 0,
  };
  return {
    record: () => undefined,
    quantile: (q) => {
      asked.add(q);
      return LIVE_MS;
    },
    lastWindow: () => undefined,
    currentWindow: () => empty,
  };
}

/** When the executor sends its first hedge (ms after the call starts), before the first attempt times out. */
async function executorHedgeAt(config: PrazoConfig): Promise<{ at: number | undefined; asked: Set<number> }> {
  const entry = config.dependencies.get('a')!;
  const clock = new FakeClock();
  const asked = new Set<number>();
  const dependency = createDependency({ ...entry.options, clock, recorder: liveSource(asked) });
  let at: number | undefined;
  dependency.on((event) => {
    if (event.type === 'attempt' && event.kind === 'hedge' && at === undefined) at = clock.now();
  });
  const call = dependency
    .execute(
      (context) =>
        new Promise((_, reject) =>
          context.signal.addEventListener('abort', () => reject(context.signal.reason)),
        ),
      { idempotent: true },
    )
    .catch(() => undefined);
  // Up to just before the attempt times out: a hedge later than that is beaten by the timeout.
  for (let t = 0; t < entry.calibration.responseMs - 1; t++) {
    clock.advance(1);
    await Promise.resolve();
  }
  clock.advance(10_000);
  await call;
  return { at, asked };
}

describe('hedge: one reading of the option for the config check, the mesh export and the executor', () => {
  // [the entry's `hedge`, the live latency, what every reader must say: the delay, or none]
  const CASES: ReadonlyArray<readonly [string, number, number | undefined, number]> = [
    [', hedge: true', 40, 40, 0.95],
    [', hedge: true', 2, 5, 0.95], // the default floor, minDelayMs 5
    [', hedge: { minDelayMs: 70 }', 60, 70, 0.95],
    [', hedge: { maxDelayMs: 50 }', 60, undefined, 0.95],
    [', hedge: { maxDelayMs: 60 }', 60, 60, 0.95],
    [', hedge: { maxExtraLoad: 0.1 }', 30, 30, 0.9],
    [', hedge: { percentile: 0.99, timeLeftPercentile: 0.5 }', 30, 30, 0.99],
    [', hedge: { enabled: false, percentile: 0.9 }', 30, undefined, 0.9],
    [', hedge: false', 30, undefined, 0.95],
    ['', 30, undefined, 0.95],
  ];

  for (const [hedge, live, delay, percentile] of CASES) {
    it(`${hedge || 'no hedge'} with a live ${live} ms: ${delay === undefined ? 'no hedge' : `a hedge at ${delay} ms`}`, async () => {
      LIVE_MS = live;
      const { config, errors } = configOf(hedge);
      expect(errors).toEqual([]);
      const entry = config!.dependencies.get('a')!;
      expect(entry.calibration.responseMs).toBeGreaterThan(live); // the hedge comes before the timeout

      const plan = hedgePlanOf(entry.options.hedge, entry.calibration.responseMs);
      const planned =
        plan === undefined
          ? undefined
          : Math.max(plan.minDelayMs, live) > plan.maxDelayMs
            ? undefined
            : Math.max(plan.minDelayMs, live);
      expect(planned, 'hedgePlanOf').toBe(delay);

      const mesh = meshPolicies(config!).policies[0]!;
      expect(mesh.hedge?.delayMs, 'the mesh export').toBe(delay);
      if (mesh.hedge !== undefined) expect(mesh.hedge.percentile).toBe(percentile);

      const executor = await executorHedgeAt(config!);
      expect(executor.at, 'the executor').toBe(delay);
      if (plan !== undefined) expect(executor.asked.has(percentile), 'the executor hedges at').toBe(true);
    });
  }

  it('the config check refuses what the executor could never hedge: a response timeout below minDelayMs', () => {
    LIVE_MS = 40;
    const { errors } = configOf(', hedge: { minDelayMs: 1000 }');
    expect(errors).toEqual([
      expect.stringMatching(/below the hedge minDelayMs \(1000 ms\): no hedge could be sent/),
    ]);
    // With a ceiling of its own the author chose: accepted.
    expect(configOf(', hedge: { minDelayMs: 1000, maxDelayMs: 2000 }').errors).toEqual([]);
  });
});
