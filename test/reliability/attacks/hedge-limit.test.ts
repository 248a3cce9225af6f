import type { LookupAddress } from 'node:dns';
import fc from 'fast-check';
import { describe, expect, it, vi } from 'vitest';
import { DnsDiscovery } from '../../../src/balance/discovery.js';
import { ejectionSettings } from '../../../src/balance/ejection.js';
import { type Instance, InstanceSet, type InstanceVerdict } from '../../../src/balance/instances.js';
import { INSTANCES_OPTIONS, normalizeOrigin } from '../../../src/balance/options.js';
import { FakeClock } from '../../../src/clock/fake.js';
import { createDependency } from '../../../src/dependency/index.js';
import { InvalidOptionsError } from '../../../src/errors/index.js';
import { createHedgePolicy } from '../../../src/hedge/policy.js';
import { createLatencyRecorder } from '../../../src/latency/recorder.js';
import type { LatencySource } from '../../../src/latency/types.js';
import { ConcurrencyLimiter } from '../../../src/limit/limiter.js';
import { readOptions } from '../../../src/options/validator.js';
import { seededRandom } from '../../../src/testing/random.js';
import { anyCallerValue } from '../fuzz/arbitraries.js';

/**
 * Attacks on hedging, the concurrency limit, the instance set (balance, ejection, discovery) and the
 * shared abort fan-out, as a hostile or careless caller reaches them: `createHedgePolicy`
 * (`prazo/retry`), a dependency's `hedge` and `concurrencyLimit` options (`createDependency`), an
 * HTTP client's instances (`prazo/http`'s `origins`, `discovery`, `balance`, `ejection`) and the
 * signals every call listens to. Values a caller's code may hand over: revoked Proxies, getters that
 * throw, thrown values that cannot even be turned into text, NaN/±Infinity/huge numbers, thousands of
 * waiters or subscribers at once.
 *
 * Not repeated here: what blocks-api.test.ts and throttle.test.ts already attack (the recorder and its
 * sketch, the retry budget, option ranges, a latency source answering Infinity or a string, the
 * limiter's release/cancel twice and its property test, the instance set's random source and foreign
 * handles, discovery's garbage answers).
 *
 * A test named "Was a defect: ..." pinned a defect found here: it fails on the code before its fix.
 */

// ── helpers ──────────────────────────────────────────────────────────────────────────────────────

const revoked = (): object => {
  const { proxy, revoke } = Proxy.revocable({}, {});
  revoke();
  return proxy;
};

const throwingGetter = (key: string, thrown: unknown = new TypeError(`no ${key} for you`)): object =>
  Object.defineProperty({}, key, {
    enumerable: true,
    get() {
      throw thrown;
    },
  });

/** Values whose `String()` throws: what a caller's code may throw, and a message must still be made. */
const unprintable = (): unknown[] => [
  Object.create(null),
  revoked(),
  {
    toString() {
      throw new Error('no text');
    },
  },
];

/** Any double: NaN, ±Infinity, ±0, the largest and smallest, and ordinary latencies. */
const anyDouble = fc.oneof(
  fc.double(),
  fc.constantFrom(
    Number.NaN,
    Number.POSITIVE_INFINITY,
    Number.NEGATIVE_INFINITY,
    Number.MAX_VALUE,
    1e308,
    -0,
  ),
  fc.double({ min: 0, max: 1e4, noNaN: true }),
);

/**
 * Anything a caller can pass, hostile values too: fast-check cannot carry a revoked Proxy through its
 * generation, so it generates markers that {@link materialize} turns into one (or into an object
 * without a prototype, a getter that throws one, a `toString` that throws).
 */
const anyValue = fc.oneof(
  anyCallerValue,
  fc.constantFrom('@@revoked', '@@no-prototype', '@@getter', '@@toString'),
);

function materialize(value: unknown, depth = 0): unknown {
  if (value === '@@revoked') return revoked();
  if (value === '@@no-prototype') return Object.create(null);
  if (value === '@@getter') return throwingGetter('percentile', Object.create(null));
  if (value === '@@toString') return unprintable()[2];
  if (depth > 3 || value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) return value.map((v) => materialize(v, depth + 1));
  if (Object.getPrototypeOf(value) !== Object.prototype) return value;
  const out: Record<string, unknown> = {};
  for (const [key, v] of Object.entries(value)) {
    Object.defineProperty(out, key, { value: materialize(v, depth + 1), enumerable: true, writable: true });
  }
  return out;
}

/**
 * Options objects of `keys` (and prototype keys) holding anything, or anything instead of options: to
 * {@link materialize} inside the property (fast-check inspects what it generates).
 */
const optionsOf = (keys: string[]) =>
  fc.oneof(
    anyValue,
    fc.dictionary(fc.constantFrom(...keys, '__proto__', 'constructor'), anyValue),
    fc.record(Object.fromEntries(keys.map((k) => [k, anyValue])), { requiredKeys: [] }),
  );

/** Runs `build`: it returns, or throws prazo's InvalidOptionsError; any other throw fails the property. */
function returnsOrRefuses(build: () => unknown): void {
  try {
    build();
  } catch (error) {
    if (!(error instanceof InvalidOptionsError)) throw error;
  }
}

