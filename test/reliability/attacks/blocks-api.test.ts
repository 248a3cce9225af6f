import type { LookupAddress } from 'node:dns';
import fc from 'fast-check';
import { describe, expect, it, vi } from 'vitest';
import { DnsDiscovery } from '../../../src/balance/discovery.js';
import { ejectionAllowance, ejectionSettings } from '../../../src/balance/ejection.js';
import { type Instance, InstanceSet, type InstanceVerdict } from '../../../src/balance/instances.js';
import {
  DISCOVERY_OPTIONS,
  EJECTION_OPTIONS,
  INSTANCES_OPTIONS,
  LATENCY_EJECTION_OPTIONS,
  PEAK_EWMA_OPTIONS,
} from '../../../src/balance/options.js';
import { createRetryBudget } from '../../../src/budget/budget.js';
import { RETRY_BUDGET_OPTIONS } from '../../../src/budget/options.js';
import type { Clock } from '../../../src/clock/clock.js';
import { FakeClock } from '../../../src/clock/fake.js';
import { createDependency } from '../../../src/dependency/index.js';
import { InvalidOptionsError } from '../../../src/errors/index.js';
import { HEDGE_OPTIONS } from '../../../src/hedge/options.js';
import { createHedgePolicy } from '../../../src/hedge/policy.js';
import { createLatencyRecorder } from '../../../src/latency/recorder.js';
import type { Sketch } from '../../../src/latency/sketch.js';
import type { LatencySource } from '../../../src/latency/types.js';
import { GradientLimit, gradientSettings } from '../../../src/limit/gradient.js';
import { ConcurrencyLimiter, type LimitWaiter } from '../../../src/limit/limiter.js';
import { ADAPTIVE_LIMIT_OPTIONS, CONCURRENCY_LIMIT_OPTIONS } from '../../../src/limit/options.js';
import type { OptionsSchema, Specs } from '../../../src/options/declare.js';
import { readOptions } from '../../../src/options/validator.js';
import { seededRandom } from '../../../src/testing/random.js';
import { THROTTLE_OPTIONS } from '../../../src/throttle/options.js';
import { AdaptiveThrottle } from '../../../src/throttle/throttle.js';

/**
 * Attacks on prazo's building blocks as a hostile or careless caller would use them, on the fake
 * clock: the retry budget (`createRetryBudget`), the latency recorder and its sketch
 * (`createLatencyRecorder`), the hedge policy (`createHedgePolicy`), the adaptive throttle, the
 * concurrency limiter and its gradient limit, the instance set (power of two choices, ejection) and
 * DNS discovery. Options at their edges (NaN, ±Infinity, negatives, unknown keys), clock readings that
 * are not numbers or that go backwards (a custom clock), a shared budget, random sources outside
 * [0, 1), foreign or repeated handles, lookups that throw, hang or answer garbage.
 *
 * The promises checked (SPEC R1, R7, H1–H3, C1, C4, X5, X7, X11, V4): the budget never lets the
 * extras of any window exceed max(floor, ratio × originals) of that window, shared or not, and it
 * keeps forgetting (one bad clock reading does not turn it into a lifetime ratio); `state()` is
 * consistent and never NaN; a recorder's quantiles are monotone in q, within the samples seen,
 * bounded in memory whatever is recorded, and a bad reading never empties or freezes its windows; a
 * hedge delay is a finite number or no hedge; the limiter never has more than its limit in flight and
 * every slot comes back; the throttle's window keeps moving; a pick is always an instance of the set,
 * never the last one ejected, and handles from elsewhere change nothing; discovery always hands its
 * owner an `Error`. Every option schema rejects unknown keys with a "did you mean", reports every
 * problem together, and gives each number a range.
 *
 * Not offered, so not attacked: merging two recorders' sketches (each dependency has its own; the
 * fleet's view is Prometheus', `prazo/calibrate`).
 *
 * A test whose comment says "Was a defect (fixed)" pinned a defect found here (expected vs actual).
 */

// ── helpers ──────────────────────────────────────────────────────────────────────────────────────

/** Every sketch the recorder (and the ejector) makes, to read its memory (bins) from outside. */
const sketches: Sketch[] = [];
vi.mock('../../../src/latency/sketch.js', async (importOriginal) => {
  const real = await importOriginal<typeof import('../../../src/latency/sketch.js')>();
  return {
    ...real,
    createSketch: (alpha: number): Sketch => {
      const sketch = real.createSketch(alpha);
      sketches.push(sketch);
      return sketch;
    },
  };
});

/**
 * A custom clock (a user's own, over the fake one) whose reading can be set to anything: back in
 * time, NaN, Infinity. Timers run on the fake clock.
 */
function steerableClock(start = 0) {
  const fake = new FakeClock();
  let reading = start;
  const clock: Clock = {
    now: () => reading,
    epochNow: () => fake.epochNow(),
    setTimer: (fn, ms) => fake.setTimer(fn, ms),
    clearTimer: (timer) => fake.clearTimer(timer),
  };
  return {
    clock,
    set(value: number): void {
      reading = value;
    },
    advance(ms: number): void {
      reading += ms;
    },
  };
}

/** The problems of an InvalidOptionsError thrown by `build`, or fails. */
function problemsOf(build: () => unknown): readonly string[] {
  try {
    build();
  } catch (error) {
    expect(error).toBeInstanceOf(InvalidOptionsError);
    return (error as InvalidOptionsError).problems;
  }
  throw new Error('expected an InvalidOptionsError');
}

const fixedSource = (value: unknown): LatencySource => ({
  record: () => {},
  quantile: () => value as number,
  lastWindow: () => undefined,
  currentWindow: () => {
    throw new Error('unused');
  },
});

function instanceSet(clock: Clock, random: () => number = seededRandom(1), consecutiveFailures = 1) {
  return new InstanceSet<string>({
    clock,
    random,
    decayMs: 10_000,
    initialEstimateMs: 30,
    ejection: ejectionSettings({ consecutiveFailures, latency: false }),
    floorMs: () => 10,
    penaltyMs: () => 100,
    timeoutMs: () => 50,
    unansweredFloor: () => 0.01,
  });
}

const entries = (...keys: string[]) => keys.map((key) => ({ key, value: `v-${key}` }));

// ── options ──────────────────────────────────────────────────────────────────────────────────────

