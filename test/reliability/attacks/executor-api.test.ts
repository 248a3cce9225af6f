import { getEventListeners } from 'node:events';
import fc from 'fast-check';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { createRetryBudget } from '../../../src/budget/budget.js';
import { FakeClock } from '../../../src/clock/fake.js';
import { Deadline } from '../../../src/deadline/deadline.js';
import {
  type AttemptContext,
  createDependency,
  type Dependency,
  type DependencyEvent,
  type DependencyOptions,
  type ExecuteOptions,
} from '../../../src/dependency/index.js';
import { isInvalidOptions } from '../../../src/errors/index.js';
import type { LatencySource } from '../../../src/latency/types.js';
import { type Box, flush, watch } from './watch.js';

/**
 * Attacks on the executor's public API (`createDependency(...).execute`, `on`, `update`,
 * `recalibrate`) as a hostile or careless caller would use it, on the fake clock: per-call options
 * that are not what they claim, operations that are not well-behaved promises, `classify`/`discard`
 * and event listeners that misbehave or re-enter, signals aborted at every stage, updates under
 * calls in flight, odd deadlines, a shared budget, and load. The promises checked (SPEC R1, R5, R6,
 * D1, D4, D5, H1–H3, X7, X9): bad input is a typed error or a safe default (never a synchronous
 * throw from a promise-returning call, an unhandled rejection, NaN in an event); every call settles
 * within its deadline; a non-idempotent call runs once; every value not returned goes to `discard`
 * exactly once; retries and hedges stay in the budget; slots and timers always come back.
 *
 * A test whose comment says "Was a defect (fixed)" pinned a defect found here (expected vs actual).
 */

// ── helpers ──────────────────────────────────────────────────────────────────────────────────────

/** A latency source with fixed quantiles, so a hedge is sent at a known instant. */
const fixedLatency = (p95: number, p50 = 1): LatencySource => ({
  record: () => {},
  quantile: (q) => (q === 0.95 ? p95 : q === 0.5 ? p50 : undefined),
  lastWindow: () => undefined,
  currentWindow: () => {
    throw new Error('unused');
  },
});

function setup(options: Partial<DependencyOptions> = {}) {
  const clock = new FakeClock();
  const dep = createDependency({
    name: 'attacked',
    p99Ms: 10, // attempt timeout 14 ms
    attempts: 3,
    clock,
    random: () => 0.5,
    ...options,
  });
  const events: DependencyEvent[] = [];
  dep.on((e) => events.push(e));
  const drain = async (): Promise<void> => {
    await clock.runAllAsync();
    await flush();
  };
  return { clock, dep, events, drain };
}

const reset = (): Error => Object.assign(new Error('reset'), { code: 'ECONNRESET' });

/** A remote call on the fake clock that answers `value` after `ms`, honouring its signal. */
function answer<T>(clock: FakeClock, ctx: AttemptContext, ms: number, value: () => T): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = clock.setTimer(() => {
      try {
        resolve(value());
      } catch (error) {
        reject(error);
      }
    }, ms);
    ctx.signal.addEventListener(
      'abort',
      () => {
        clock.clearTimer(timer);
        reject(ctx.signal.reason);
      },
      { once: true },
    );
  });
}

const OUTCOMES = new Set(['success', 'error', 'timeout', 'cancelled']);
const KINDS = new Set(['original', 'retry', 'hedge']);
const NUMERIC = [
  'attempt',
  'latencyMs',
  'remainingMs',
  'neededMs',
  'waitMs',
  'lateMs',
  'limit',
  'inFlight',
  'queued',
  'waitedMs',
  'requests',
  'accepts',
  'probability',
  'assumedP99Ms',
  'p99Ms',
] as const;

/** Every event field of its documented type; every number finite and not negative. */
function checkEvent(event: DependencyEvent): void {
  const e = event as unknown as Record<string, unknown>;
  expect(typeof e.type, JSON.stringify(e)).toBe('string');
  expect(typeof e.dependency, JSON.stringify(e)).toBe('string');
  for (const key of NUMERIC) {
    if (!(key in e)) continue;
    const value = e[key];
    expect(
      typeof value === 'number' && Number.isFinite(value) && value >= 0,
      `${key} in ${String(e.type)}: ${String(value)}`,
    ).toBe(true);
  }
  if ('outcome' in e) expect(OUTCOMES.has(e.outcome as string), `outcome ${String(e.outcome)}`).toBe(true);
  if ('kind' in e) expect(KINDS.has(e.kind as string), `kind ${String(e.kind)}`).toBe(true);
  if ('honoured' in e) expect(typeof e.honoured).toBe('boolean');
}

let warn: ReturnType<typeof vi.spyOn>;
beforeEach(() => {
  warn = vi.spyOn(process, 'emitWarning').mockImplementation(() => {});
});
afterEach(() => {
  warn.mockRestore();
});

// ── per-call options ─────────────────────────────────────────────────────────────────────────────