const fixedSource = (value: unknown): LatencySource => ({
  record: () => {},
  quantile: () => value as number,
  lastWindow: () => undefined,
  currentWindow: () => {
    throw new Error('unused');
  },
});

/** The problems of an InvalidOptionsError thrown by `build`, or fails. */
function problemsOf(build: () => unknown): readonly string[] {
  try {
    build();
  } catch (error) {
    expect(error).toBeInstanceOf(InvalidOptionsError);
    expect((error as InvalidOptionsError).code).toBe('INVALID_OPTIONS');
    return (error as InvalidOptionsError).problems;
  }
  throw new Error('expected an InvalidOptionsError');
}

// ── hedge policy ─────────────────────────────────────────────────────────────────────────────────

describe('createHedgePolicy given what cannot be read (SPEC H1)', () => {
  // Was a defect (fixed): `typeof source?.quantile` and the validator's read of the options
  // (src/options/validator.ts, which now reads what it is given once, each getter guarded) ran
  // unguarded, so a revoked Proxy or a getter that throws (as the source, or as the options) threw a
  // bare TypeError out of the factory (src/hedge/policy.ts). Expected: InvalidOptionsError, the
  // unreadable value one problem among the others. Actual: "Cannot perform 'get' on a proxy that has
  // been revoked".
  it('Was a defect: a revoked Proxy or a throwing getter as the source or the options is an InvalidOptionsError', () => {
    expect(problemsOf(() => createHedgePolicy(revoked() as never)).join('\n')).toMatch(
      /latency source cannot be read/,
    );
    expect(problemsOf(() => createHedgePolicy(throwingGetter('quantile') as never)).join('\n')).toMatch(
      /latency source cannot be read: TypeError: no quantile for you/,
    );
    expect(problemsOf(() => createHedgePolicy(fixedSource(10), revoked() as never)).join('\n')).toMatch(
      /options cannot be read/,
    );
    const both = problemsOf(() =>
      createHedgePolicy(Object.create(throwingGetter('quantile')), throwingGetter('percentile') as never),
    );
    expect(both).toHaveLength(2); // every problem together
    for (const thrown of unprintable()) {
      expect(
        problemsOf(() => createHedgePolicy(fixedSource(10), throwingGetter('minDelayMs', thrown) as never)),
      ).toEqual(['`minDelayMs` cannot be read: a value that cannot be shown']);
    }
  });

  // Was a defect (fixed): the warning about a source that throws was made with `String(error)`, which
  // throws itself on a value without a prototype, a revoked Proxy or a `toString` that throws: the
  // guard meant to turn a broken source into "no hedge" threw a TypeError out of `delayMs()` (at the
  // start of a call, or from the hedge's timer). Expected: undefined and one warning.
  it('Was a defect: a source throwing a value that cannot be printed gives no hedge, not a TypeError', () => {
    const warned = vi.spyOn(process, 'emitWarning').mockImplementation(() => {});
    try {
      for (const thrown of unprintable()) {
        const policy = createHedgePolicy({
          ...fixedSource(10),
          quantile: () => {
            throw thrown;
          },
        });
        expect(policy.delayMs()).toBeUndefined();
        expect(policy.timeLeftMs()).toBeUndefined();
      }
      expect(warned).toHaveBeenCalledTimes(3); // one per policy
    } finally {
      warned.mockRestore();
    }
  });
});

describe('options holding anything, hostile values included: a result or InvalidOptionsError, never another throw (property)', () => {
  it('createHedgePolicy (SPEC H1), createLatencyRecorder (SPEC C1) and `origins` (SPEC X5)', () => {
    const hedgeKeys = ['percentile', 'maxExtraLoad', 'minDelayMs', 'maxDelayMs', 'timeLeftPercentile'];
    fc.assert(
      fc.property(optionsOf(hedgeKeys), (options) =>
        returnsOrRefuses(() => createHedgePolicy(fixedSource(10), materialize(options) as never)),
      ),
      { numRuns: 200 },
    );
    const recorderKeys = ['windowMs', 'minSamples', 'relativeAccuracy', 'onWindow', 'clock'];
    fc.assert(
      fc.property(optionsOf(recorderKeys), (options) =>
        returnsOrRefuses(() => createLatencyRecorder(materialize(options) as never)),
      ),
      { numRuns: 200 },
    );
    fc.assert(
      fc.property(fc.array(anyValue, { minLength: 1, maxLength: 4 }), (origins) =>
        returnsOrRefuses(() => readOptions('origins', INSTANCES_OPTIONS, { origins: materialize(origins) })),
      ),
      { numRuns: 200 },
    );
  });
});