describe('options of the building blocks: unknown keys, every problem at once, a range for every number', () => {
  const SCHEMAS: Record<string, OptionsSchema<Specs>> = {
    RETRY_BUDGET_OPTIONS,
    THROTTLE_OPTIONS,
    ADAPTIVE_LIMIT_OPTIONS,
    CONCURRENCY_LIMIT_OPTIONS,
    HEDGE_OPTIONS,
    PEAK_EWMA_OPTIONS,
    LATENCY_EJECTION_OPTIONS,
    EJECTION_OPTIONS,
    DISCOVERY_OPTIONS,
    INSTANCES_OPTIONS,
  } as never;

  it.each(Object.keys(SCHEMAS))('%s: every number option has both bounds; every *Ms one says ms', (name) => {
    const schema = SCHEMAS[name]!;
    for (const key of schema.keys) {
      const spec = schema.specs[key]!;
      if (spec.kind !== 'number') continue;
      expect(spec.min, `${name}.${key}`).toBeTypeOf('number');
      expect(spec.max, `${name}.${key}`).toBeTypeOf('number');
      if (key.endsWith('Ms')) expect(spec.unit, `${name}.${key}`).toBe('ms');
    }
  });

  it('an options object with NaN, ±Infinity, negatives and a misspelt key: every problem in one error', () => {
    const budget = problemsOf(() =>
      createRetryBudget({
        windowMs: Number.NaN,
        maxRatio: Number.POSITIVE_INFINITY,
        minPerSecond: -1,
        buckets: Number.NEGATIVE_INFINITY,
        maxratio: 0.2,
      } as never),
    );
    expect(budget).toHaveLength(5);
    expect(budget.join('\n')).toMatch(/`maxratio`.*did you mean `maxRatio`/);
    const recorder = problemsOf(() =>
      createLatencyRecorder({
        windowMs: -1,
        minSamples: 0.5,
        relativeAccuracy: Number.NaN,
        windowMS: 1,
      } as never),
    );
    expect(recorder).toHaveLength(4);
    expect(recorder.join('\n')).toMatch(/`windowMS`.*did you mean `windowMs`/);
    const hedge = problemsOf(() =>
      createHedgePolicy(fixedSource(1), { percentil: 0.9, minDelayMs: -5, maxDelayMs: Number.NaN } as never),
    );
    expect(hedge).toHaveLength(3);
    expect(hedge.join('\n')).toMatch(/did you mean `percentile`/);
    const throttle = problemsOf(
      () => new AdaptiveThrottle({ k: 0, windowsMs: 5 } as never, new FakeClock(), Math.random),
    );
    expect(throttle.join('\n')).toMatch(/did you mean `windowMs`/);
    const limit = problemsOf(() =>
      readOptions('concurrencyLimit', CONCURRENCY_LIMIT_OPTIONS, {
        maxInFlight: 0,
        maxQeue: 3,
        adaptive: { min: 5, max: 2 },
      } as never),
    );
    expect(limit.join('\n')).toMatch(/did you mean `maxQueue`/);
    expect(limit.join('\n')).toMatch(/maxInFlight/);
    expect(limit.join('\n')).toMatch(/adaptive\.min/);
  });

  // Was a defect (fixed): `maxExtraLoad` took any number in (0, 0.5], so 1e-17 was accepted and read as
  // the percentile 1 − 1e-17 = 1, a quantile no latency source answers (the recorder's are 0 < q < 1):
  // a policy that never hedges, silently. Below 1e-4 it also passed `percentile`'s own ceiling,
  // p99.99. Expected: refused like `percentile: 1`. Actual: accepted, `percentile` 1, no hedge ever.
  it('Was a defect: maxExtraLoad below 0.0001 is refused, not read as a percentile of 1 (SPEC H1)', () => {
    for (const maxExtraLoad of [1e-17, 1e-5]) {
      expect(problemsOf(() => createHedgePolicy(fixedSource(10), { maxExtraLoad })).join('\n')).toMatch(
        /maxExtraLoad.*\[0\.0001, 0\.5\]/,
      );
    }
    const edge = createHedgePolicy(fixedSource(10), { maxExtraLoad: 0.0001 });
    expect(edge.percentile).toBe(0.9999);
    expect(edge.delayMs()).toBe(10);
  });
});

// ── retry budget ─────────────────────────────────────────────────────────────────────────────────