describe('executor-api attacks: per-call options that are not what they claim', () => {
  it.each([
    ['null', null],
    ['a string', 'idempotent'],
    ['a number', 42],
    ['an array', []],
    ['an unknown key', { idempotent: true, idempotant: true }],
    ['an own __proto__ key', JSON.parse('{"idempotent": true, "__proto__": {"x": 1}}')],
    ['a constructor key', { idempotent: true, constructor: 1 }],
    ['a deadline of -1', { idempotent: true, deadline: -1 }],
    ['a deadline of NaN', { idempotent: true, deadline: Number.NaN }],
    ['a deadline of Infinity', { idempotent: true, deadline: Number.POSITIVE_INFINITY }],
    ['a deadline of 2^31', { idempotent: true, deadline: 2 ** 31 }],
    ['a deadline string', { idempotent: true, deadline: '100' }],
    ['a deadline object', { idempotent: true, deadline: { at: 5 } }],
    ['an empty idempotencyKey', { idempotencyKey: '' }],
    ['a 256-character idempotencyKey', { idempotencyKey: 'k'.repeat(256) }],
    ['an idempotencyKey with CR LF', { idempotencyKey: 'a\r\nx-injected: 1' }],
    ['an idempotencyKey with NUL', { idempotencyKey: 'a\u0000b' }],
    ['an idempotencyKey with a space', { idempotencyKey: 'a b' }],
    ['a non-ASCII idempotencyKey', { idempotencyKey: 'clé' }],
    ['an idempotencyKey of false', { idempotencyKey: false }],
    ['an idempotencyKey of null', { idempotencyKey: null }],
  ])('%s: rejected with INVALID_OPTIONS (never thrown), the operation never called', async (_name, opts) => {
    const { dep, drain } = setup();
    let runs = 0;
    let p: Promise<unknown> | undefined;
    expect(() => {
      p = dep.execute(() => {
        runs += 1;
        return Promise.resolve('v');
      }, opts as never);
    }).not.toThrow();
    const box = watch(p!);
    await drain();
    expect(box.state).toBe('err');
    expect(isInvalidOptions(box.error)).toBe(true);
    expect(runs).toBe(0);
    expect(dep.budget.state().originals).toBe(0);
  });

  it('a 255-character visible-ASCII idempotencyKey is taken and carried in every attempt (SPEC R5)', async () => {
    const { clock, dep, drain } = setup();
    const key = '!'.repeat(254) + '~';
    const seen: string[] = [];
    const box = watch(
      dep.execute(
        (ctx) => {
          seen.push(ctx.headers['idempotency-key']!);
          return ctx.attempt === 1 ? Promise.reject(reset()) : answer(clock, ctx, 1, () => 'ok');
        },
        { idempotent: false, idempotencyKey: key },
      ),
    );
    await drain();
    expect(box.state).toBe('ok');
    expect(seen).toEqual([key, key]); // retried: a key makes even a non-idempotent call retryable
  });

  it('an idempotent flag that is not a boolean ("yes", 1) is refused with INVALID_OPTIONS: never run, never retried (SPEC R5)', async () => {
    for (const idempotent of ['yes', 1, 'true', {}]) {
      const { dep, drain } = setup({ hedge: true, recorder: fixedLatency(2) });
      let runs = 0;
      const box = watch(
        dep.execute(
          () => {
            runs += 1;
            return Promise.reject(reset());
          },
          { idempotent } as never,
        ),
      );
      await drain();
      expect(box.state).toBe('err');
      expect((box as { error?: { code?: string } }).error?.code).toBe('INVALID_OPTIONS');
      expect(runs).toBe(0);
    }
  });

  // Was a defect (fixed): a `signal` that is not an AbortSignal passes execute's key check; OperationTransport.run
  // then calls subscribeAbort → signal.addEventListener, which throws a TypeError synchronously out
  // of execute (src/dependency/execution.ts OperationTransport.run; execute validates keys only).
  // Expected: a rejected promise with INVALID_OPTIONS naming `signal`. Actual: `execute` throws
  // "TypeError: signal.addEventListener is not a function".
  it('a signal that is not an AbortSignal is rejected with INVALID_OPTIONS, not thrown', async () => {
    const { dep, drain } = setup();
    let p: Promise<unknown> | undefined;
    expect(() => {
      p = dep.execute(() => Promise.resolve('v'), { idempotent: true, signal: {} as AbortSignal });
    }).not.toThrow();
    const box = watch(p!);
    await drain();
    expect(isInvalidOptions(box.error)).toBe(true);
  });

  // Was a defect (fixed): an options object whose getter throws makes `execute` throw synchronously: `idempotent`
  // is read in the OperationTransport constructor and `signal` in run(), both outside the try of
  // execute (src/dependency/dependency.ts execute). Expected: every failure of a promise-returning
  // call is a rejection. Actual: the getter's error is thrown out of `execute`.
  it('options whose getters throw reject the call instead of throwing from execute', () => {
    const { dep } = setup();
    for (const key of ['idempotent', 'signal']) {
      const opts = {
        idempotent: true,
        get [key]() {
          throw new Error(`getter ${key}`);
        },
      };
      let p: Promise<unknown> | undefined;
      expect(() => {
        p = dep.execute(() => Promise.resolve('v'), opts as never);
      }, key).not.toThrow();
      p!.catch(() => {});
    }
  });
});

// ── operations ───────────────────────────────────────────────────────────────────────────────────

describe('executor-api attacks: operations that are not well-behaved promises', () => {
  it.each([
    ['undefined', undefined],
    ['null', null],
    ['0', 0],
    ['a plain object', { ok: true }],
  ])('an operation returning %s (not a promise) resolves with it, no timer left', async (_name, value) => {
    const { clock, dep, drain } = setup();
    const box = watch(dep.execute(() => value as never, { idempotent: true }));
    await drain();
    expect(box).toEqual({ state: 'ok', value });
    expect(clock.pendingTimers()).toBe(0);
  });

  it('a thenable that calls back twice (resolve then reject, resolve twice) settles once with the first', async () => {
    const { dep, drain } = setup();
    const twice = {
      // biome-ignore lint/suspicious/noThenProperty: a hostile thenable, on purpose
      then(resolve: (v: string) => void, reject: (e: unknown) => void) {
        resolve('first');
        resolve('second');
        reject(new Error('after'));
        throw new Error('thrown after resolving');
      },
    };
    const discarded: string[] = [];
    const box = watch(
      dep.execute(() => twice as unknown as Promise<string>, {
        idempotent: true,
        discard: (v) => discarded.push(v),
      }),
    );
    await drain();
    expect(box).toEqual({ state: 'ok', value: 'first' });
    expect(discarded).toEqual([]);
  });

  it('a promise that never settles (and ignores its signal) ends at the attempt timeout, retried, no timer left', async () => {
    const { clock, dep, drain } = setup({ retryResponseTimeout: true });
    let runs = 0;
    const box = watch(
      dep.execute(
        () => {
          runs += 1;
          return new Promise<never>(() => {});
        },
        { idempotent: true, deadline: 1_000 },
      ),
    );
    await drain();
    expect(box.state).toBe('err');
    expect((box.error as { code?: string }).code).toBe('RESPONSE_TIMEOUT');
    expect(runs).toBe(3);
    expect(clock.pendingTimers()).toBe(0);
  });

  it('a value resolved after the attempt timed out goes to discard once and is never returned', async () => {
    const { clock, dep, drain } = setup({ retryResponseTimeout: true });
    const discarded: string[] = [];
    const box = watch(
      dep.execute(
        (ctx) =>
          ctx.attempt === 1
            ? new Promise<string>((resolve) => clock.setTimer(() => resolve('late'), 50)) // deaf
            : answer(clock, ctx, 1, () => 'fresh'),
        { idempotent: true, discard: (v) => discarded.push(v) },
      ),
    );
    await drain();
    expect(box).toEqual({ state: 'ok', value: 'fresh' });
    expect(discarded).toEqual(['late']);
  });

  it('an operation that aborts its own caller synchronously and returns a value: rejected, the value discarded once', async () => {
    const { dep, drain } = setup();
    const ac = new AbortController();
    const discarded: string[] = [];
    const box = watch(
      dep.execute<string>(
        (() => {
          ac.abort(new Error('caller gave up'));
          return 'v'; // a plain value, not a promise
        }) as never,
        { idempotent: true, signal: ac.signal, discard: (v) => discarded.push(v) },
      ),
    );
    await drain();
    expect(box.state).toBe('err');
    expect((box.error as Error).message).toBe('caller gave up');
    expect(discarded).toEqual(['v']);
  });

  // Was a defect (fixed): a native promise whose `then` throws (an instrumented or patched promise) escapes from
  // `execute`: Attempt.start only adopts non-Promise thenables (`instanceof Promise` is true here),
  // then calls pending.then(...) outside any try (src/dependency/attempt.ts start). The attempt timer
  // is already armed, so when it fires the call rejects a promise nobody holds: an unhandled
  // rejection. Expected: the attempt fails with the thrown error (as for a foreign thenable),
  // `execute` returns a promise that rejects. Actual: `execute` throws "then!" synchronously (and,
  // were the clock advanced, an unhandled ResponseTimeoutError follows).
  it('a native promise whose then() throws fails the attempt instead of escaping from execute', async () => {
    const { clock, dep, drain } = setup({ attempts: 1 });
    const bad = new Error('then!');
    let p: Promise<unknown> | undefined;
    expect(() => {
      p = dep.execute(
        () => {
          const patched = Promise.resolve('v');
          Object.defineProperty(patched, 'then', {
            value: () => {
              throw bad;
            },
          });
          return patched;
        },
        { idempotent: true },
      );
    }).not.toThrow(); // the clock is not advanced before this: nothing is left to reject unhandled
    const box = watch(p!);
    await drain();
    expect(box).toMatchObject({ state: 'err', error: bad });
    expect(clock.pendingTimers()).toBe(0);
  });
});