describe('hedge delays at the edges of time (SPEC H1)', () => {
  // Was a defect (fixed): without `maxDelayMs` the policy had no ceiling at all, so a caller's latency
  // source answering days (a Prometheus-derived p95 of a batch job, a source in µs read as ms) gave a
  // delay past 2^31-1 ms, which `setTimeout` — what a caller of `prazo/retry`'s policy arms with it —
  // fires at once (Node reads an overflowing delay as 1 ms): every call hedged at once, twice the
  // load. Expected: no hedge past the longest delay a timer honours. Actual: 3e9.
  it('Was a defect: a quantile past the longest timer delay gives no hedge, not a delay setTimeout fires at once', () => {
    const timerMax = 2 ** 31 - 1;
    expect(createHedgePolicy(fixedSource(3e9)).delayMs()).toBeUndefined();
    expect(createHedgePolicy(fixedSource(Number.MAX_VALUE)).delayMs()).toBeUndefined();
    expect(createHedgePolicy(fixedSource(timerMax)).delayMs()).toBe(timerMax);
    expect(createHedgePolicy(fixedSource(1e-300)).delayMs()).toBe(5); // the floor
    expect(createHedgePolicy(fixedSource(-0)).delayMs()).toBe(5);
    expect(createHedgePolicy(fixedSource(-1e-300)).delayMs()).toBeUndefined();
    const atMost = createHedgePolicy(fixedSource(3e9), { maxDelayMs: timerMax, minDelayMs: timerMax });
    expect(atMost.delayMs()).toBeUndefined();
  });

  // Was a defect (fixed): `maxExtraLoad` was turned into the percentile as `1 − maxExtraLoad` in
  // binary: for 414 of the 5,000 values with four decimals (0.064, 0.0257, ...) that is just below the
  // decimal (0.9359999999999999), so `timeLeftPercentile` set to the same quantile, 0.936, was refused
  // as "above the hedge's own percentile (0.9359999999999999)", and that number was the policy's
  // `percentile`. Expected: the decimal quantile, the pair accepted.
  it('Was a defect: maxExtraLoad 0.064 is the percentile 0.936, and timeLeftPercentile 0.936 is not above it', () => {
    const policy = createHedgePolicy(fixedSource(10), { maxExtraLoad: 0.064, timeLeftPercentile: 0.936 });
    expect(policy.percentile).toBe(0.936);
    for (let k = 1; k <= 5_000; k += 1) {
      const maxExtraLoad = k / 10_000;
      const decimal = Number((1 - maxExtraLoad).toFixed(4));
      const p = createHedgePolicy(fixedSource(10), {
        maxExtraLoad,
        timeLeftPercentile: Math.max(0.5, decimal),
      });
      if (p.percentile !== decimal) expect.fail(`maxExtraLoad ${maxExtraLoad}: percentile ${p.percentile}`);
    }
  });
});

// ── concurrency limit ────────────────────────────────────────────────────────────────────────────