describe('retry budget (SPEC R1, R7, H3, V4)', () => {
  // Was a defect (fixed): a `now` of Infinity (given with the budget's own clock, or read from a custom
  // clock once) moved the window's head to index Infinity, where no later reading reaches: the window
  // never advanced again, so nothing ever expired and the budget became a lifetime ratio — 1,000
  // originals an hour ago still paying for 100 retries in an outage now (src/budget/window.ts
  // advance). Expected: the reading ignored, a window later the counts are gone. Actual: still there.
  it('Was a defect: one Infinity reading does not stop the window from forgetting', () => {
    const { clock, set } = steerableClock();
    const budget = createRetryBudget({ clock, windowMs: 1_000, minPerSecond: 0 });
    budget.recordOriginal(Number.POSITIVE_INFINITY, clock);
    for (let i = 0; i < 1_000; i += 1) budget.recordOriginal();
    set(100_000);
    expect(budget.state()).toEqual({ originals: 0, extras: 0, ratio: 0 });
    expect(budget.tryConsume()).toBe(false); // the outage's retries are not paid by old traffic
  });

  // Was a defect (fixed): a clock that read NaN when the budget was made left the head at index NaN;
  // every later step `index − NaN` is NaN and was ignored, so the window never moved (the same lifetime
  // ratio as above). Expected: the first finite reading places the head. Actual: counts kept forever.
  it('Was a defect: a clock that read NaN at construction does not freeze the window for good', () => {
    const { clock, set } = steerableClock(Number.NaN);
    const budget = createRetryBudget({ clock, windowMs: 1_000 });
    set(0);
    for (let i = 0; i < 1_000; i += 1) budget.recordOriginal();
    expect(budget.state().originals).toBe(1_000);
    set(100_000);
    expect(budget.state().originals).toBe(0);
  });

  it('a caller mixing two time bases (epoch readings with a monotonic clock) is never granted more than the budget (SPEC R1)', () => {
    // The readings alternate between ~1.7e12 and ~1e5. Were a step back taken as a new start, every
    // jump forward would empty the window and every retry be granted (a budget failing open).
    const { clock, advance } = steerableClock(100_000);
    const budget = createRetryBudget({ clock, windowMs: 10_000, minPerSecond: 1, maxRatio: 0.1 });
    let granted = 0;
    for (let i = 0; i < 1_000; i += 1) {
      advance(1);
      budget.recordOriginal();
      if (budget.tryConsume(1_700_000_000_000 + i, clock)) granted += 1;
    }
    expect(granted).toBeLessThanOrEqual(10 + 100); // the floor (1/s × 10 s) + 10% of 1,000
  });

  it('a clock stepped back far: the window waits for it, every count kept (none forgotten early)', () => {
    // A known limit, chosen (src/budget/window.ts advance): for the length of the step the ratio is
    // over a longer span than the window, never over nothing.
    const { clock, set, advance } = steerableClock(3_600_000);
    const budget = createRetryBudget({ clock, windowMs: 10_000, minPerSecond: 0 });
    for (let i = 0; i < 100; i += 1) budget.recordOriginal();
    set(0);
    budget.recordOriginal();
    advance(20_000);
    expect(budget.state().originals).toBe(101);
    set(3_600_000 + 20_000);
    expect(budget.state().originals).toBe(0);
  });

  it('a budget shared by many dependencies, each with its own clock reading passed in, keeps the invariant (property)', () => {
    // Each event comes from one of several callers sharing the budget: with the budget's clock and its
    // reading, with another clock (the budget reads its own), or with nothing. Whatever the mix,
    // when an extra is granted at t: extras granted in (t − windowMs, t] ≤ max(floor, 0.1 × originals
    // in (t − windowMs, t]) — on integers, 10 × extras ≤ 10 × floor or ≤ originals.
    const windowMs = 1_000;
    fc.assert(
      fc.property(
        fc.array(
          fc.record({
            gap: fc.integer({ min: 0, max: 400 }),
            kind: fc.constantFrom('original', 'extra'),
            via: fc.constantFrom('own', 'other', 'none'),
            floorPerSecond: fc.constant(0),
          }),
          { maxLength: 300 },
        ),
        fc.integer({ min: 0, max: 5 }),
        (events, minPerSecond) => {
          const clock = new FakeClock();
          const other = new FakeClock({ now: 123_456 });
          const budget = createRetryBudget({ clock, windowMs, buckets: 10, maxRatio: 0.1, minPerSecond });
          const floor = minPerSecond; // per 1 s window
          const originals: number[] = [];
          const extras: number[] = [];
          for (const e of events) {
            clock.advance(e.gap);
            const t = clock.now();
            const args: [number?, Clock?] =
              e.via === 'own' ? [t, clock] : e.via === 'other' ? [other.now(), other] : [];
            if (e.kind === 'original') {
              budget.recordOriginal(...args);
              originals.push(t);
            } else if (budget.tryConsume(...args)) {
              extras.push(t);
              const inWindow = (list: number[]) => list.filter((x) => x > t - windowMs).length;
              const spent = inWindow(extras);
              expect(spent <= floor || spent * 10 <= inWindow(originals)).toBe(true);
            }
            const s = budget.state();
            expect(Number.isFinite(s.ratio)).toBe(true);
            expect(s.ratio).toBe(s.originals > 0 ? s.extras / s.originals : 0);
          }
        },
      ),
    );
  });

  it('one budget shared by three failing dependencies: their extra attempts together stay within it (SPEC R1, V4)', async () => {
    const clock = new FakeClock();
    const budget = createRetryBudget({ clock, windowMs: 10_000, maxRatio: 0.1, minPerSecond: 1 });
    let sent = 0;
    const deps = ['a', 'b', 'c'].map((name) =>
      createDependency({
        name,
        p99Ms: 10,
        attempts: 3,
        clock,
        retryBudget: budget,
        random: () => 0.5,
        throttle: false,
      }),
    );
    const failing = (): Promise<never> => {
      sent += 1;
      return Promise.reject(Object.assign(new Error('reset'), { code: 'ECONNRESET' }));
    };
    const calls: Promise<unknown>[] = [];
    for (let i = 0; i < 300; i += 1) {
      calls.push(deps[i % 3]!.execute(failing, { idempotent: true }).catch(() => undefined));
      if (i % 30 === 29) await clock.advanceAsync(100);
    }
    await clock.runAllAsync();
    await Promise.all(calls);
    // 300 originals within one window: at most the floor (10) + 10% (30) extra attempts, all deps together.
    expect(sent - 300).toBeLessThanOrEqual(10 + 30);
    expect(sent - 300).toBeGreaterThan(0);
    const s = budget.state();
    expect(s.originals).toBe(300);
    expect(s.extras).toBe(sent - 300);
  });

  it('state() stays consistent and never NaN whatever `now` the callers pass (NaN, ±Infinity, back, forward) (property)', () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.tuple(
            fc.oneof(
              fc.integer({ min: -100_000, max: 100_000 }),
              fc.constantFrom(Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY),
            ),
            fc.boolean(),
          ),
          { maxLength: 200 },
        ),
        (events) => {
          const { clock, set } = steerableClock();
          const budget = createRetryBudget({ clock, windowMs: 1_000 });
          for (const [now, extra] of events) {
            set(now);
            if (extra) budget.tryConsume(now, clock);
            else budget.recordOriginal(now, clock);
            const s = budget.state();
            for (const v of [s.originals, s.extras, s.ratio]) {
              expect(Number.isFinite(v)).toBe(true);
              expect(v).toBeGreaterThanOrEqual(0);
            }
            expect(s.ratio).toBe(s.originals > 0 ? s.extras / s.originals : 0);
          }
        },
      ),
    );
  });
});

// ── latency recorder ─────────────────────────────────────────────────────────────────────────────