// ── classify / discard ───────────────────────────────────────────────────────────────────────────

describe('executor-api attacks: classify and discard that misbehave', () => {
  it('a classify that throws: the result is returned as is, once, with a warning', async () => {
    const { dep, drain } = setup();
    let runs = 0;
    const box = watch(
      dep.execute(
        () => {
          runs += 1;
          return Promise.resolve('v');
        },
        {
          idempotent: true,
          classify: () => {
            throw new Error('classify bug');
          },
        },
      ),
    );
    await drain();
    expect(box).toEqual({ state: 'ok', value: 'v' });
    expect(runs).toBe(1);
    expect(warn).toHaveBeenCalled();
  });

  it('a discard that throws is a warning: the winner is still returned, every timer gone', async () => {
    const { clock, dep, drain } = setup({ retryResponseTimeout: true });
    const box = watch(
      dep.execute(
        (ctx) =>
          ctx.attempt === 1
            ? new Promise<string>((resolve) => clock.setTimer(() => resolve('late'), 50))
            : Promise.resolve('fresh'),
        {
          idempotent: true,
          discard: () => {
            throw new Error('discard bug');
          },
        },
      ),
    );
    await drain();
    expect(box).toEqual({ state: 'ok', value: 'fresh' });
    expect(warn).toHaveBeenCalled();
    expect(clock.pendingTimers()).toBe(0);
  });

  it('retryAfterMs negative or 0 means "now": retried at once, events finite (SPEC R3)', async () => {
    const { dep, events, drain } = setup();
    let runs = 0;
    const box = watch(
      dep.execute(
        () => {
          runs += 1;
          return Promise.resolve(runs < 3 ? 'busy' : 'ok');
        },
        { idempotent: true, classify: (v) => ({ retryable: v === 'busy', retryAfterMs: -5 }) },
      ),
    );
    await drain();
    expect(box).toEqual({ state: 'ok', value: 'ok' });
    expect(runs).toBe(3);
    for (const e of events) checkEvent(e);
  });

  // Was a defect (fixed): a `classify` returning null makes the executor read `verdict.outcome` of null
  // (src/dependency/outcome.ts resultVerdict returns the verdict unchecked; outcomeOf/#ended read
  // it). Execution.ended's catch then abandons the call with the TypeError. Expected: like a
  // classify that throws (or a classifyError with no verdict, which failureVerdict already guards):
  // the result returned as is, with a warning. Actual: rejects with "TypeError: Cannot read
  // properties of null (reading 'outcome')", the value neither returned nor discarded, no
  // attempt-end event.
  it('a classify returning null returns the result as is (no TypeError)', async () => {
    const { dep, drain } = setup();
    const discarded: string[] = [];
    const box = watch(
      dep.execute(() => Promise.resolve('v'), {
        idempotent: true,
        classify: () => null as never,
        discard: (v) => discarded.push(v),
      }),
    );
    await drain();
    expect(box).toEqual({ state: 'ok', value: 'v' });
  });

  // Was a defect (fixed): the same for a verdict object whose `retryable` getter throws: the call is abandoned with
  // the getter's error, the value lost. Expected: returned as is, with a warning (the verdict is
  // the caller's code, as a throwing classify is). Actual: rejects with "verdict getter".
  it('a classify verdict whose getter throws returns the result as is', async () => {
    const { dep, drain } = setup();
    const verdict = {
      get retryable(): boolean {
        throw new Error('verdict getter');
      },
    };
    const box = watch(dep.execute(() => Promise.resolve('v'), { idempotent: true, classify: () => verdict }));
    await drain();
    expect(box).toEqual({ state: 'ok', value: 'v' });
  });

  // Was a defect (fixed): a NaN `retryAfterMs` from classify reaches the planner unchecked (src/retry/planner.ts
  // planRetry: NaN is neither <= 0 nor fits, so 'retry-after-too-long' with waitMs NaN) and the
  // `retry-after` event carries waitMs: NaN (src/dependency/notify.ts retryAfter). Expected: no NaN
  // in any event (a NaN wait ignored: the backoff applies). Actual: { type: 'retry-after', waitMs:
  // NaN, honoured: false } and the retryable answer is never retried.
  it('a NaN retryAfterMs puts no NaN in an event', async () => {
    const { dep, events, drain } = setup();
    const box = watch(
      dep.execute(() => Promise.resolve('busy'), {
        idempotent: true,
        classify: () => ({ retryable: true, retryAfterMs: Number.NaN }),
      }),
    );
    await drain();
    expect(box.state).toBe('ok');
    for (const e of events) checkEvent(e);
  });

  // Was a defect (fixed): a string `retryAfterMs` ("3", as read from a header and not parsed) is used as is: the
  // `retry-after` event's waitMs is the string "3" (documented: a number), and the wait's end is
  // computed as `now + "3"`, a string concatenation (src/dependency/execution.ts #afterFailure,
  // #waitUntil). Expected: a number of ms (or the value refused and ignored). Actual: waitMs "3".
  it('a string retryAfterMs never reaches an event as a string', async () => {
    const { dep, events, drain } = setup();
    let runs = 0;
    const box = watch(
      dep.execute(
        () => {
          runs += 1;
          return Promise.resolve(runs < 2 ? 'busy' : 'ok');
        },
        { idempotent: true, classify: (v) => ({ retryable: v === 'busy', retryAfterMs: '3' as never }) },
      ),
    );
    await drain();
    expect(box.state).toBe('ok');
    for (const e of events) checkEvent(e);
  });

  // Was a defect (fixed): a verdict's `outcome` outside 'success' | 'error' goes into the attempt-end event as is
  // (src/dependency/outcome.ts outcomeOf). Expected: one of the documented outcomes (success, error,
  // timeout, cancelled). Actual: outcome 'garbage'.
  it("a verdict outcome that is not 'success' or 'error' never reaches an event", async () => {
    const { dep, events, drain } = setup();
    const box = watch(
      dep.execute(() => Promise.resolve('v'), {
        idempotent: true,
        classify: () => ({ retryable: false, outcome: 'garbage' as never }),
      }),
    );
    await drain();
    expect(box.state).toBe('ok');
    for (const e of events) checkEvent(e);
  });
});