describe('concurrency limit (SPEC X7)', () => {
  /** A dependency with a fixed limit, and calls whose operation answers after `ms` on the fake clock. */
  function limited(maxInFlight: number, maxQueue: number) {
    const clock = new FakeClock();
    const dep = createDependency({
      name: 'limited',
      p99Ms: 100,
      clock,
      concurrencyLimit: { maxInFlight, maxQueue },
      defaultDeadlineMs: 60_000,
      throttle: false,
    });
    const started: string[] = [];
    const results: Record<string, string> = {};
    const call = (id: string, ms: number, signal?: AbortSignal): Promise<void> =>
      dep
        .execute(
          () => {
            started.push(id);
            return new Promise<string>((resolve) => clock.setTimer(() => resolve(id), ms));
          },
          { idempotent: true, signal },
        )
        .then(
          (v) => {
            results[id] = v;
          },
          (e: { code?: string }) => {
            results[id] = e?.code ?? String(e);
          },
        );
    const drain = async (): Promise<void> => {
      await clock.runAllAsync();
      for (let i = 0; i < 5; i += 1) await new Promise<void>((resolve) => setImmediate(resolve));
    };
    return { dep, call, started, results, drain };
  }

  // Was a defect (fixed): the adaptive limit's settings were the defaults with the given options
  // spread over them, so a key given as `undefined` — valid, it reads as its default, and common in
  // `{ initial: config.initial }` — replaced the default with undefined: `initial` undefined made the
  // limit NaN and `maxQueue` undefined, and `inFlight >= NaN` never refuses: no limit at all
  // (src/limit/gradient.ts gradientSettings). Expected: the defaults. Actual: limit NaN, every call sent.
  it('Was a defect: adaptive options given as undefined keep their defaults, not a NaN limit that limits nothing', async () => {
    const dep = createDependency({
      name: 'adaptive',
      p99Ms: 10,
      clock: new FakeClock(),
      concurrencyLimit: {
        adaptive: { initial: undefined, min: undefined, max: undefined, windowMs: undefined },
      },
    });
    expect(dep.concurrency()).toEqual({ limit: 20, inFlight: 0, queued: 0, maxQueue: 20, adaptive: true });
    const calls = Array.from({ length: 50 }, () =>
      dep
        .execute(() => new Promise<void>(() => {}), { idempotent: true })
        .catch((e: { code?: string }) => e.code),
    );
    await Promise.resolve();
    expect(dep.concurrency()).toMatchObject({ inFlight: 20, queued: 20 });
    expect(await calls[49]).toBe('CONCURRENCY_LIMITED');
  });

  it('the adaptive limit stays a whole number in [min, max] whatever RTTs and readings it is fed (property)', () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(anyDouble, fc.oneof(anyDouble, fc.integer({ min: 0, max: 1e6 })), fc.boolean()), {
          maxLength: 300,
        }),
        fc.record({
          initial: fc.integer({ min: 1, max: 50 }),
          max: fc.integer({ min: 50, max: 100 }),
          minSamples: fc.integer({ min: 1, max: 3 }),
          smoothing: fc.double({ min: 0.01, max: 1, noNaN: true }),
          tolerance: fc.double({ min: 1, max: 10, noNaN: true }),
        }),
        (steps, given) => {
          const adaptive = { ...given, min: 1, windowMs: 10, minRttHorizonMs: 100 };
          const limiter = new ConcurrencyLimiter({ adaptive }, new FakeClock());
          for (const [rtt, now, acquire] of steps) {
            if (acquire) limiter.tryAcquire();
            else limiter.release();
            limiter.sample(rtt, now);
            expect(Number.isInteger(limiter.limit)).toBe(true);
            expect(limiter.limit).toBeGreaterThanOrEqual(1);
            expect(limiter.limit).toBeLessThanOrEqual(adaptive.max);
          }
        },
      ),
      { numRuns: 150 },
    );
  });

  it('waiters start first come first served; the cancelled ones and a full queue are skipped, an aborted signal takes no place', async () => {
    const { dep, call, started, results, drain } = limited(2, 4);
    const early = new AbortController();
    early.abort('early');
    const gone = new AbortController();
    const all = [call('a', 50), call('b', 50), call('c', 50), call('d', 50, gone.signal)];
    all.push(call('x', 50, early.signal)); // already aborted: refused, not queued
    all.push(call('e', 50), call('f', 50), call('g', 50)); // g: the queue (c, d, e, f) is full
    await Promise.resolve();
    expect(dep.concurrency()).toMatchObject({ inFlight: 2, queued: 4 });
    gone.abort('gone');
    await drain();
    await Promise.all(all);
    expect(started.join('')).toBe('abcef');
    expect(results).toMatchObject({ d: 'gone', x: 'early', g: 'CONCURRENCY_LIMITED', f: 'f' });
    expect(dep.concurrency()).toMatchObject({ inFlight: 0, queued: 0 });
  });

  it('thousands of waiters aborted at once by one shared signal: all settle, in linear time, nothing left queued', async () => {
    const { dep, call, results, drain } = limited(1, 100_000);
    const shared = new AbortController();
    const calls = [call('first', 10)];
    for (let i = 0; i < 5_000; i += 1) calls.push(call(`w${i}`, 10, shared.signal));
    await Promise.resolve();
    expect(dep.concurrency()?.queued).toBe(5_000);
    const t0 = performance.now();
    shared.abort(new Error('shutdown'));
    await Promise.all(calls.slice(1));
    expect(performance.now() - t0).toBeLessThan(1_500); // quadratic would be 25M steps
    expect(dep.concurrency()).toMatchObject({ inFlight: 1, queued: 0 });
    await drain();
    expect(results.first).toBe('first');
    expect(Object.values(results).filter((r) => r === 'Error: shutdown')).toHaveLength(5_000);
  });

  // Was a defect (fixed): the adaptive limit summed its window's RTTs unclamped, so a few samples near
  // 1e308 (a custom clock's jump: the executor feeds `now − startedAt`) summed to Infinity; the
  // window's mean Infinity over a minimum of Infinity made the gradient NaN, and the limit NaN, which
  // `tryAcquire` compares against and never refuses: no limit at all, and NaN in `state()`, in metrics
  // and in CONCURRENCY_LIMITED errors. Expected: samples clamped (as the recorder clamps, to a day),
  // the limit a whole number. Actual: NaN, 1,000 slots taken of a limit of 20.
  it('Was a defect: RTTs near 1e308 do not turn the adaptive limit into NaN (no limit at all)', () => {
    const limiter = new ConcurrencyLimiter(
      { adaptive: { initial: 20, windowMs: 100, minSamples: 2 } },
      new FakeClock(),
    );
    for (let i = 0; i < 3; i += 1) limiter.sample(Number.MAX_VALUE, 0);
    limiter.sample(Number.MAX_VALUE, 100); // judges the first window
    for (let i = 0; i < 3; i += 1) limiter.sample(1e308, 150);
    limiter.sample(1, 250);
    expect(Number.isInteger(limiter.limit)).toBe(true);
    expect(limiter.state().limit).toBe(limiter.limit);
    let taken = 0;
    while (taken < 1_000 && limiter.tryAcquire()) taken += 1;
    expect(taken).toBe(limiter.limit);
    expect(taken).toBeGreaterThanOrEqual(2);
  });
});

// ── instances (balance) ──────────────────────────────────────────────────────────────────────────