describe('latency recorder and its sketch (SPEC C1, C4, H1)', () => {
  const filled = (clock: Clock, windowMs = 1_000) => {
    const recorder = createLatencyRecorder({ clock, windowMs, minSamples: 1 });
    for (let i = 1; i <= 100; i += 1) recorder.record(i, 'success');
    return recorder;
  };

  // Was a defect (fixed): a read with `now` NaN (`quantile(q, NaN, clock)`, or a custom clock that read
  // NaN once) passed `elapsed < windowMs` (NaN compares false) and rotated: both windows reset with a
  // start of NaN, and from then on every read rotated again into an empty window — the recorder never
  // answered a quantile again (src/latency/recorder.ts #rotateIfDue). Expected: the reading ignored,
  // the p50 still served, later windows fill and answer. Actual: undefined for good.
  it('Was a defect: one NaN reading does not empty the recorder for good', () => {
    const { clock, set } = steerableClock();
    const recorder = filled(clock);
    set(1_000);
    expect(recorder.quantile(0.5)).toBeCloseTo(50, -0.5);
    expect(recorder.quantile(0.5, Number.NaN, clock)).toBeCloseTo(50, -0.5);
    set(1_500);
    for (let i = 0; i < 10; i += 1) recorder.record(7, 'success');
    set(2_100);
    expect(recorder.quantile(0.5)).toBeCloseTo(7, 0);
    expect(recorder.currentWindow().startedAt).toBe(2_000);
  });

  // Was a defect (fixed): a `now` of Infinity (`record(ms, outcome, Infinity, clock)`) rotated to a
  // window starting at Infinity; every later reading is before it, so the window never rotated again:
  // every sample piled into one window and `quantile` answered undefined for good. Expected: ignored.
  it('Was a defect: one Infinity reading does not freeze the windows for good', () => {
    const { clock, set } = steerableClock();
    const recorder = createLatencyRecorder({ clock, windowMs: 1_000, minSamples: 1 });
    recorder.record(5, 'success', Number.POSITIVE_INFINITY, clock);
    set(500);
    for (let i = 0; i < 10; i += 1) recorder.record(5, 'success');
    set(1_100);
    expect(recorder.quantile(0.5)).toBeCloseTo(5, 0);
    expect(recorder.lastWindow()?.successes).toBe(11);
  });

  // Was a defect (fixed): a custom clock stepped back an hour left the current window's start an hour
  // ahead: no rotation for an hour, so the quantiles served were the last window's, stale, and the
  // hour's samples piled into one window (calibration and hedging read a p99 an hour old: C4, H1).
  // Expected: a step back by more than a window restarts the current window's time from the new
  // reading, its samples kept. Actual: `quantile` answered the old window's value for the hour.
  it('Was a defect: a clock stepped back an hour does not serve an hour-old p99', () => {
    const { clock, set } = steerableClock(3_600_000);
    const recorder = filled(clock);
    set(3_601_000);
    expect(recorder.quantile(0.99)).toBeGreaterThan(90);
    set(0); // stepped back
    for (let i = 0; i < 100; i += 1) recorder.record(3, 'success');
    set(1_000);
    expect(recorder.quantile(0.99)).toBeCloseTo(3, 0);
  });

  it('a caller mixing two time bases never gets a stale quantile: the right one, or none (fails safe)', () => {
    const { clock, set } = steerableClock();
    const recorder = filled(clock); // p99 ≈ 99 ms
    for (let i = 0; i < 200; i += 1) {
      set(1_000 + i * 10);
      recorder.record(3, 'success');
      const q = recorder.quantile(0.99, 1_700_000_000_000 + i * 10, clock);
      if (q !== undefined) expect(q).toBeCloseTo(3, 0);
    }
  });

  it('quantile(0), quantile(1), quantile(NaN) and outside (0, 1) answer undefined, never a number or a throw', () => {
    const clock = new FakeClock();
    const recorder = filled(clock);
    clock.advance(1_000);
    for (const q of [0, 1, Number.NaN, -0, -1, 2, Number.POSITIVE_INFINITY, undefined as unknown as number]) {
      expect(recorder.quantile(q)).toBeUndefined();
    }
    expect(recorder.quantile(Number.MIN_VALUE)).toBe(1);
    const top = recorder.quantile(1 - Number.EPSILON)!;
    expect(top).toBeGreaterThan(97); // the largest samples, within α and the sketch's rank rounding
    expect(top).toBeLessThanOrEqual(100);
  });

  it('NaN, negative, Infinity and huge latencies: never NaN, clamped into [0, 1 day]', () => {
    const clock = new FakeClock();
    const recorder = createLatencyRecorder({ clock, windowMs: 1_000, minSamples: 1 });
    for (const v of [
      Number.NaN,
      -5,
      Number.NEGATIVE_INFINITY,
      Number.POSITIVE_INFINITY,
      Number.MAX_VALUE,
      1e-300,
    ])
      recorder.record(v, 'success');
    clock.advance(1_000);
    const last = recorder.lastWindow()!;
    expect(last.successes).toBe(5); // NaN: nothing to learn
    expect(last.max).toBe(86_400_000);
    for (const q of [0.01, 0.5, 0.99]) {
      const v = recorder.quantile(q)!;
      expect(v).toBeGreaterThanOrEqual(0);
      expect(v).toBeLessThanOrEqual(86_400_000);
    }
  });

  // Was a defect (fixed): `record` dropped only NaN, so a latency that is not a number reached the
  // sketch: '5' and '12.5' (read from a header, unparsed) made the window's max, p95 and p99 the
  // *string* "5" (12.5 lost: `'12.5' > '5'` is false as text), null, 'abc' and {} counted as 0 ms
  // successes pulling the p50 to 0, and a bigint threw out of `record` (src/latency/recorder.ts record).
  // Expected: what is not a number ignored, like NaN. Actual: p99 "5" (a string), p50 0, a TypeError.
  it('Was a defect: a latency that is not a number is ignored, never a string quantile or a 0 ms success', () => {
    const clock = new FakeClock();
    const recorder = createLatencyRecorder({ clock, windowMs: 1_000, minSamples: 1 });
    for (const v of ['5', '12.5', 'abc', null, undefined, {}, [], true, 7n] as unknown[]) {
      expect(() => recorder.record(v as number, 'success')).not.toThrow();
    }
    recorder.record(20, 'success');
    clock.advance(1_000);
    const last = recorder.lastWindow()!;
    expect(last.successes).toBe(1);
    for (const v of [last.p50, last.p95, last.p99, last.p999, last.max]) expect(v).toBeCloseTo(20, -0.5);
    expect(typeof recorder.quantile(0.99)).toBe('number');
  });

  it('an empty window and an idle spell answer undefined, and a jump forward of any size rotates in one step', () => {
    const clock = new FakeClock();
    const recorder = createLatencyRecorder({ clock, windowMs: 1_000, minSamples: 1 });
    expect(recorder.quantile(0.5)).toBeUndefined();
    expect(recorder.lastWindow()).toBeUndefined();
    recorder.record(5, 'success');
    clock.advance(1_000);
    expect(recorder.quantile(0.5)).toBeCloseTo(5, 0);
    clock.advance(Number.MAX_SAFE_INTEGER / 2);
    expect(recorder.quantile(0.5)).toBeUndefined();
    expect(recorder.lastWindow()?.count).toBe(0);
    recorder.record(9, 'success');
    clock.advance(1_000);
    expect(recorder.quantile(0.5)).toBeCloseTo(9, 0);
  });

  it('memory stays bounded under two million distinct values spanning the whole double range', () => {
    const before = sketches.length;
    const clock = new FakeClock();
    const recorder = createLatencyRecorder({ clock, windowMs: 86_400_000, relativeAccuracy: 0.0001 });
    const made = sketches.slice(before);
    expect(made).toHaveLength(2);
    const random = seededRandom(7);
    for (let i = 0; i < 2_000_000; i += 1) recorder.record(2 ** (random() * 2_000 - 1_000), 'success');
    // At α = 0.0001 the sketch needs ln(1 day / 1 µs) / ln(1.0002) ≈ 125,000 bins for every value it
    // can hold; without the clamp it would need ~7 million for the 2^±1000 range.
    const bins = Math.max(...made.map((s) => s.store.bins.length));
    expect(bins).toBeLessThan(200_000);
    expect(recorder.currentWindow().successes).toBe(2_000_000);
  });

  it('quantiles are monotone in q and within the samples seen, cached or not (property)', () => {
    fc.assert(
      fc.property(
        fc.array(fc.double({ min: 0, max: 1e7, noNaN: true }), { minLength: 1, maxLength: 300 }),
        fc.array(fc.double({ min: 1e-9, max: 1 - 1e-9, noNaN: true }), { minLength: 1, maxLength: 40 }),
        (samples, qs) => {
          const clock = new FakeClock();
          const recorder = createLatencyRecorder({ clock, windowMs: 1_000, minSamples: 1 });
          for (const s of samples) recorder.record(s, 'success');
          clock.advance(1_000);
          const sorted = [...qs, 0.5, 0.95, 0.99, 0.999].sort((a, b) => a - b);
          const values = sorted.map((q) => recorder.quantile(q)!);
          const lo = Math.min(...samples.map((s) => (s < 0.001 ? 0 : s)));
          const hi = Math.max(...samples);
          for (let i = 0; i < values.length; i += 1) {
            expect(values[i]).toBeGreaterThanOrEqual(lo);
            expect(values[i]).toBeLessThanOrEqual(hi);
            if (i > 0) expect(values[i]).toBeGreaterThanOrEqual(values[i - 1]!);
          }
        },
      ),
    );
  });
});