// ── re-entrancy ──────────────────────────────────────────────────────────────────────────────────

describe('executor-api attacks: re-entrancy', () => {
  it('execute from inside an operation, classify, discard and a listener; update from inside an operation: all settle', async () => {
    const { clock, dep, drain } = setup({ concurrencyLimit: { maxInFlight: 1, maxQueue: 4 } });
    const inner: Box<unknown>[] = [];
    const nested = () => inner.push(watch(dep.execute(() => Promise.resolve('inner'), { idempotent: true })));
    let listened = 0;
    const sub = dep.on((e) => {
      if (e.type === 'attempt' && listened++ === 0) nested();
    });
    const box = watch(
      dep.execute(
        (ctx) => {
          nested();
          dep.update({ p99Ms: 12 });
          return answer(clock, ctx, 2, () => (ctx.attempt === 1 ? 'busy' : 'ok'));
        },
        {
          idempotent: true,
          classify: (v) => {
            nested();
            return { retryable: v === 'busy' };
          },
          discard: () => nested(),
        },
      ),
    );
    await drain();
    sub.dispose();
    expect(box).toEqual({ state: 'ok', value: 'ok' });
    expect(inner.length).toBeGreaterThanOrEqual(4);
    for (const b of inner) expect(b.state).not.toBe('pending');
    expect(dep.concurrency()).toMatchObject({ inFlight: 0, queued: 0 });
    expect(clock.pendingTimers()).toBe(0);
  });

  it('a listener that throws on every event changes nothing but a warning', async () => {
    const { clock, dep, drain } = setup({ hedge: true, recorder: fixedLatency(3) });
    dep.on(() => {
      throw new Error('listener bug');
    });
    const box = watch(
      dep.execute((ctx) => answer(clock, ctx, ctx.attempt === 1 ? 9 : 1, () => ctx.kind), {
        idempotent: true,
      }),
    );
    await drain();
    expect(box).toEqual({ state: 'ok', value: 'hedge' });
    expect(warn).toHaveBeenCalled();
    expect(clock.pendingTimers()).toBe(0);
  });

  // Was a defect (fixed): the warning about a listener that throws was made with `String(error)`,
  // which itself throws on a value without a prototype ("Cannot convert object to primitive value"):
  // the guard meant to contain the listener's throw threw, and the call rejected with that TypeError.
  it('Was a defect: a listener that throws a value String() cannot print changes nothing but a warning', async () => {
    const { clock, dep } = setup();
    dep.on(() => {
      throw Object.create(null);
    });
    const box = watch(dep.execute((ctx) => answer(clock, ctx, 1, () => 'ok')));
    await clock.runAllAsync();
    await flush();
    expect(box).toEqual({ state: 'ok', value: 'ok' });
    expect(warn).toHaveBeenCalledWith(
      'prazo: a dependency event listener threw: a value that cannot be shown',
      'PrazoWarning',
    );
  });

  // Was a defect (fixed): an `attempt` listener that aborts the caller's signal ends the call (abandon → the
  // attempt is cancelled, its slot released), but Execution.#start then runs carrier.start() anyway
  // (src/dependency/execution.ts #start: no `settled` check between notify.attempt and
  // carrier.start). The operation runs for a call already rejected, outside the concurrency limit
  // (its slot was given back), and its attempt timer stays armed after the call ended. Expected: the
  // operation is never called once its call has ended. Actual: it runs once.
  it("an 'attempt' listener that aborts the call: the operation is never run for the ended call", async () => {
    const { clock, dep } = setup({ concurrencyLimit: { maxInFlight: 1, maxQueue: 4 } });
    const ac = new AbortController();
    dep.on((e) => {
      if (e.type === 'attempt') ac.abort(new Error('stop'));
    });
    let runs = 0;
    const box = watch(
      dep.execute(
        () => {
          runs += 1;
          return new Promise<never>(() => {}); // an operation that does not look at its signal
        },
        { idempotent: true, signal: ac.signal },
      ),
    );
    await flush();
    clock.advance(0);
    expect(box.state).toBe('err');
    expect(runs).toBe(0);
    expect(clock.pendingTimers()).toBe(0);
  });

  // Was a defect (fixed): a `retry-after` listener that aborts the caller's signal ends the call, yet
  // Execution.#afterFailure goes on to #retry (src/dependency/execution.ts #afterFailure: no
  // `settled` check after notify.retryAfter), starting a retry whose signal is NOT aborted, for a
  // call already rejected. Expected: 1 run. Actual: 2 (the second with a live signal).
  it("a 'retry-after' listener that aborts the call: no retry is started after it ended", async () => {
    const { dep, drain } = setup();
    const ac = new AbortController();
    dep.on((e) => {
      if (e.type === 'retry-after') ac.abort(new Error('stop'));
    });
    const signals: boolean[] = [];
    const box = watch(
      dep.execute(
        (ctx) => {
          signals.push(ctx.signal.aborted);
          return Promise.resolve('busy');
        },
        { idempotent: true, signal: ac.signal, classify: () => ({ retryable: true, retryAfterMs: 0 }) },
      ),
    );
    await drain();
    expect(box.state).toBe('err');
    expect(signals).toEqual([false]);
  });

  // Was a defect (fixed): the same through `discard`: a retried answer is released (discard) right before its retry
  // starts (src/dependency/execution.ts #retry: #releaseHeld then #start, no `settled` check), so a
  // discard that aborts the caller's signal (a caller giving up on a 503) still gets the retry sent,
  // with a live signal, for a call already rejected. Expected: 1 run. Actual: 2.
  it('a discard that aborts the call: no retry is started after it ended', async () => {
    const { dep, drain } = setup();
    const ac = new AbortController();
    const signals: boolean[] = [];
    const box = watch(
      dep.execute(
        (ctx) => {
          signals.push(ctx.signal.aborted);
          return Promise.resolve('busy');
        },
        {
          idempotent: true,
          signal: ac.signal,
          classify: () => ({ retryable: true, retryAfterMs: 0 }),
          discard: () => ac.abort(new Error('stop')),
        },
      ),
    );
    await drain();
    expect(box.state).toBe('err');
    expect(signals).toEqual([false]);
  });

  // Was a defect (fixed): a `hedge-won` listener that aborts the caller's signal: abandon rejects the call, then
  // Execution.#win goes on to #finish(true, value), a no-op on a settled promise (src/dependency/
  // execution.ts #win: no `settled` check after notify.hedgeWon). The winning value is neither
  // returned nor handed to `discard`. Expected: a value that is not returned goes to discard exactly
  // once. Actual: discard never called.
  it("a 'hedge-won' listener that aborts the call: the winning value is returned or discarded", async () => {
    const { dep, drain } = setup({ hedge: true, recorder: fixedLatency(5) });
    const ac = new AbortController();
    dep.on((e) => {
      if (e.type === 'hedge-won') ac.abort(new Error('stop'));
    });
    const discarded: string[] = [];
    const box = watch(
      dep.execute((ctx) => (ctx.kind === 'hedge' ? Promise.resolve('won') : new Promise<string>(() => {})), {
        idempotent: true,
        signal: ac.signal,
        discard: (v) => discarded.push(v),
      }),
    );
    await drain();
    const returned = box.state === 'ok' ? [box.value] : [];
    expect([...returned, ...discarded]).toEqual(['won']);
  });
});