describe('the instances of a dependency: `origins` (prazo/options INSTANCES_OPTIONS, SPEC X5)', () => {
  // Was a defect (fixed): the check of `origins` showed a bad entry with `String(raw)` and tested it
  // with `instanceof URL`, and the list with `Array.isArray`: an entry without a prototype, a revoked
  // Proxy, one whose `toString` or whose slot's getter throws, or a revoked Proxy as the list, threw a
  // TypeError out of the validation instead of a problem (src/balance/options.ts). Expected: one
  // problem per bad entry, with the good ones read. Actual: "Cannot convert object to primitive value".
  it('Was a defect: origins that cannot be read or printed are problems, not a TypeError', () => {
    const slotGetter = Object.defineProperty(['http://10.0.0.1:80'], 1, {
      enumerable: true,
      get() {
        throw new Error('no slot');
      },
    });
    for (const origins of [
      ...unprintable().map((entry) => ['http://10.0.0.1:80', entry]),
      slotGetter,
      ['http://10.0.0.1:80', Symbol('s'), 12n],
    ]) {
      const problems = problemsOf(() => readOptions('origins', INSTANCES_OPTIONS, { origins }));
      expect(problems.length).toBeGreaterThanOrEqual(1);
      for (const p of problems) expect(p).toMatch(/^`origins\[[12]\]` must be an http\(s\) origin/);
    }
    expect(problemsOf(() => readOptions('origins', INSTANCES_OPTIONS, { origins: revoked() }))).toEqual([
      expect.stringMatching(/^`origins` must be a list of 1 to 1024 origins/),
    ]);
    expect(normalizeOrigin(revoked())).toBeUndefined();
    expect(normalizeOrigin(new URL('http://10.0.0.1:80'))).toBe('http://10.0.0.1');
  });
});

