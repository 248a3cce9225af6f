import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { InvalidOptionsError, isInvalidOptions } from '../errors/index.js';
import { calibrateTimeout, slackedTimeoutMs } from './timeout.js';

const problemsOf = (fn: () => unknown): readonly string[] => {
  try {
    fn();
  } catch (error) {
    if (error instanceof InvalidOptionsError) return error.problems;
    throw error;
  }
  throw new Error('expected InvalidOptionsError');
};

describe('calibrateTimeout: the seed test cases (SPEC V4)', () => {
  it('keeps the timeout above the measured p99 (seed case 1: p99 180, deadline 1500)', () => {
    const profile = { p99Ms: 180, userDeadlineMs: 1500, attempts: 2 };
    const config = calibrateTimeout(profile);
    expect(config.responseMs).toBeGreaterThan(profile.p99Ms);
    expect(config.warning).toBeNull();
    // The seed's worked example: response 252, 2 attempts, still slack in the deadline. Its connect
    // timeout, min(400, 252) = 252, is halved here: a dead instance must fail its connect strictly
    // before the attempt's own limit to be seen as one (retried at once, SPEC R4), and every part of
    // prazo (the HTTP client, the executor, the gauges) uses this one number.
    expect(config).toEqual({ connectMs: 126, responseMs: 252, attempts: 2, warning: null, feasible: true });
  });

  it('reduces attempts instead of shrinking the timeout when the deadline is tight (seed case 2)', () => {
    const config = calibrateTimeout({ p99Ms: 180, userDeadlineMs: 600, attempts: 3 });
    expect(config.responseMs).toBeGreaterThan(180);
    expect(config.responseMs).toBe(252);
    expect(config.attempts).toBeLessThan(3);
    expect(config.attempts).toBe(2);
    expect(config.warning).toBe('deadline of 600 ms fits 2 attempt(s), not 3');
    expect(config.feasible).toBe(true);
  });
});

describe('calibrateTimeout: beyond the seed (SPEC C1–C3)', () => {
  it('says the deadline is infeasible when not even one attempt fits', () => {
    const config = calibrateTimeout({ p99Ms: 180, userDeadlineMs: 200, attempts: 2 });
    expect(config.feasible).toBe(false);
    expect(config.attempts).toBe(1);
    expect(config.responseMs).toBe(252);
    expect(config.warning).toContain('deadline of 200 ms fits 0 attempt(s), not 2');
    expect(config.warning).toContain('infeasible');
    expect(config.warning).toContain('282 ms');
  });

  it('fits exactly one attempt: warns, stays feasible', () => {
    // one attempt needs 252 + 30 = 282 ms; two need 564.
    const config = calibrateTimeout({ p99Ms: 180, userDeadlineMs: 300, attempts: 2 });
    expect(config).toMatchObject({ attempts: 1, feasible: true, responseMs: 252 });
    expect(config.warning).toBe('deadline of 300 ms fits 1 attempt(s), not 2');
  });

  it('a deadline exactly equal to attempts × (timeout + overhead) fits', () => {
    expect(calibrateTimeout({ p99Ms: 180, userDeadlineMs: 564 }).warning).toBeNull();
    expect(calibrateTimeout({ p99Ms: 180, userDeadlineMs: 563 }).attempts).toBe(1);
  });

  it('handles p99 of 0 ms and 1 ms: a timeout is never 0 (0 means "no timeout" to clients)', () => {
    expect(calibrateTimeout({ p99Ms: 0 })).toMatchObject({ responseMs: 1, connectMs: 1, attempts: 2 });
    expect(calibrateTimeout({ p99Ms: 1 })).toMatchObject({ responseMs: 2, connectMs: 1 });
  });

  it('handles a very large p99: connect stays capped, the deadline becomes infeasible', () => {
    const big = calibrateTimeout({ p99Ms: 600_000, userDeadlineMs: 1500 });
    expect(big).toMatchObject({ responseMs: 840_000, connectMs: 400, attempts: 1, feasible: false });
    const day = calibrateTimeout({ p99Ms: 86_400_000 });
    expect(day.responseMs).toBe(120_960_000);
    expect(Number.isFinite(day.responseMs)).toBe(true);
  });

  it('without a deadline keeps the attempts asked and warns nothing', () => {
    expect(calibrateTimeout({ p99Ms: 180, attempts: 4 })).toEqual({
      connectMs: 126,
      responseMs: 252,
      attempts: 4,
      warning: null,
      feasible: true,
    });
  });

  it('caps the connect timeout separately from the response timeout (SPEC C2)', () => {
    expect(calibrateTimeout({ p99Ms: 1000 })).toMatchObject({ connectMs: 400, responseMs: 1400 });
    expect(calibrateTimeout({ p99Ms: 1000, connectCapMs: 150 }).connectMs).toBe(150);
  });

  it('rounds up without inheriting floating-point noise', () => {
    expect(slackedTimeoutMs(180, 1.35)).toBe(243); // 243.00000000000003 in IEEE 754
    expect(slackedTimeoutMs(180, 1.4)).toBe(252); // 251.99999999999997
    expect(slackedTimeoutMs(101, 1.3)).toBe(132); // 131.3
  });

  it('honours slack and overhead', () => {
    expect(calibrateTimeout({ p99Ms: 100, slack: 1.5 }).responseMs).toBe(150);
    expect(calibrateTimeout({ p99Ms: 100, userDeadlineMs: 300, overheadMs: 0 }).attempts).toBe(2);
    expect(calibrateTimeout({ p99Ms: 100, userDeadlineMs: 300, overheadMs: 11 }).attempts).toBe(1);
  });

  it('rejects a slack outside [1.3, 1.5] unless forced, and within [1, 3] when forced', () => {
    expect(() => calibrateTimeout({ p99Ms: 100, slack: 2 })).toThrow(InvalidOptionsError);
    expect(calibrateTimeout({ p99Ms: 100, slack: 2, forceSlack: true }).responseMs).toBe(200);
    expect(() => calibrateTimeout({ p99Ms: 100, slack: 0.9, forceSlack: true })).toThrow(/slack/);
  });

  it('lists every invalid input in one INVALID_OPTIONS error', () => {
    const problems = problemsOf(() =>
      calibrateTimeout({
        p99Ms: Number.NaN,
        userDeadlineMs: -5,
        attempts: 1.5,
        slack: 7,
        connectCapMs: 0,
        overheadMs: -1,
      }),
    );
    expect(problems).toHaveLength(6);
    for (const name of ['p99Ms', 'userDeadlineMs', 'attempts', 'slack', 'connectCapMs', 'overheadMs']) {
      expect(problems.some((p) => p.includes(`\`${name}\``))).toBe(true);
    }
    try {
      calibrateTimeout({ p99Ms: -1 });
    } catch (error) {
      expect(isInvalidOptions(error)).toBe(true);
      expect((error as InvalidOptionsError).code).toBe('INVALID_OPTIONS');
    }
  });

  it('requires p99Ms, and rejects wrong types without crashing', () => {
    expect(problemsOf(() => calibrateTimeout({} as never))[0]).toMatch(/p99Ms.*required/);
    expect(problemsOf(() => calibrateTimeout({ p99Ms: '180' } as never))).toHaveLength(1);
    expect(problemsOf(() => calibrateTimeout(undefined as never))).toHaveLength(1);
  });
});