// ── signals ──────────────────────────────────────────────────────────────────────────────────────

describe('executor-api attacks: the caller signal at every stage', () => {
  it('one AbortSignal shared by 10,000 calls: one listener on it while they run, none after; abort ends them all', async () => {
    const { clock, dep, drain } = setup();
    const shared = new AbortController();
    const done = Array.from({ length: 5_000 }, () =>
      watch(
        dep.execute((ctx) => answer(clock, ctx, 5, () => 1), { idempotent: true, signal: shared.signal }),
      ),
    );
    const aborting = new AbortController();
    const aborted = Array.from({ length: 5_000 }, () =>
      watch(
        dep.execute((ctx) => answer(clock, ctx, 5, () => 1), { idempotent: true, signal: aborting.signal }),
      ),
    );
    expect(getEventListeners(shared.signal, 'abort')).toHaveLength(1);
    expect(getEventListeners(aborting.signal, 'abort')).toHaveLength(1);
    clock.advance(2);
    aborting.abort(new Error('batch cancelled'));
    await drain();
    expect(done.every((b) => b.state === 'ok')).toBe(true);
    expect(aborted.every((b) => b.state === 'err' && (b.error as Error).message === 'batch cancelled')).toBe(
      true,
    );
    expect(getEventListeners(shared.signal, 'abort')).toHaveLength(0);
    expect(getEventListeners(aborting.signal, 'abort')).toHaveLength(0);
    expect(clock.pendingTimers()).toBe(0);
  });

  it('aborted before: never run, rejected with the reason, nothing counted', async () => {
    const { dep, events, drain } = setup();
    const ac = new AbortController();
    const reason = new Error('before');
    ac.abort(reason);
    let runs = 0;
    const box = watch(
      dep.execute(
        () => {
          runs += 1;
          return Promise.resolve(1);
        },
        { idempotent: true, signal: ac.signal },
      ),
    );
    await drain();
    expect(box).toMatchObject({ state: 'err', error: reason });
    expect(runs).toBe(0);
    expect(events).toEqual([]);
    expect(dep.budget.state().originals).toBe(0);
  });

  it('aborted during a backoff: rejected at once, no further attempt, no timer left', async () => {
    const { clock, dep } = setup({ backoff: { baseMs: 400, capMs: 400 } });
    const ac = new AbortController();
    let runs = 0;
    const box = watch(
      dep.execute(
        () => {
          runs += 1;
          return Promise.reject(reset());
        },
        { idempotent: true, signal: ac.signal, deadline: 5_000 },
      ),
    );
    await clock.advanceAsync(10); // the first attempt failed; the backoff (≈ 200 ms) is under way
    expect(runs).toBe(1);
    expect(clock.pendingTimers()).toBe(1);
    ac.abort(new Error('gave up'));
    await flush();
    expect(box.state).toBe('err');
    expect(clock.pendingTimers()).toBe(0);
    await clock.advanceAsync(10_000);
    expect(runs).toBe(1);
  });

  it('aborted while the hedge waits: no hedge sent, no budget spent, no timer left (SPEC H1)', async () => {
    const { clock, dep } = setup({ hedge: true, recorder: fixedLatency(8) });
    const ac = new AbortController();
    const kinds: string[] = [];
    const box = watch(
      dep.execute(
        (ctx) => {
          kinds.push(ctx.kind);
          return answer(clock, ctx, 13, () => 1);
        },
        { idempotent: true, signal: ac.signal },
      ),
    );
    await clock.advanceAsync(4);
    ac.abort(new Error('gave up'));
    await clock.advanceAsync(100);
    expect(box.state).toBe('err');
    expect(kinds).toEqual(['original']);
    expect(dep.budget.state().extras).toBe(0);
    expect(clock.pendingTimers()).toBe(0);
  });

  it('aborted while queued for a slot: leaves the queue, the next caller gets the slot, no slot lost (SPEC X7)', async () => {
    const { clock, dep, drain } = setup({ concurrencyLimit: { maxInFlight: 1, maxQueue: 3 } });
    const op = (ctx: AttemptContext) => answer(clock, ctx, 5, () => ctx.startedAt);
    const first = watch(dep.execute(op, { idempotent: true, deadline: 1_000 }));
    const ac = new AbortController();
    const quitter = watch(dep.execute(op, { idempotent: true, deadline: 1_000, signal: ac.signal }));
    const third = watch(dep.execute(op, { idempotent: true, deadline: 1_000 }));
    expect(dep.concurrency()).toMatchObject({ inFlight: 1, queued: 2 });
    ac.abort(new Error('quit'));
    expect(dep.concurrency()).toMatchObject({ inFlight: 1, queued: 1 });
    await drain();
    expect(first).toEqual({ state: 'ok', value: 0 });
    expect(quitter.state).toBe('err');
    expect(third).toEqual({ state: 'ok', value: 5 });
    expect(dep.concurrency()).toMatchObject({ inFlight: 0, queued: 0 });
  });

  it('aborted after the call settled: nothing happens, nothing is left on the signal', async () => {
    const { dep, events, drain } = setup();
    const ac = new AbortController();
    const box = watch(dep.execute(() => Promise.resolve('v'), { idempotent: true, signal: ac.signal }));
    await drain();
    const seen = events.length;
    expect(getEventListeners(ac.signal, 'abort')).toHaveLength(0);
    ac.abort();
    await drain();
    expect(box).toEqual({ state: 'ok', value: 'v' });
    expect(events).toHaveLength(seen);
  });
});

// ── update / recalibrate ─────────────────────────────────────────────────────────────────────────