describe('latency ejection (SPEC X5)', () => {
  // Was a defect (fixed): the instance set kept every instant as read, so after its clock was stepped
  // back (a custom clock on `Date.now()`, or one epoch reading among monotonic ones) an instance
  // ejected before the step stayed out until the clock came back to its end — an hour later here, not
  // 30 s — its peak did not decay (stored "in the future"), and no latency window closed
  // (src/balance/instances.ts). The adaptive limit and the recorder already treat such a step as a
  // pause. Expected: everything moves back with the clock. Actual: 'ejected' a minute after the step.
  it('Was a defect: a clock stepped back an hour does not keep an instance ejected, a peak undecayed or the windows shut for that hour', () => {
    for (const before of [3_600_000, 1.7e12]) {
      const clock = new FakeClock();
      let reading = before;
      const set = new InstanceSet<string>({
        clock: { ...clock, now: () => reading } as never,
        random: seededRandom(2),
        decayMs: 10_000,
        initialEstimateMs: 30,
        ejection: ejectionSettings({ consecutiveFailures: 1, latency: { minSamples: 20 } }),
        floorMs: () => 10,
        penaltyMs: () => 100,
        timeoutMs: () => 50,
        unansweredFloor: () => 0.01,
      });
      set.replace(['a', 'b', 'c', 'd', 'slow'].map((key) => ({ key, value: key })));
      set.settle(set.get('a')!, 'success', 5_000, reading);
      set.settle(set.get('b')!, 'failure', 10, reading);
      expect(set.states().find((s) => s.instance === 'b')!.state).toBe('ejected');
      reading = 0; // stepped back
      set.pick(reading);
      reading = 60_000;
      const states = set.states();
      expect(states.find((s) => s.instance === 'b')!.state, String(before)).toBe('probation');
      expect(states.find((s) => s.instance === 'a')!.estimateMs).toBeLessThan(5_000 * Math.exp(-5));
      for (let i = 0; i < 40; i += 1) {
        reading += 300;
        for (const key of ['c', 'd', 'slow']) {
          set.settle(set.get(key)!, 'success', key === 'slow' ? 900 : 20, reading);
        }
      }
      expect(set.states().find((s) => s.instance === 'slow')!.state, String(before)).toBe('ejected');
    }
  });

  it('picks, settles with any latency and reading, and replaces: estimates finite, levels whole, one instance always in rotation (property)', () => {
    const verdicts: InstanceVerdict[] = ['success', 'failure', 'unanswered', 'lost', 'neutral'];
    const keys = ['a', 'b', 'c', 'd', 'e'];
    fc.assert(
      fc.property(
        fc.array(
          fc.oneof(
            fc.record({ op: fc.constant('pick' as const), at: anyDouble }),
            fc.record({
              op: fc.constant('settle' as const),
              verdict: fc.constantFrom(...verdicts),
              ms: anyDouble,
              at: anyDouble,
            }),
            fc.record({ op: fc.constant('advance' as const), ms: fc.integer({ min: 0, max: 100_000 }) }),
            fc.record({
              op: fc.constant('replace' as const),
              keys: fc.uniqueArray(fc.constantFrom(...keys), { maxLength: 5 }),
            }),
          ),
          { maxLength: 150 },
        ),
        fc.integer({ min: 0, max: 1_000 }),
        (ops, seed) => {
          const clock = new FakeClock();
          const set = new InstanceSet<string>({
            clock,
            random: seededRandom(seed),
            decayMs: 10_000,
            initialEstimateMs: 30,
            ejection: ejectionSettings({
              consecutiveFailures: 2,
              latency: { minSamples: 20, windowMs: 1_000 },
            }),
            floorMs: () => 10,
            penaltyMs: () => 100,
            timeoutMs: () => 50,
            unansweredFloor: () => 0.01,
          });
          set.replace(['a', 'b', 'c'].map((key) => ({ key, value: key })));
          const open: Instance<string>[] = [];
          for (const o of ops) {
            if (o.op === 'pick') {
              const picked = set.pick(o.at);
              if (set.size > 0) {
                expect(set.get(picked!.key)).toBe(picked);
                open.push(picked!);
              }
            } else if (o.op === 'settle') {
              const held = open.shift();
              if (held !== undefined) set.settle(held, o.verdict, o.ms, o.at);
            } else if (o.op === 'advance') clock.advance(o.ms);
            else set.replace(o.keys.map((key) => ({ key, value: key })));
            if (set.size > 0) expect(set.available).toBeGreaterThanOrEqual(1);
            for (const s of set.states()) {
              expect(s.estimateMs >= 0 && s.estimateMs < Number.POSITIVE_INFINITY).toBe(true);
              expect(Number.isInteger(s.ejections)).toBe(true);
            }
          }
          for (const held of open) set.settle(held, 'neutral', 0, clock.now());
          for (const s of set.states()) expect(s.inFlight).toBe(0);
        },
      ),
      { numRuns: 150 },
    );
  });

  // Was a defect (fixed): an instance set whose clock read NaN when it was made or its instances added
  // (a custom clock's one bad reading) kept that NaN: each estimate's time stayed NaN, so a slow answer's
  // peak never decayed (5,000 ms an hour later: the instance starved for good); an ejection's level and
  // length were NaN (an `instance-ejected` event with `ejectionMs` NaN, `ejections` NaN in `instances()`)
  // and its end NaN, never reached: ejected for good; and the latency window's end NaN, so no window
  // ever closed: latency ejection off. Expected: each takes the first real reading.
  it('Was a defect: a clock that read NaN when instances were added does not freeze estimates, ejections or windows', () => {
    const fake = new FakeClock();
    let reading = Number.NaN;
    const clock = {
      now: () => reading,
      epochNow: () => fake.epochNow(),
      setTimer: (fn: () => void, ms: number) => fake.setTimer(fn, ms),
      clearTimer: (timer: object) => fake.clearTimer(timer),
    };
    const ejected: [string, number, number][] = [];
    const set = new InstanceSet<string>({
      clock,
      random: seededRandom(5),
      decayMs: 10_000,
      initialEstimateMs: 30,
      ejection: ejectionSettings({ consecutiveFailures: 1, latency: { minSamples: 20 } }),
      floorMs: () => 10,
      penaltyMs: () => 100,
      timeoutMs: () => 50,
      unansweredFloor: () => 0.01,
      listener: {
        ejected: (instance, _verdict, ms, level) => ejected.push([instance, ms, level]),
        returned: () => {},
        added: () => {},
        removed: () => {},
      },
    });
    set.replace(['a', 'b', 'c', 'd', 'slow'].map((key) => ({ key, value: key })));
    reading = 1_000;
    set.settle(set.get('a')!, 'success', 5_000, 1_000);
    set.settle(set.get('b')!, 'failure', 10, 2_000);
    expect(ejected).toEqual([['b', 30_000, 1]]);
    reading = 40_000;
    expect(set.states(reading).find((s) => s.instance === 'b')!.state).toBe('probation');
    for (let i = 0; i < 40; i += 1) {
      reading += 300;
      for (const key of ['c', 'd', 'slow']) {
        set.settle(set.get(key)!, 'success', key === 'slow' ? 900 : 20, reading);
      }
    }
    expect(ejected.map(([instance]) => instance)).toContain('slow');
    expect(set.states(3_601_000).find((s) => s.instance === 'a')!.estimateMs).toBeLessThan(1);
  });

  // Was a defect (fixed): as for the adaptive limit, latency ejection's settings spread the given
  // options over the defaults, so `latency: { factor: undefined }` (valid) made the factor undefined:
  // `p99 > undefined × peer` is never true, and latency ejection was off without a word
  // (src/balance/ejection.ts). Expected: the default factor 3, a 30× slower instance ejected.
  it('Was a defect: latency ejection options given as undefined keep their defaults, not a silent "off"', () => {
    const ejection = ejectionSettings({
      latency: { factor: undefined, windowMs: undefined, minSamples: 20 },
    });
    expect(ejection?.latency).toEqual({ factor: 3, windowMs: 10_000, minSamples: 20 });
    const clock = new FakeClock();
    const set = new InstanceSet<string>({
      clock,
      random: seededRandom(3),
      decayMs: 10_000,
      initialEstimateMs: 30,
      ejection,
      floorMs: () => 10,
      penaltyMs: () => 1_000,
      timeoutMs: () => 500,
      unansweredFloor: () => 0.01,
    });
    set.replace(['a', 'b', 'c', 'slow'].map((key) => ({ key, value: key })));
    for (let i = 0; i < 30; i += 1) {
      clock.advance(340); // 30 rounds: past the 10 s window
      for (const key of ['a', 'b', 'c', 'slow']) {
        set.settle(set.get(key)!, 'success', key === 'slow' ? 600 : 20, clock.now());
      }
    }
    expect(set.states().find((s) => s.instance === 'slow')?.state).toBe('ejected');
  });
});