describe('calibrateTimeout: properties', () => {
  const input = fc.record({
    p99Ms: fc.double({ min: 0, max: 86_400_000, noNaN: true }),
    userDeadlineMs: fc.option(fc.double({ min: 0.001, max: 2 ** 31 - 1, noNaN: true }), { nil: undefined }),
    attempts: fc.integer({ min: 1, max: 10 }),
    slack: fc.double({ min: 1.3, max: 1.5, noNaN: true }),
    connectCapMs: fc.double({ min: 0.001, max: 60_000, noNaN: true }),
    overheadMs: fc.double({ min: 0, max: 60_000, noNaN: true }),
  });

  it('the response timeout is never below p99 nor below p99 × slack', () => {
    fc.assert(
      fc.property(input, (i) => {
        const c = calibrateTimeout(i);
        expect(c.responseMs).toBeGreaterThanOrEqual(i.p99Ms);
        expect(c.responseMs).toBeGreaterThanOrEqual(i.p99Ms * i.slack * (1 - 1e-9));
        expect(c.responseMs).toBeGreaterThanOrEqual(1);
        expect(Number.isInteger(c.responseMs)).toBe(true);
        expect(c.connectMs).toBeLessThanOrEqual(Math.min(i.connectCapMs, Math.ceil(c.responseMs / 2)));
      }),
      { numRuns: 2000 },
    );
  });

  it('attempts × (timeout + overhead) never exceeds the deadline unless the warning says so', () => {
    fc.assert(
      fc.property(input, (i) => {
        const c = calibrateTimeout(i);
        expect(c.attempts).toBeGreaterThanOrEqual(1);
        expect(c.attempts).toBeLessThanOrEqual(i.attempts);
        if (i.userDeadlineMs === undefined) {
          expect(c).toMatchObject({ attempts: i.attempts, warning: null, feasible: true });
          return;
        }
        const total = c.attempts * (c.responseMs + i.overheadMs);
        if (c.warning === null) {
          expect(total).toBeLessThanOrEqual(i.userDeadlineMs);
          expect(c.attempts).toBe(i.attempts);
        } else {
          expect(c.warning).toContain(`not ${i.attempts}`);
          if (c.feasible) {
            expect(total).toBeLessThanOrEqual(i.userDeadlineMs);
            // the most attempts that fit, not fewer
            expect(total + c.responseMs + i.overheadMs).toBeGreaterThan(i.userDeadlineMs);
          } else {
            expect(c.warning).toContain('infeasible');
            expect(c.responseMs + i.overheadMs).toBeGreaterThan(i.userDeadlineMs);
          }
        }
      }),
      { numRuns: 2000 },
    );
  });

  it('a tighter deadline never shrinks the timeout, only the attempts', () => {
    fc.assert(
      fc.property(input, fc.double({ min: 0.01, max: 1, noNaN: true }), (i, f) => {
        if (i.userDeadlineMs === undefined) return;
        const loose = calibrateTimeout(i);
        const tight = calibrateTimeout({ ...i, userDeadlineMs: Math.max(0.001, i.userDeadlineMs * f) });
        expect(tight.responseMs).toBe(loose.responseMs);
        expect(tight.attempts).toBeLessThanOrEqual(loose.attempts);
      }),
    );
  });
});