describe('executor-api attacks: update and recalibrate (SPEC X9, X2)', () => {
  it('update mid-backoff changes neither direction of a call in flight: fewer attempts not imposed, more not added', async () => {
    for (const [from, to] of [
      [3, 1],
      [2, 5],
    ] as const) {
      const { clock, dep, drain } = setup({ attempts: from });
      let runs = 0;
      const box = watch(
        dep.execute(
          () => {
            runs += 1;
            return Promise.reject(reset());
          },
          { idempotent: true, deadline: 1_000 },
        ),
      );
      await clock.advanceAsync(1);
      dep.update({ attempts: to, p99Ms: 50, defaultDeadlineMs: 60 });
      await drain();
      expect(box.state).toBe('err');
      expect(runs, `${from} → ${to}`).toBe(from);
    }
  });

  it('recalibrate refuses NaN, 0, negatives, Infinity, past 1 day and strings, changing nothing; extremes in range give finite timeouts', () => {
    const { dep } = setup();
    const before = dep.timeouts;
    for (const bad of [Number.NaN, 0, -1, Number.POSITIVE_INFINITY, 86_400_001, '50', null]) {
      expect(() => dep.recalibrate(bad as number), String(bad)).toThrow(/invalid options/);
      expect(dep.timeouts).toBe(before);
      expect(dep.p99Ms).toBe(10);
    }
    for (const extreme of [Number.MIN_VALUE, 1e-9, 86_400_000]) {
      dep.recalibrate(extreme);
      const { connectMs, responseMs } = dep.timeouts;
      expect(Number.isFinite(connectMs) && connectMs > 0, `${extreme}`).toBe(true);
      expect(Number.isFinite(responseMs) && responseMs > 0, `${extreme}`).toBe(true);
    }
  });

  it('recalibrate to 1 day while calls are queued and a hedge is armed: the calls in flight keep their plan', async () => {
    const { clock, dep, drain } = setup({
      hedge: true,
      recorder: fixedLatency(4),
      concurrencyLimit: { maxInFlight: 1, maxQueue: 2 },
    });
    const kinds: string[] = [];
    const op = (ctx: AttemptContext) => {
      kinds.push(ctx.kind);
      return answer(clock, ctx, 6, () => ctx.kind);
    };
    const a = watch(dep.execute(op, { idempotent: true, deadline: 500 }));
    const b = watch(dep.execute(op, { idempotent: true, deadline: 500 }));
    dep.recalibrate(86_400_000);
    const c = watch(dep.execute(op, { idempotent: true, deadline: 500 }));
    await drain();
    expect(a.state).toBe('ok');
    expect(b.state).toBe('ok');
    expect((c.error as { code?: string }).code).toBe('DEADLINE_INSUFFICIENT');
    expect(dep.concurrency()).toMatchObject({ inFlight: 0, queued: 0 });
  });

  // Was a defect (fixed): update() copies the changes key by key into a plain object (`live[key] = value` in
  // src/dependency/dependency.ts readUpdate), so an own `__proto__` key (JSON.parse gives one) sets
  // that object's prototype instead of being reported: the update is accepted, does nothing, and
  // emits an `update` event with no keys — while createDependency refuses the same key ("unknown
  // option `__proto__`"), and inherited values are validated (a `__proto__` holding p99Ms: -5 is
  // refused as `p99Ms`). Expected: INVALID_OPTIONS naming `__proto__`. Actual: no error.
  it('an update with an own __proto__ key is refused, naming it, like createDependency', () => {
    const { dep } = setup();
    expect(() => dep.update(JSON.parse('{"__proto__": {"p99Ms": 50}}'))).toThrow(/__proto__/);
  });

  // Was a defect (fixed): `pushback` and `concurrencyLimit` are options of the dependency, but neither live nor in
  // NOT_LIVE (src/dependency/dependency.ts), so update() calls them "unknown option" — while the
  // documented contract is "a key that cannot change while running is named as such" (as `throttle`,
  // `name`, ... are). Expected: "`pushback` cannot change while the dependency runs (...)". Actual:
  // "unknown option `pushback` (options here: ...)".
  it('update names pushback and concurrencyLimit as keys that cannot change while running', () => {
    const { dep } = setup();
    for (const changes of [{ pushback: false }, { concurrencyLimit: { maxInFlight: 2 } }]) {
      expect(() => dep.update(changes as never), Object.keys(changes)[0]).toThrow(
        /cannot change while the dependency runs/,
      );
    }
  });
});

// ── deadlines ────────────────────────────────────────────────────────────────────────────────────

describe('executor-api attacks: deadlines (SPEC D1, D4, D5)', () => {
  it('an endless and a 30-day deadline: finite attempt slices and headers, retries bounded by attempts', async () => {
    for (const deadline of [Deadline.after(Number.POSITIVE_INFINITY), 'far'] as const) {
      const { clock, dep, events, drain } = setup();
      const d = deadline === 'far' ? Deadline.after(30 * 86_400_000, { clock }) : deadline;
      const contexts: AttemptContext[] = [];
      const box = watch(
        dep.execute(
          (ctx) => {
            contexts.push(ctx);
            void ctx.headers;
            return Promise.reject(reset());
          },
          { idempotent: true, deadline: d },
        ),
      );
      await drain();
      expect(box.state).toBe('err');
      expect(contexts).toHaveLength(3);
      for (const ctx of contexts) {
        expect(ctx.timeoutMs).toBe(14);
        expect(ctx.byDeadline).toBe(false);
        for (const value of Object.values(ctx.headers)) expect(value).toMatch(/^[\x21-\x7e]+$/);
      }
      for (const e of events) checkEvent(e);
    }
  });

  it('a Deadline of another (frozen) fake clock: the call still settles, bounded by its attempts', async () => {
    const { dep, drain } = setup({ retryResponseTimeout: true });
    const other = new FakeClock();
    const box = watch(
      dep.execute(() => new Promise<never>(() => {}), {
        idempotent: true,
        deadline: Deadline.after(100, { clock: other }),
      }),
    );
    await drain();
    expect(box.state).toBe('err');
  });

  it('deadline 0 and a deadline below the p99: DEADLINE_INSUFFICIENT, never run; 2^31 − 1 ms accepted', async () => {
    const { dep, drain } = setup();
    let runs = 0;
    const op = () => {
      runs += 1;
      return Promise.resolve('v');
    };
    const zero = watch(dep.execute(op, { idempotent: true, deadline: 0 }));
    const short = watch(dep.execute(op, { idempotent: true, deadline: 9 }));
    const max = watch(dep.execute(op, { idempotent: true, deadline: 2 ** 31 - 1 }));
    await drain();
    expect((zero.error as { code?: string }).code).toBe('DEADLINE_INSUFFICIENT');
    expect((short.error as { code?: string }).code).toBe('DEADLINE_INSUFFICIENT');
    expect(max).toEqual({ state: 'ok', value: 'v' });
    expect(runs).toBe(1);
  });

  // Was a defect (fixed): `isDeadline` accepts any object with remainingMs, remainingMsAt, epochMs, min and
  // toHeaders (src/deadline/deadline.ts), but the executor also calls `cap` on it (src/dependency/
  // attempt.ts Attempt.deadline, read by ctx.deadline and ctx.headers). Such a deadline passes
  // execute's check and then breaks the operation with a TypeError. Expected: refused up front with
  // INVALID_OPTIONS, or usable. Actual: "TypeError: this[#owner].deadline.cap is not a function"
  // when the operation reads ctx.headers.
  it('a deadline execute accepts is one the operation can read its headers from', async () => {
    const { dep, drain } = setup();
    const duck = {
      remainingMs: () => 100,
      remainingMsAt: () => 100,
      epochMs: () => 1_700_000_000_100,
      min(): unknown {
        return this;
      },
      toHeaders: () => ({}),
    };
    const box = watch(
      dep.execute((ctx) => Promise.resolve(Object.keys(ctx.headers).length), {
        idempotent: true,
        deadline: duck as never,
      }),
    );
    await drain();
    expect(box.state === 'ok' || isInvalidOptions(box.error), String(box.error)).toBe(true);
  });

  // Was a defect (fixed): a deadline whose remaining time reads NaN (a duck-typed deadline `isDeadline` accepts) is
  // refused, and the error clamps its remainingMs to 0, but the `deadline-insufficient` event carries
  // the raw NaN (src/dependency/notify.ts insufficient; execution.ts begin passes it unclamped).
  // Expected: no NaN in an event (0, as in the error). Actual: remainingMs NaN.
  it('a deadline reading NaN puts no NaN in the deadline-insufficient event', async () => {
    const { dep, events, drain } = setup();
    const nan = {
      remainingMs: () => Number.NaN,
      remainingMsAt: () => Number.NaN,
      epochMs: () => Number.NaN,
      min(): unknown {
        return this;
      },
      cap(): unknown {
        return this;
      },
      toHeaders: () => ({}),
    };
    const box = watch(dep.execute(() => Promise.resolve(1), { idempotent: true, deadline: nan as never }));
    await drain();
    expect(box.state).toBe('err');
    expect(events.length).toBeGreaterThan(0);
    for (const e of events) checkEvent(e);
  });
});