// ── hedge policy ─────────────────────────────────────────────────────────────────────────────────

describe('hedge policy (SPEC H1–H3)', () => {
  // Was a defect (fixed): the policy kept any quantile `>= 0` from its source, so a source answering
  // Infinity (a broken recorder, a user's LatencySource) made `delayMs()` Infinity — a hedge armed
  // never to fire, passed to a timer that clamps it to 24.8 days — and `timeLeftMs()` Infinity, which
  // refuses every hedge while claiming a quantile; a numeric string ('50') went through as a string
  // delay. Expected: no quantile, no hedge (undefined). Actual: Infinity, and '50'.
  it('Was a defect: a source answering Infinity or a string gives no hedge, not an infinite or string delay', () => {
    for (const broken of [Number.POSITIVE_INFINITY, '50', null, Number.NaN, -1, {}]) {
      const policy = createHedgePolicy(fixedSource(broken));
      expect(policy.delayMs(), String(broken)).toBeUndefined();
      expect(policy.timeLeftMs(), String(broken)).toBeUndefined();
    }
    expect(createHedgePolicy(fixedSource(0)).delayMs()).toBe(5); // the floor
  });

  it('a delay is always a finite number in [minDelayMs, maxDelayMs], or undefined (property)', () => {
    fc.assert(
      fc.property(
        fc.oneof(fc.double(), fc.constantFrom(undefined, null, '7', Number.MAX_VALUE)),
        fc.double({ min: 0, max: 1_000, noNaN: true }),
        fc.double({ min: 0, max: 1_000, noNaN: true }),
        (value, a, b) => {
          const [minDelayMs, maxDelayMs] = a <= b ? [a, b] : [b, a];
          const policy = createHedgePolicy(fixedSource(value), { minDelayMs, maxDelayMs });
          const delay = policy.delayMs();
          if (delay === undefined) return;
          expect(typeof delay).toBe('number');
          expect(delay).toBeGreaterThanOrEqual(minDelayMs);
          expect(delay).toBeLessThanOrEqual(maxDelayMs);
        },
      ),
    );
  });

  it('no source, or one without quantile(), is refused with the options problems', () => {
    const problems = problemsOf(() => createHedgePolicy(undefined as never, { minDelayMs: -1 }));
    expect(problems).toHaveLength(2);
    expect(problems.join('\n')).toMatch(/quantile/);
  });
});

// ── adaptive throttle ────────────────────────────────────────────────────────────────────────────

describe('adaptive throttle (SPEC X11)', () => {
  // Was a defect (fixed): an attempt counted at `now` Infinity moved the window's head to index
  // Infinity, where no later reading reaches: the window never moved again, so the failures of an
  // outage were never forgotten and the throttle refused 90% of the calls (its cap) for good, long
  // after the dependency was back (src/throttle/throttle.ts #advance). Expected: the reading ignored,
  // a window later nothing refused. Actual: probability 0.9 forever.
  it('Was a defect: one Infinity reading does not keep refusing calls for good', () => {
    const clock = new FakeClock();
    const throttle = new AdaptiveThrottle({}, clock, seededRandom(3));
    throttle.count(Number.POSITIVE_INFINITY, false);
    for (let i = 0; i < 100; i += 1) throttle.count(i, false);
    expect(throttle.state(100).probability).toBeCloseTo(0.9);
    expect(throttle.state(5_000)).toEqual({ requests: 0, accepts: 0, probability: 0 });
    expect(throttle.admit(5_000)).toBe(true);
  });

  // Was a defect (fixed): a clock that read NaN when the throttle was made left its head at index NaN,
  // and every later step (`index − NaN`) was ignored: the window never moved, the counts never expired
  // (the same refusals for good). Expected: the first finite reading places the head. Actual: 50
  // requests still counted 10 s later.
  it('Was a defect: a clock that read NaN at first does not freeze the window; it starts at the first real reading', () => {
    const { clock, set } = steerableClock(Number.NaN);
    const throttle = new AdaptiveThrottle({}, clock, seededRandom(4));
    for (let i = 0; i < 50; i += 1) throttle.count(i, false);
    expect(throttle.state(49).requests).toBe(50);
    set(10_000);
    expect(throttle.state().requests).toBe(0);
  });
});

// ── concurrency limiter ──────────────────────────────────────────────────────────────────────────