// ── latency recorder ────────────────────────────────────────────────────────────────────────────

describe('createLatencyRecorder given options that cannot be read (SPEC C1)', () => {
  // Was a defect (fixed): as `createHedgePolicy`'s, the recorder's options were read unguarded, so a
  // revoked Proxy or a getter that throws threw a bare TypeError out of `createLatencyRecorder` (a
  // root export). Expected: InvalidOptionsError with the reason. Actual: "Cannot perform 'IsArray' on
  // a proxy that has been revoked".
  it('Was a defect: a revoked Proxy or a throwing getter as its options is an InvalidOptionsError', () => {
    expect(problemsOf(() => createLatencyRecorder(revoked() as never))).toEqual([
      expect.stringMatching(/^options cannot be read: TypeError: .*revoked/),
    ]);
    expect(problemsOf(() => createLatencyRecorder(throwingGetter('windowMs') as never))).toEqual([
      '`windowMs` cannot be read: TypeError: no windowMs for you',
    ]);
    expect(
      problemsOf(() => createLatencyRecorder(throwingGetter('onWindow', Object.create(null)) as never)),
    ).toEqual(['`onWindow` cannot be read: a value that cannot be shown']);
  });
});

// ── values that cannot be printed, thrown by a caller's code ───────────────────────────────────