// ── budget ───────────────────────────────────────────────────────────────────────────────────────

describe('executor-api attacks: a retry budget shared between dependencies (SPEC R1, H3)', () => {
  it('retries and hedges of both dependencies never exceed the one budget, and each is paid (property)', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.record({
            at: fc.integer({ min: 0, max: 2_000 }),
            which: fc.constantFrom(0, 1),
            fail: fc.integer({ min: 0, max: 3 }),
            ms: fc.integer({ min: 0, max: 12 }),
          }),
          { minLength: 1, maxLength: 40 },
        ),
        fc.constantFrom(0, 0.1, 0.5),
        fc.constantFrom(0, 0.5, 1),
        async (calls, maxRatio, minPerSecond) => {
          const clock = new FakeClock();
          const budget = createRetryBudget({ clock, windowMs: 10_000, maxRatio, minPerSecond });
          const deps: Dependency[] = [0, 1].map((i) =>
            createDependency({
              name: `d${i}`,
              p99Ms: 10,
              attempts: 4,
              clock,
              random: () => 0.3,
              throttle: false,
              retryBudget: budget,
              ...(i === 0 ? { hedge: true, recorder: fixedLatency(3) } : {}),
            }),
          );
          let extrasStarted = 0;
          let originals = 0;
          for (const c of calls) {
            clock.setTimer(() => {
              let n = 0;
              void deps[c.which]!.execute(
                (ctx) => {
                  if (ctx.kind === 'original') originals += 1;
                  else extrasStarted += 1;
                  n += 1;
                  return answer(clock, ctx, c.ms, () => {
                    if (n <= c.fail) throw reset();
                    return 'ok';
                  });
                },
                { idempotent: true, deadline: 400 },
              ).catch(() => {});
            }, c.at);
          }
          await clock.runAllAsync();
          await flush();
          const { extras } = budget.state();
          expect(extrasStarted).toBe(extras);
          const floor = Math.floor(minPerSecond * 10 + 1e-9);
          expect(extras).toBeLessThanOrEqual(Math.max(floor, Math.floor(originals * maxRatio + 1e-9)));
        },
      ),
      { numRuns: 60 },
    );
  });
});

describe('executor-api attacks: a retry budget that throws (SPEC R1, X7)', () => {
  /** A budget of the caller's making whose methods throw on demand. */
  const brokenBudget = (state: { original: boolean; extra: boolean }) => ({
    recordOriginal(): void {
      if (state.original) throw new Error('recordOriginal broke');
    },
    tryConsume(): boolean {
      if (state.extra) throw new Error('tryConsume broke');
      return true;
    },
    state: () => ({ originals: 0, extras: 0, ratio: 0 }),
  });

  // Was a defect (fixed): a budget throwing in `recordOriginal` as a call starts left the slot of the
  // concurrency limit it had just taken held for ever (execution.ts `begin`): with one slot, every
  // later call queued and failed CONCURRENCY_LIMITED with nothing in flight. Expected: the call
  // rejects with the budget's error, and the slot is free for the next one.
  it('Was a defect: a budget throwing as a call starts rejects that call and frees its slot', async () => {
    const clock = new FakeClock();
    const state = { original: true, extra: false };
    const dep = createDependency({
      name: 'broken-budget',
      p99Ms: 10,
      clock,
      retryBudget: brokenBudget(state),
      concurrencyLimit: { maxInFlight: 1, maxQueue: 0 },
    });
    const first = watch(dep.execute(async () => 'never', { idempotent: true }));
    await flush();
    expect(first.state).toBe('err');
    expect((first.error as Error).message).toBe('recordOriginal broke');
    state.original = false;
    const second = watch(dep.execute(async () => 'ok', { idempotent: true }));
    await clock.runAllAsync();
    await flush();
    expect(second.state).toBe('ok');
    expect(dep.concurrency()?.inFlight).toBe(0);
  });

  // Was a defect (fixed): a budget throwing in `tryConsume` when a retry (or a hedge, from its timer)
  // asked to be paid threw out of the executor's decision or out of a timer callback (an uncaught
  // exception for the hedge). Expected: the extra attempt is refused, as by an empty budget, with a
  // warning; the call ends with its own failure.
  it('Was a defect: a budget throwing when a retry or a hedge asks to be paid refuses it, with a warning', async () => {
    const warned = vi.spyOn(process, 'emitWarning').mockImplementation(() => {});
    try {
      const clock = new FakeClock();
      const dep = createDependency({
        name: 'broken-extra',
        p99Ms: 10,
        attempts: 3,
        clock,
        random: () => 0.5,
        throttle: false,
        retryBudget: brokenBudget({ original: false, extra: true }),
      });
      let runs = 0;
      const call = watch(
        dep.execute(
          async () => {
            runs += 1;
            throw Object.assign(new Error('reset'), { code: 'ECONNRESET' });
          },
          { idempotent: true, deadline: 1_000 },
        ),
      );
      await clock.runAllAsync();
      await flush();
      expect(call.state).toBe('err');
      expect(runs).toBe(1);
      expect(warned).toHaveBeenCalledWith(expect.stringMatching(/tryConsume broke/), 'PrazoWarning');
    } finally {
      warned.mockRestore();
    }
  });
});