describe('concurrency limiter and gradient limit (SPEC X7)', () => {
  const waiter = (log: string[], name: string): LimitWaiter => ({ granted: () => log.push(name) });

  it('release without acquire, release twice, cancel twice and cancel after the grant never make room that is not there', () => {
    const limiter = new ConcurrencyLimiter({ maxInFlight: 2, maxQueue: 5 }, new FakeClock());
    limiter.release(); // nothing held
    expect(limiter.inFlight).toBe(0);
    expect(limiter.tryAcquire()).toBe(true);
    expect(limiter.tryAcquire()).toBe(true);
    expect(limiter.tryAcquire()).toBe(false);
    const log: string[] = [];
    const a = waiter(log, 'a');
    const b = waiter(log, 'b');
    expect(limiter.enqueue(a)).toBe(true);
    expect(limiter.enqueue(b)).toBe(true);
    limiter.cancel(a);
    limiter.cancel(a);
    expect(limiter.queued).toBe(1);
    limiter.release();
    expect(log).toEqual(['b']);
    limiter.cancel(b); // already granted: it holds a slot, the cancel is too late to matter
    expect(limiter.inFlight).toBe(2);
    expect(limiter.queued).toBe(0);
    limiter.release();
    limiter.release();
    limiter.release();
    expect(limiter.inFlight).toBe(0);
    expect(limiter.state()).toMatchObject({ limit: 2, inFlight: 0, queued: 0 });
  });

  it('never more than the limit in flight, the queue never past maxQueue, and every slot comes back (property)', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 5 }),
        fc.integer({ min: 0, max: 5 }),
        fc.array(
          fc.constantFrom('acquire', 'enqueue', 'cancel', 'release', 'stray-release', 'cancel-twice'),
          {
            maxLength: 200,
          },
        ),
        (maxInFlight, maxQueue, ops) => {
          const limiter = new ConcurrencyLimiter({ maxInFlight, maxQueue }, new FakeClock());
          let held = 0;
          const waiting: LimitWaiter[] = [];
          let cancelled = 0;
          let granted = 0;
          const make = (): LimitWaiter => {
            const w: LimitWaiter = {
              granted: () => {
                granted += 1;
                held += 1;
              },
            };
            return w;
          };
          for (const op of ops) {
            if (op === 'acquire' && limiter.tryAcquire()) held += 1;
            else if (op === 'enqueue') {
              // As the executor does: a call waits only when it could not take a slot at once (a
              // waiter is granted by a release, never inside `enqueue`, whose caller arms its wait after).
              const w = make();
              if (limiter.tryAcquire()) held += 1;
              else if (limiter.enqueue(w)) waiting.push(w);
            } else if ((op === 'cancel' || op === 'cancel-twice') && waiting.length > 0) {
              const w = waiting.shift()!;
              if (w.queued === true) cancelled += 1;
              limiter.cancel(w);
              if (op === 'cancel-twice') limiter.cancel(w);
            } else if (op === 'release' && held > 0) {
              held -= 1;
              limiter.release();
            } else if (op === 'stray-release' && limiter.inFlight === 0) limiter.release(); // nothing held at all
            expect(limiter.inFlight).toBeLessThanOrEqual(maxInFlight);
            expect(limiter.inFlight).toBe(held);
            expect(limiter.queued).toBeLessThanOrEqual(maxQueue);
          }
          const queuedAtEnd = waiting.filter((w) => w.queued === true).length;
          const before = granted;
          while (held > 0) {
            held -= 1;
            limiter.release();
          }
          expect(granted - before).toBe(queuedAtEnd); // every waiter left ends granted
          expect(limiter.inFlight).toBe(0);
          expect(limiter.queued).toBe(0);
          expect(cancelled + granted).toBeLessThanOrEqual(waiting.length + granted + cancelled);
        },
      ),
    );
  });

  /** A shared budget (a user's object) whose `recordOriginal` throws `throws` more times. */
  function queuedBehindBrokenBudget() {
    const clock = new FakeClock();
    const state = { throws: 0 };
    const budget = {
      recordOriginal(): void {
        if (state.throws > 0) {
          state.throws -= 1;
          throw new Error('budget broke');
        }
      },
      tryConsume: () => false,
      state: () => ({ originals: 0, extras: 0, ratio: 0 }),
    };
    const dep = createDependency({
      name: 'limited',
      p99Ms: 10,
      attempts: 1,
      clock,
      retryBudget: budget,
      concurrencyLimit: { maxInFlight: 1, maxQueue: 5 },
      defaultDeadlineMs: 10_000,
    });
    const results: Record<string, string> = {};
    const call = (name: string): void => {
      const op = () => new Promise<string>((resolve) => clock.setTimer(() => resolve('ok'), 5));
      dep.execute(op, { idempotent: true }).then(
        (v) => {
          results[name] = v;
        },
        (e: Error) => {
          results[name] = `error: ${e.message}`;
        },
      );
    };
    const drain = async (): Promise<void> => {
      await clock.runAllAsync();
      for (let i = 0; i < 10; i += 1) await new Promise<void>((resolve) => setImmediate(resolve));
    };
    return { state, call, drain, results };
  }

  // Was a defect (fixed): the limiter called each waiter's `granted()` bare inside `release()`, so a
  // waiter that threw (the executor's grant calls the shared budget's `recordOriginal`, a user's object)
  // threw out of the *releasing* attempt's settle: the call holding the slot, answered 'ok', never
  // settled, and an unhandled rejection escaped (src/limit/limiter.ts #grant). Expected: the releaser
  // settles with its answer; the waiter's failure stays the waiter's (a process warning here).
  // Actual: call `a` pending for ever.
  it('Was a defect: a waiter whose grant throws no longer leaves the call that released the slot unsettled (SPEC X7)', async () => {
    const warned = vi.spyOn(process, 'emitWarning').mockImplementation(() => {});
    try {
      const { state, call, drain, results } = queuedBehindBrokenBudget();
      call('a');
      state.throws = 1;
      call('b'); // waits for a's slot; its grant will throw
      await drain();
      expect(results.a).toBe('ok');
      // The executor's grant now settles the waiter with the budget's error itself (the limiter's
      // guard, a warning, stays for any other waiter that throws).
      expect(results.b).toBe('error: budget broke');
    } finally {
      warned.mockRestore();
    }
  });

  // Was a defect (fixed): the executor's grant called the budget's `recordOriginal` unguarded after
  // clearing its wait (src/dependency/execution.ts `granted`), so when it threw the queued call `b` was
  // neither started nor rejected — it hung for ever — and the slot it was handed was never given back:
  // `c`, queued behind it, failed "no slot freed within 9990 ms" with the limit idle. Expected: `b`
  // rejects with the budget's error and its slot goes to `c`.
  it('Was a defect: a queued call whose budget throws at its grant settles, and its slot goes to the next call (SPEC X7)', async () => {
    const warned = vi.spyOn(process, 'emitWarning').mockImplementation(() => {});
    try {
      const { state, call, drain, results } = queuedBehindBrokenBudget();
      call('a');
      state.throws = 1;
      call('b');
      call('c');
      await drain();
      expect(results.b).toBe('error: budget broke');
      expect(results.c).toBe('ok');
    } finally {
      warned.mockRestore();
    }
  });

  // Was a defect (fixed): a sample at `now` Infinity started a window at Infinity, and a sample judges
  // its window only once `now − start ≥ windowMs`, never again true: the adaptive limit stopped moving
  // for good, at whatever it stood (src/limit/gradient.ts sample). Expected: the reading ignored, the
  // limit still shrinks when latency triples. Actual: the limit stuck at its initial 20.
  it('Was a defect: one Infinity reading does not stop the adaptive limit from following latency', () => {
    const limit = new GradientLimit(gradientSettings({ initial: 20, windowMs: 100, minSamples: 1 }), 0);
    limit.sample(10, Number.POSITIVE_INFINITY, 20);
    let now = 0;
    const windows = (count: number, rttMs: number): void => {
      for (let w = 0; w < count; w += 1) {
        for (let i = 0; i < 10; i += 1) limit.sample(rttMs, now + i, 20);
        now += 100;
      }
    };
    windows(3, 10);
    windows(10, 60);
    expect(limit.limit).toBeLessThan(15);
  });

  // Was a defect (fixed): a clock stepped back left the window's start ahead of every reading, so no
  // window was judged until the clock came back to it: the limit stood still while latency rose
  // sixfold. Expected: a step back by more than a window is a pause (window and horizon resume from
  // it); a reading late by less is only ignored. Actual: the limit stuck at its initial 20.
  it('Was a defect: a clock stepped back far keeps the adaptive limit judging windows; a late reading is only ignored', () => {
    const limit = new GradientLimit(
      gradientSettings({ initial: 20, windowMs: 100, minSamples: 1 }),
      1_000_000,
    );
    let now = 1_000_000;
    const windows = (count: number, rttMs: number): void => {
      for (let w = 0; w < count; w += 1) {
        for (let i = 0; i < 10; i += 1) limit.sample(rttMs, now + i, 20);
        limit.sample(rttMs, now - 50, 20); // late by half a window: ignored, no judging
        now += 100;
      }
    };
    windows(3, 10);
    now = 0; // stepped back
    windows(10, 60);
    expect(limit.limit).toBeLessThan(15);
  });
});

