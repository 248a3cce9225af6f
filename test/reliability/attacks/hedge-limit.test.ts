import { describe, expect, it, vi } from 'vitest';
import { InvalidOptionsError } from '../../../src/errors/index.js';
import { createHedgePolicy } from '../../../src/hedge/policy.js';
import type { LatencySource } from '../../../src/latency/types.js';

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
  // Was a defect (fixed): `typeof source?.quantile` and the validator's read of the options ran
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
      ).toEqual(['options cannot be read: a value that cannot be shown']);
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