// ── invariants under random traffic ──────────────────────────────────────────────────────────────

describe('executor-api attacks: invariants under random hostile traffic (property)', () => {
  const stepArb = fc.record({
    ms: fc.integer({ min: 0, max: 300 }),
    end: fc.constantFrom('ok', 'bad', 'reset', 'sync-throw', 'hang', 'deaf'),
  });
  const callArb = fc.record({
    at: fc.integer({ min: 0, max: 300 }),
    idempotent: fc.boolean(),
    retryResponseTimeout: fc.option(fc.boolean(), { nil: undefined }),
    deadlineMs: fc.integer({ min: 0, max: 800 }),
    abortAt: fc.option(fc.integer({ min: 0, max: 900 }), { nil: undefined }),
    steps: fc.array(stepArb, { minLength: 1, maxLength: 4 }),
  });

  it('every call settles by its deadline; non-idempotent runs once; every value returned or discarded exactly once; no slot, timer or NaN left', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(callArb, { minLength: 1, maxLength: 12 }),
        fc.boolean(),
        fc.boolean(),
        async (calls, hedge, limit) => {
          const clock = new FakeClock();
          const dep = createDependency({
            name: 'random',
            p99Ms: 50,
            clock,
            attempts: 3,
            random: () => 0.5,
            hedge,
            recorder: fixedLatency(20, 5),
            throttle: false,
            ...(limit ? { concurrencyLimit: { maxInFlight: 2, maxQueue: 3 } } : {}),
          });
          const events: DependencyEvent[] = [];
          dep.on((e) => events.push(e));
          const returned: string[] = [];
          const discarded: string[] = [];
          const produced: string[] = [];
          const runs = calls.map(() => 0);
          const ends: { at: number; deadlineAt: number }[] = [];
          for (const [i, c] of calls.entries()) {
            clock.setTimer(() => {
              const ac = new AbortController();
              if (c.abortAt !== undefined) clock.setTimer(() => ac.abort(new Error('caller')), c.abortAt);
              const deadlineAt = clock.now() + c.deadlineMs;
              const options: ExecuteOptions<string> = {
                idempotent: c.idempotent,
                deadline: c.deadlineMs,
                signal: ac.signal,
                classify: (v) => ({ retryable: v.startsWith('bad:') }),
                discard: (v) => discarded.push(v.replace('bad:', '')),
                ...(c.retryResponseTimeout === undefined
                  ? {}
                  : { retryResponseTimeout: c.retryResponseTimeout }),
              };
              const operation = (ctx: AttemptContext): Promise<string> => {
                const step = c.steps[Math.min(runs[i]!, c.steps.length - 1)]!;
                runs[i]! += 1;
                const value = `c${i}a${ctx.attempt}`;
                if (step.end === 'sync-throw') throw reset();
                if (step.end === 'hang') return new Promise(() => {});
                return new Promise((resolve, reject) => {
                  const t = clock.setTimer(() => {
                    if (step.end === 'reset') return reject(reset());
                    produced.push(value);
                    resolve(step.end === 'bad' ? `bad:${value}` : value);
                  }, step.ms);
                  if (step.end !== 'deaf')
                    ctx.signal.addEventListener('abort', () => {
                      clock.clearTimer(t);
                      reject(ctx.signal.reason);
                    });
                });
              };
              dep.execute(operation, options).then(
                (v) => {
                  returned.push(v.replace('bad:', ''));
                  ends.push({ at: clock.now(), deadlineAt });
                },
                () => ends.push({ at: clock.now(), deadlineAt }),
              );
            }, c.at);
          }
          await clock.runAllAsync();
          await flush();
          expect(ends).toHaveLength(calls.length);
          for (const e of ends) expect(e.at).toBeLessThanOrEqual(e.deadlineAt);
          for (const [i, c] of calls.entries()) if (!c.idempotent) expect(runs[i]).toBeLessThanOrEqual(1);
          for (const v of returned) expect(discarded).not.toContain(v);
          expect(new Set(discarded).size).toBe(discarded.length);
          expect([...returned, ...discarded].sort()).toEqual([...produced].sort());
          if (limit) expect(dep.concurrency()).toMatchObject({ inFlight: 0, queued: 0 });
          for (const e of events) checkEvent(e);
          expect(clock.pendingTimers()).toBe(0);
        },
      ),
      { numRuns: 250 },
    );
  });
});

// ── load ─────────────────────────────────────────────────────────────────────────────────────────

describe('executor-api attacks: load', () => {
  it('16,000 queued calls aborted at once cost about 8× 2,000 (linear), and leave no slot or timer', async () => {
    const run = async (n: number): Promise<number> => {
      const started = performance.now();
      const { clock, dep } = setup({
        p99Ms: 50,
        hedge: true,
        recorder: fixedLatency(20, 5),
        concurrencyLimit: { maxInFlight: 100, maxQueue: n },
      });
      const ac = new AbortController();
      const all: Promise<unknown>[] = [];
      for (let i = 0; i < n; i += 1)
        all.push(
          dep
            .execute((ctx) => answer(clock, ctx, (n - i) % 30, () => i), {
              idempotent: true,
              signal: ac.signal,
              deadline: 10_000,
            })
            .catch(() => 0),
        );
      clock.advance(10);
      ac.abort();
      await clock.runAllAsync();
      await Promise.all(all);
      expect(dep.concurrency()).toMatchObject({ inFlight: 0, queued: 0 });
      expect(clock.pendingTimers()).toBe(0);
      return performance.now() - started;
    };
    await run(2_000); // warm-up
    const small = await run(2_000);
    const large = await run(16_000);
    expect(large / Math.max(small, 5)).toBeLessThan(32); // linear is 8; quadratic would be 64
  });

  // Was a defect (fixed): Listeners.add and dispose copy the whole listener array each time (src/dependency/
  // events.ts), so n subscriptions cost O(n²): 5,000 on/dispose took ~0.1 s, 20,000 took ~4.3 s
  // here (a listener per request under load). Expected: linear (20,000 well under 1.5 s). Actual:
  // quadratic; the test bails out at 1.5 s.
  it('20,000 listeners subscribed then disposed take linear time', () => {
    const { dep } = setup();
    const started = performance.now();
    const subs = [];
    for (let i = 0; i < 20_000; i += 1) {
      subs.push(dep.on(() => {}));
      if (i % 1_000 === 0) expect(performance.now() - started).toBeLessThan(1_500);
    }
    for (const [i, s] of subs.entries()) {
      s.dispose();
      if (i % 1_000 === 0) expect(performance.now() - started).toBeLessThan(1_500);
    }
    expect(performance.now() - started).toBeLessThan(1_500);
  });
});