// ── instance set ─────────────────────────────────────────────────────────────────────────────────

describe('instance set: power of two choices, ejection (SPEC X5)', () => {
  it('picks over 0, 1 and many instances: undefined, that one, one of them', () => {
    const clock = new FakeClock();
    const set = instanceSet(clock);
    expect(set.pick(0)).toBeUndefined();
    set.replace(entries('a'));
    const only = set.pick(0)!;
    expect(only.key).toBe('a');
    expect(set.pick(0, [only])).toBe(only); // nothing else: the excluded one after all
    set.settle(only, 'success', 10, 0);
    set.settle(only, 'success', 10, 0);
    set.replace(entries('a', 'b', 'c', 'd'));
    const seen = new Set<string>();
    for (let i = 0; i < 400; i += 1) {
      const p = set.pick(0)!;
      seen.add(p.key);
      set.settle(p, 'success', 10, 0);
    }
    expect([...seen].sort()).toEqual(['a', 'b', 'c', 'd']);
  });

  // Was a defect (fixed): a pick indexed the rotation with `floor(random() × m) % m`, so a random
  // source answering NaN, a negative or Infinity (the dependency's `random` option: any function)
  // read an index outside it, and the pick threw "Cannot read properties of undefined (reading
  // 'ewma')" (src/balance/instances.ts pick). Expected: such a draw clamped into [0, 1), as the backoff's
  // jitter does, and a pick made. Actual: a TypeError out of the pick.
  it('Was a defect: a random source outside [0, 1) still picks an instance of the set', () => {
    const clock = new FakeClock();
    for (const value of [Number.NaN, -0.5, Number.NEGATIVE_INFINITY, 1, 7, Number.POSITIVE_INFINITY]) {
      const set = instanceSet(clock, () => value);
      set.replace(entries('a', 'b', 'c'));
      const picked = set.pick(0);
      expect(['a', 'b', 'c'], String(value)).toContain(picked?.key);
    }
  });

  // Was a defect (fixed): `settle` took any instance, so one picked from another set (or a stale
  // handle) was ejected through this set: `#leave` took this set's last instance out of the rotation
  // and put it at the foreign instance's slot, leaving one of this set's active instances never picked
  // again, and the other set's rotation holding an instance marked out. Expected: an instance this
  // set does not hold changes nothing here. Actual: 'x' active but never picked, 'p' ejected by `a`.
  it('Was a defect: settling an instance of another set corrupts neither set', () => {
    const clock = new FakeClock();
    const a = instanceSet(clock);
    const b = instanceSet(clock);
    a.replace(entries('x', 'y', 'z'));
    b.replace(entries('p', 'q'));
    const foreign = b.pick(0)!;
    a.settle(foreign, 'failure', 10, 0);
    expect(a.available).toBe(3);
    expect(b.available).toBe(2);
    expect(b.states().map((s) => s.state)).toEqual(['active', 'active']);
    const seen = new Set<string>();
    for (let i = 0; i < 300; i += 1) {
      const p = a.pick(0)!;
      seen.add(p.key);
      a.settle(p, 'success', 10, 0);
    }
    expect([...seen].sort()).toEqual(['x', 'y', 'z']);
    b.settle(foreign, 'success', 10, 0); // its own set still settles it
    expect(b.get(foreign.key)!.inFlight).toBe(0);
  });

  // Was a defect (fixed): a failure settled at `now` Infinity (a custom clock's bad reading) ejected its
  // instance until Infinity — out for good, an hour later still ejected — and its estimate, stored at
  // Infinity, never decayed again; a pick at Infinity returned every ejected instance on a probation
  // that never ends (src/balance/instances.ts settle, pick). Expected: a reading that is not a finite
  // number replaced by the set's own clock. Actual: 'ejected' an hour later.
  it('Was a defect: one Infinity reading does not eject an instance for good', () => {
    const clock = new FakeClock();
    const set = instanceSet(clock);
    set.replace(entries('a', 'b', 'c'));
    const failed = set.pick(0)!;
    set.settle(failed, 'failure', 10, Number.POSITIVE_INFINITY);
    expect(set.states().find((s) => s.instance === failed.key)?.state).toBe('ejected');
    clock.advance(3_600_000);
    expect(set.states().find((s) => s.instance === failed.key)?.state).toBe('probation');
    set.pick(Number.NaN);
    set.pick(Number.POSITIVE_INFINITY);
    for (const s of set.states()) expect(Number.isFinite(s.estimateMs)).toBe(true);
    expect(set.available).toBe(3);
  });

  it('every instance failing: never the last one ejected, and the one left is still picked', () => {
    const clock = new FakeClock();
    for (const n of [1, 2, 3, 10]) {
      const set = instanceSet(clock);
      set.replace(entries(...Array.from({ length: n }, (_, i) => `i${i}`)));
      for (let i = 0; i < 200; i += 1) {
        const p = set.pick(clock.now());
        expect(p).toBeDefined();
        set.settle(p!, 'failure', 100, clock.now());
      }
      expect(set.available).toBeGreaterThanOrEqual(1);
      expect(set.states().filter((s) => s.state === 'ejected').length).toBeLessThanOrEqual(
        Math.max(0, n - 1),
      );
    }
  });

  it('replace() with duplicate keys keeps one instance per key (the first value); settling a removed one is harmless', () => {
    const clock = new FakeClock();
    const set = instanceSet(clock);
    set.replace([
      { key: 'a', value: 'first' },
      { key: 'a', value: 'second' },
      { key: 'b', value: 'b' },
    ]);
    expect(set.size).toBe(2);
    expect(set.get('a')!.value).toBe('first');
    const held = set.pick(0, [set.get('b')!])!;
    expect(held.key).toBe('a');
    expect(set.replace(entries('b'))).toEqual(['first']);
    set.settle(held, 'failure', 10, 0);
    set.settle(held, 'failure', 10, 0); // twice, after removal
    expect(held.inFlight).toBe(0);
    expect(set.available).toBe(1);
    set.replace([{ key: 'a', value: 'again' }, ...entries('b')]);
    set.settle(held, 'success', 10, 0); // the old handle of a key that came back: not the new instance
    expect(set.get('a')!.value).toBe('again');
    expect(set.get('a')!.inFlight).toBe(0);
  });

  it('in-flight counts come back to 0 once every pick is settled, and ejections stay within their share, whatever the verdicts (property)', () => {
    const verdicts: InstanceVerdict[] = ['success', 'failure', 'unanswered', 'lost', 'neutral'];
    fc.assert(
      fc.property(
        fc.array(
          fc.tuple(
            fc.constantFrom(...verdicts),
            fc.double({ min: -10, max: 1e6 }),
            fc.integer({ min: 0, max: 5_000 }),
          ),
          { maxLength: 150 },
        ),
        fc.integer({ min: 1, max: 6 }),
        (steps, n) => {
          const clock = new FakeClock();
          const set = instanceSet(clock, seededRandom(n), 2);
          set.replace(entries(...Array.from({ length: n }, (_, i) => `i${i}`)));
          const open: Instance<string>[] = [];
          for (const [verdict, ms, gap] of steps) {
            clock.advance(gap);
            const p = set.pick(clock.now());
            expect(p).toBeDefined();
            open.push(p!);
            if (open.length > 3) set.settle(open.shift()!, verdict, ms, clock.now());
            expect(set.available).toBeGreaterThanOrEqual(1);
            const out = set.states().filter((s) => s.state === 'ejected').length;
            expect(out).toBeLessThanOrEqual(ejectionAllowance(n, 0.1)); // never past the share, never the last
          }
          for (const p of open) set.settle(p, 'neutral', 0, clock.now());
          for (const s of set.states()) {
            expect(s.inFlight).toBe(0);
            expect(Number.isFinite(s.estimateMs)).toBe(true);
          }
        },
      ),
    );
  });
});

