import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { fullJitterMs } from './backoff.js';
import type { FailureVerdict } from './classify.js';
import { fitsDeadline, planRetry, type RetryPlanInput } from './planner.js';

const retryable: FailureVerdict = { retryable: true, immediate: false, kind: 'status', status: 503 };
const connect: FailureVerdict = { retryable: true, immediate: true, kind: 'connect' };
const base: RetryPlanInput = {
  verdict: retryable,
  idempotent: true,
  attemptsMade: 1,
  maxAttempts: 3,
  remainingMs: 1_000,
  p99Ms: 100,
  backoff: { baseMs: 25, capMs: 1_000 },
  random: () => 0.5,
};

describe('planRetry (SPEC R3, R4, R5, R6)', () => {
  it('stops on what must not repeat, in that order', () => {
    expect(planRetry({ ...base, verdict: { ...retryable, retryable: false } })).toMatchObject({
      reason: 'not-retryable',
    });
    expect(planRetry({ ...base, idempotent: false })).toMatchObject({ reason: 'not-idempotent' });
    expect(planRetry({ ...base, attemptsMade: 3 })).toMatchObject({ reason: 'attempts-exhausted' });
    expect(planRetry({ ...base, remainingMs: 99 })).toMatchObject({ reason: 'deadline-insufficient' });
  });

  it('retries a connect failure at once', () => {
    expect(planRetry({ ...base, verdict: connect })).toEqual({
      action: 'retry',
      delayMs: 0,
      wait: 'immediate',
    });
  });

  it("waits exactly the server's Retry-After, or stops when it does not fit", () => {
    const v = { ...retryable, retryAfterMs: 700 };
    expect(planRetry({ ...base, verdict: v })).toEqual({
      action: 'retry',
      delayMs: 700,
      wait: 'retry-after',
    });
    expect(planRetry({ ...base, verdict: v, remainingMs: 799 })).toEqual({
      action: 'stop',
      reason: 'retry-after-too-long',
      waitMs: 700,
    });
  });

  it('blames the deadline, not the server, when a Retry-After of 0 meets a deadline below the p99', () => {
    const now = { ...retryable, retryAfterMs: 0 };
    expect(planRetry({ ...base, verdict: now })).toEqual({
      action: 'retry',
      delayMs: 0,
      wait: 'retry-after',
    });
    expect(planRetry({ ...base, verdict: now, remainingMs: 100 })).toMatchObject({ action: 'retry' });
    expect(planRetry({ ...base, verdict: now, remainingMs: 99 })).toEqual({
      action: 'stop',
      reason: 'deadline-insufficient',
    });
    // A negative wait from a caller's classify must not buy an attempt below the p99 either.
    const negative = { ...retryable, retryAfterMs: -50 };
    expect(planRetry({ ...base, verdict: negative, remainingMs: 99 })).toMatchObject({
      reason: 'deadline-insufficient',
    });
  });

  it('draws full jitter below a doubling ceiling', () => {
    expect(planRetry({ ...base, random: () => 0.5 })).toMatchObject({ delayMs: 12.5, wait: 'backoff' });
    expect(planRetry({ ...base, attemptsMade: 2, random: () => 0.5 })).toMatchObject({ delayMs: 25 });
  });

  it('never lets a wait push the next attempt past the point where its p99 still fits', () => {
    fc.assert(
      fc.property(
        fc.record({
          remainingMs: fc.double({ min: 0, max: 5_000, noNaN: true }),
          p99Ms: fc.double({ min: 0, max: 2_000, noNaN: true }),
          attemptsMade: fc.integer({ min: 1, max: 40 }),
          r: fc.double({ min: 0, max: 1, noNaN: true, maxExcluded: true }),
          immediate: fc.boolean(),
          retryAfterMs: fc.option(fc.double({ min: 0, max: 5_000, noNaN: true }), { nil: undefined }),
        }),
        (x) => {
          const d = planRetry({
            ...base,
            maxAttempts: 50,
            remainingMs: x.remainingMs,
            p99Ms: x.p99Ms,
            attemptsMade: x.attemptsMade,
            random: () => x.r,
            verdict: { ...retryable, immediate: x.immediate, retryAfterMs: x.retryAfterMs },
          });
          if (d.action === 'retry') {
            expect(d.delayMs).toBeGreaterThanOrEqual(0);
            expect(x.remainingMs - d.delayMs).toBeGreaterThanOrEqual(x.p99Ms - 1e-9);
            expect(x.remainingMs - d.delayMs).toBeGreaterThan(0);
            if (x.retryAfterMs !== undefined) expect(d.delayMs).toBe(x.retryAfterMs);
          } else {
            expect(x.retryAfterMs !== undefined || !fitsDeadline(x.remainingMs, x.p99Ms)).toBe(true);
          }
        },
      ),
    );
  });
});

describe('attempt slices and backoff', () => {
  it('starts no attempt with less than its p99 left, nor with less than 1 ms', () => {
    expect(fitsDeadline(0, 0)).toBe(false);
    expect(fitsDeadline(0.5, 0)).toBe(false);
    expect(fitsDeadline(180, 180)).toBe(true);
  });

  it('keeps full jitter in [0, ceiling) whatever the random source returns', () => {
    fc.assert(
      fc.property(fc.integer({ min: -3, max: 100 }), fc.double(), (retry, r) => {
        const ms = fullJitterMs(retry, { baseMs: 25, capMs: 1_000 }, () => r);
        const ceiling = Math.min(1_000, 25 * 2 ** Math.min(Math.max(retry - 1, 0), 30));
        expect(ms >= 0 && ms < ceiling).toBe(true);
      }),
    );
    expect(fullJitterMs(1, { baseMs: 0, capMs: 0 }, () => 0.5)).toBe(0);
  });
});
