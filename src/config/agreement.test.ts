import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { BUDGET_LIMITS } from '../budget/constants.js';
import { DEPENDENCY_DEFAULTS, DEPENDENCY_LIMITS } from '../dependency/constants.js';
import { createDependency } from '../dependency/dependency.js';
import type { DependencyOptions } from '../dependency/options.js';
import { HEDGE_DEFAULTS, HEDGE_LIMITS } from '../hedge/constants.js';
import { BACKOFF_LIMITS } from '../retry/constants.js';
import { checkConfigText } from './load.js';
import { DEPENDENCY_RANGES, HEDGE_RANGES, RETRY_BUDGET_RANGES } from './ranges.js';
import type { DependencySettings } from './settings.js';

/**
 * The config mirrors the executor's bounds (config/ may not import the layers above it): this test
 * pins every mirrored number to its source, and checks that what the loader accepts, the executor
 * accepts, with the same calibration.
 */
describe('config ↔ executor agreement', () => {
  it('mirrored bounds equal their sources', () => {
    expect(DEPENDENCY_RANGES).toMatchObject({
      maxNameLength: DEPENDENCY_LIMITS.maxNameLength,
      maxP99Ms: DEPENDENCY_LIMITS.maxP99Ms,
      maxDeadlineMs: DEPENDENCY_LIMITS.maxDeadlineMs,
      defaultDeadlineMs: DEPENDENCY_DEFAULTS.defaultDeadlineMs,
      maxBackoffMs: BACKOFF_LIMITS.maxMs,
    });
    expect(RETRY_BUDGET_RANGES).toEqual({
      minWindowMs: BUDGET_LIMITS.minWindowMs,
      maxWindowMs: BUDGET_LIMITS.maxWindowMs,
      maxRatio: BUDGET_LIMITS.maxRatio,
      maxPerSecond: BUDGET_LIMITS.maxPerSecond,
    });
    expect(HEDGE_RANGES).toEqual({
      minPercentile: HEDGE_LIMITS.minPercentile,
      maxPercentile: HEDGE_LIMITS.maxPercentile,
      maxExtraLoad: HEDGE_LIMITS.maxExtraLoad,
      maxDelayMs: HEDGE_LIMITS.maxDelayMs,
      defaultMinDelayMs: HEDGE_DEFAULTS.minDelayMs,
    });
    const settings: DependencySettings = { name: 'x', p99Ms: 1 };
    const options: DependencyOptions = settings; // compiles: the config's type fits the executor's
    expect(options.name).toBe('x');
  });

  it('property: every dependency the loader accepts, createDependency accepts, with the same timeouts', () => {
    const num = (min: number, max: number) => {
      const double = fc.double({ min, max, noNaN: true });
      const [lo, hi] = [Math.ceil(min), Math.floor(max)];
      return lo > hi ? double : fc.oneof(double, fc.integer({ min: lo, max: hi }));
    };
    const dep = fc.record(
      {
        name: fc.constantFrom('a', 'inventory'),
        p99Ms: num(-1, 2000),
        attempts: num(0, 11),
        slack: num(1.2, 1.6),
        defaultDeadlineMs: num(-1, 5000),
        connectCapMs: num(-1, 1000),
        overheadMs: num(-1, 100),
        retryBudget: fc.record(
          { windowMs: num(50, 4_000_000), maxRatio: num(-1, 11), minPerSecond: num(-1, 10) },
          { requiredKeys: [] },
        ),
        hedge: fc.oneof(
          fc.boolean(),
          fc.record(
            { percentile: num(0.4, 1), minDelayMs: num(-1, 50), maxDelayMs: num(-1, 100) },
            { requiredKeys: [] },
          ),
        ),
        backoff: fc.record({ baseMs: num(-1, 70_000), capMs: num(-1, 70_000) }, { requiredKeys: [] }),
        recorder: fc.record({ windowMs: num(1, 100_000), minSamples: num(0, 1000) }, { requiredKeys: [] }),
      },
      { requiredKeys: ['name', 'p99Ms'] },
    );
    fc.assert(
      fc.property(dep, (d) => {
        const { config } = checkConfigText(stringify({ dependencies: [d] }), { readText: () => '' });
        if (config === undefined) return;
        const loaded = config.dependencies.get(d.name)!;
        const built = createDependency(loaded.options);
        expect(built.timeouts).toEqual(loaded.calibration);
      }),
      { numRuns: 1000 },
    );
  });
});