// ── DNS discovery ────────────────────────────────────────────────────────────────────────────────

describe('DNS discovery (SPEC X5)', () => {
  type Callback = (error: unknown, address?: unknown, family?: unknown) => void;

  function discover(
    lookup: (host: string, options: unknown, callback: Callback) => void,
    clock = new FakeClock(),
  ) {
    const addresses: (readonly LookupAddress[])[] = [];
    const errors: unknown[] = [];
    const discovery = new DnsDiscovery({
      hostname: 'svc.local',
      intervalMs: 1_000,
      timeoutMs: 500,
      clock,
      lookup: lookup as never,
      onAddresses: (a) => addresses.push(a),
      onError: (e) => errors.push(e),
    });
    discovery.start();
    return { discovery, addresses, errors, clock };
  }

  // Was a defect (fixed): a custom lookup that failed with something that is not an Error (a string, a
  // plain object) had it handed to `onError` as is, while a lookup that *threw* the same value was
  // wrapped in an Error: prazo/http put the string into its `discovery-failed` event and a
  // NoInstanceError's cause, where an Error (message, code) is promised. Expected: an Error whose
  // message is the value's text. Actual: the bare string 'boom'.
  it('Was a defect: a lookup failing with a string reaches the owner as an Error', () => {
    const { errors, discovery } = discover((_h, _o, cb) => cb('boom'));
    discovery.stop();
    expect(errors).toHaveLength(1);
    expect(errors[0]).toBeInstanceOf(Error);
    expect((errors[0] as Error).message).toBe('boom');
  });

  it('a lookup that throws, answers garbage, answers twice or never: the owner hears an Error or clean addresses', () => {
    const thrown = discover(() => {
      throw 'str';
    });
    expect(thrown.errors[0]).toBeInstanceOf(Error);
    thrown.discovery.stop();

    const garbage = discover((_h, _o, cb) =>
      cb(null, [
        { address: 5 },
        null,
        'x',
        { address: '' },
        { address: '10.0.0.2', family: 'weird' },
        { address: '10.0.0.1' },
        { address: '10.0.0.1' },
      ]),
    );
    expect(garbage.addresses).toEqual([
      [
        { address: '10.0.0.1', family: 4 },
        { address: '10.0.0.2', family: 4 },
      ],
    ]);
    garbage.discovery.stop();

    for (const nothing of [undefined, null, 42, {}, []]) {
      const empty = discover((_h, _o, cb) => cb(null, nothing));
      expect(empty.addresses).toEqual([]);
      expect((empty.errors[0] as { code?: string }).code).toBe('ENODATA');
      empty.discovery.stop();
    }

    const twice = discover((_h, _o, cb) => {
      cb(null, [{ address: '10.0.0.3', family: 4 }]);
      cb(null, [{ address: '10.0.0.4', family: 4 }]);
    });
    expect(twice.addresses).toEqual([[{ address: '10.0.0.3', family: 4 }]]);
    twice.discovery.stop();

    let calls = 0;
    const hung = discover(() => {
      calls += 1; // never calls back
    });
    hung.clock.advance(500);
    expect((hung.errors[0] as { code?: string }).code).toBe('ETIMEOUT');
    hung.clock.advance(1_000);
    expect(calls).toBe(2); // the next lookup went at the interval
    hung.discovery.stop();
    expect(hung.clock.pendingTimers()).toBe(0);
  });
});

describe('a hedge latency source that throws (SPEC H1)', () => {
  // Was a defect (fixed): the hedge policy asked its latency source unguarded (src/hedge/policy.ts):
  // a source of the caller's making that throws failed every call with its error as the call armed
  // its hedge (after the original attempt was already running, its value then never returned nor
  // discarded), and asked again from the hedge's timer, the throw escaped from the timer. Expected:
  // no hedge, one warning, every call answered by its original attempt.
  it('Was a defect: a latency source that throws means no hedge, not failed calls', async () => {
    const warned = vi.spyOn(process, 'emitWarning').mockImplementation(() => {});
    try {
      const clock = new FakeClock();
      let broken = false;
      const recorder = {
        record(): void {},
        quantile(): number {
          if (broken) throw new Error('quantile broke');
          return 5;
        },
        currentWindow: () => ({ count: 100 }),
      };
      const dep = createDependency({ name: 'h', p99Ms: 10, clock, hedge: true, recorder: recorder as never });
      broken = true;
      const results: string[] = [];
      for (let i = 0; i < 3; i += 1) {
        dep
          .execute(() => new Promise<string>((resolve) => clock.setTimer(() => resolve('ok'), 3)), {
            idempotent: true,
          })
          .then(
            (v) => results.push(v),
            (e: Error) => results.push(`error: ${e.message}`),
          );
      }
      await clock.runAllAsync();
      for (let i = 0; i < 5; i += 1) await new Promise<void>((resolve) => setImmediate(resolve));
      expect(results).toEqual(['ok', 'ok', 'ok']);
      expect(warned.mock.calls.filter(([m]) => /quantile broke/.test(String(m)))).toHaveLength(1);
    } finally {
      warned.mockRestore();
    }
  });
});