describe('a callback of the caller throwing a value that cannot be printed', () => {
  // Was a defect (fixed): the recorder's guard around `onWindow` (a root export's option) made its
  // warning with `String(error)`, which throws on these: the guard meant to keep a broken listener
  // from breaking `record()` threw a TypeError out of it ("Cannot convert object to primitive value").
  // Expected: a warning, the sample recorded.
  it('Was a defect: onWindow throwing an unprintable value does not break record() (SPEC C1)', () => {
    const warned = vi.spyOn(process, 'emitWarning').mockImplementation(() => {});
    try {
      for (const thrown of unprintable()) {
        const clock = new FakeClock();
        const recorder = createLatencyRecorder({
          clock,
          windowMs: 1_000,
          minSamples: 1,
          onWindow: () => {
            throw thrown;
          },
        });
        recorder.record(5, 'success');
        clock.advance(1_500);
        expect(() => recorder.record(7, 'success')).not.toThrow();
        expect(recorder.quantile(0.5)).toBeCloseTo(5, 0);
      }
      expect(warned.mock.calls.map(([m]) => String(m))).toEqual(
        Array(3).fill('prazo latency recorder: onWindow threw: a value that cannot be shown'),
      );
    } finally {
      warned.mockRestore();
    }
  });

  // Was a defect (fixed): the limiter's guard around a waiter's grant (SPEC X7) made its warning with
  // `String(error)`: a grant throwing one of these threw a TypeError out of `release()`, into the
  // attempt that released the slot, and the waiters behind it were stranded.
  it("Was a defect: a waiter's grant throwing an unprintable value neither throws out of release() nor strands the queue (SPEC X7)", () => {
    const warned = vi.spyOn(process, 'emitWarning').mockImplementation(() => {});
    try {
      const limiter = new ConcurrencyLimiter({ maxInFlight: 1, maxQueue: 10 }, new FakeClock());
      expect(limiter.tryAcquire()).toBe(true);
      const granted: string[] = [];
      for (const thrown of unprintable()) {
        limiter.enqueue({
          granted: () => {
            throw thrown;
          },
        });
      }
      limiter.enqueue({ granted: () => granted.push('last') });
      for (let i = 0; i < 4; i += 1) expect(() => limiter.release()).not.toThrow();
      expect(granted).toEqual(['last']);
      expect(limiter.queued).toBe(0);
    } finally {
      warned.mockRestore();
    }
  });

  describe('a custom DNS lookup (prazo/http discovery, SPEC X5)', () => {
    type Callback = (error: unknown, address?: unknown, family?: unknown) => void;
    function discover(lookup: (host: string, options: unknown, callback: Callback) => void) {
      const clock = new FakeClock();
      const addresses: (readonly LookupAddress[])[] = [];
      const errors: Error[] = [];
      const discovery = new DnsDiscovery({
        hostname: 'svc.local',
        intervalMs: 1_000,
        timeoutMs: 500,
        clock,
        lookup: lookup as never,
        onAddresses: (a) => addresses.push(a),
        onError: (e) => errors.push(e),
      });
      return { discovery, addresses, errors, clock };
    }

    // Was a defect (fixed): a `lookup` in the promise style (`dns.promises.lookup`, any async function),
    // an easy mistake for an option named after `dns.lookup`, never calls back: every lookup was given
    // up at its timeout (ETIMEOUT, no instance ever found), and a rejected promise was left unhandled,
    // which ends a Node process. Expected: its value taken as the addresses, its rejection a failed
    // lookup, nothing unhandled. Actual: ETIMEOUT, and an unhandled rejection.
    it('Was a defect: a promise-style lookup (dns.promises.lookup) is heard, and its rejection is no unhandled rejection', async () => {
      const unhandled: unknown[] = [];
      const onUnhandled = (reason: unknown): void => {
        unhandled.push(reason);
      };
      process.on('unhandledRejection', onUnhandled);
      try {
        const resolved = discover((async () => [{ address: '10.0.0.7', family: 4 }]) as never);
        resolved.discovery.start();
        await new Promise<void>((resolve) => setImmediate(resolve));
        expect(resolved.addresses).toEqual([[{ address: '10.0.0.7', family: 4 }]]);
        expect(resolved.errors).toEqual([]);
        resolved.discovery.stop();
        for (const reason of [Object.assign(new Error('SERVFAIL'), { code: 'ESERVFAIL' }), undefined]) {
          const rejected = discover((async () => {
            throw reason;
          }) as never);
          rejected.discovery.start();
          await new Promise<void>((resolve) => setImmediate(resolve));
          expect(rejected.errors).toHaveLength(1);
          expect(rejected.errors[0]!.message).toBe(reason === undefined ? 'the lookup failed' : 'SERVFAIL');
          rejected.discovery.stop();
        }
        await new Promise<void>((resolve) => setImmediate(resolve));
        expect(unhandled).toEqual([]);
      } finally {
        process.off('unhandledRejection', onUnhandled);
      }
    });

    // Was a defect (fixed): discovery stops starting lookups while two given-up ones are unanswered, and
    // forgets one only a minute after it started; after its clock was stepped back (a custom clock)
    // those minutes were counted from a start in the future, so discovery stayed stopped (EBUSY) until
    // the clock came back — an hour here. Expected: a lookup that reads as started after now is
    // forgotten, and lookups go on. Actual: no lookup for the hour.
    it('Was a defect: a clock stepped back does not stop discovery until it comes back (EBUSY for an hour)', () => {
      const fake = new FakeClock();
      let offset = 3_600_000;
      let lookups = 0;
      const errors: string[] = [];
      const discovery = new DnsDiscovery({
        hostname: 'svc.local',
        intervalMs: 1_000,
        timeoutMs: 500,
        clock: {
          now: () => fake.now() + offset,
          epochNow: () => fake.epochNow(),
          setTimer: (fn, ms) => fake.setTimer(fn, ms),
          clearTimer: (timer) => fake.clearTimer(timer),
        },
        lookup: (() => {
          lookups += 1; // never answers
        }) as never,
        onAddresses: () => {},
        onError: (e) => errors.push((e as { code?: string }).code ?? ''),
      });
      discovery.start();
      fake.advance(3_000); // lookups at 0 and 1,500, each given up after 500 ms; at 3,000 none
      expect(lookups).toBe(2);
      expect(errors).toEqual(['ETIMEOUT', 'ETIMEOUT', 'EBUSY']);
      offset = 0; // stepped back an hour
      fake.advance(5_000);
      expect(lookups).toBeGreaterThan(2);
      discovery.stop();
    });

    // Was a defect (fixed): a lookup's failure that is not an Error was wrapped with `String(error)`
    // (and tested with `instanceof`, which throws on a revoked Proxy). Thrown by the lookup, that threw
    // a TypeError out of `refresh()` — from the discovery's timer, an uncaught exception; passed to the
    // callback, the throw was swallowed and the lookup hung until its timeout, reported as ETIMEOUT.
    // Expected: the owner gets an Error at once, the next lookup goes at the interval.
    it('Was a defect: a lookup throwing or failing with an unprintable value reaches the owner as an Error', () => {
      for (const how of ['throws', 'calls back'] as const) {
        for (const thrown of unprintable()) {
          const { discovery, errors, clock } = discover((_h, _o, cb) => {
            if (how === 'throws') throw thrown;
            cb(thrown);
          });
          expect(() => discovery.start(), how).not.toThrow();
          expect(errors, how).toHaveLength(1);
          expect(errors[0]).toBeInstanceOf(Error);
          expect(errors[0]!.message).toBe('a value that cannot be shown');
          clock.advance(1_000);
          expect(errors, how).toHaveLength(2); // looked up again, not stuck
          discovery.stop();
        }
      }
    });

    // Was a defect (fixed): an answer that cannot be read (a revoked Proxy as the list, an entry whose
    // `address` getter throws) threw inside the lookup's callback: into the lookup's own code, or
    // swallowed, the lookup then hanging until its timeout and reported as ETIMEOUT. Expected: an
    // Error for the owner at once.
    it('Was a defect: an answer that cannot be read is a failed lookup at once, not a throw or a timeout', async () => {
      for (const answer of [revoked(), [throwingGetter('address')]]) {
        let threw: unknown;
        const { discovery, errors, addresses } = discover((_h, _o, cb) => {
          queueMicrotask(() => {
            try {
              cb(null, answer);
            } catch (error) {
              threw = error;
            }
          });
        });
        discovery.start();
        await Promise.resolve();
        expect(threw).toBeUndefined();
        expect(addresses).toEqual([]);
        expect(errors).toHaveLength(1);
        expect(errors[0]!.message).not.toMatch(/did not answer/);
        discovery.stop();
      }
    });
  });
});
