import fc from 'fast-check';
import { describe, expect, it, vi } from 'vitest';
import {
  classifyFailure,
  isValidIdempotencyKey,
  parseRetryAfter,
  retryAfterMs,
} from '../../../src/retry/index.js';
import { anyText, FUZZ_TIMEOUT_MS, isSafeResult, RUNS, TEN_MB, timed } from './arbitraries.js';

vi.setConfig({ testTimeout: FUZZ_TIMEOUT_MS });

/**
 * Fuzzing what a server (or a hostile one) controls in an answer: `Retry-After`, the status, the shape
 * of an error (SPEC R2, R3, R5). None of it may crash the client, yield NaN or an unbounded wait, or
 * turn a deliberate refusal into a retry.
 */

const MAX_WAIT = 2 ** 31 - 1;
const NOW = 1_700_000_000_000;
const anyNow = fc.oneof(
  fc.constant(NOW),
  fc.double(),
  fc.integer({ min: -(2 ** 53), max: 2 ** 53 }),
  fc.constantFrom(Number.NaN, Number.POSITIVE_INFINITY, -0),
);
const anyValue = fc.oneof(anyText, fc.anything({ maxDepth: 1 }));
const safeWait = (v: unknown): boolean => isSafeResult(v) && (v === undefined || (v as number) <= MAX_WAIT);

describe('fuzz: Retry-After', () => {
  it('any value at any clock reading: a finite wait in [0, 2^31-1] ms, or undefined', () => {
    fc.assert(
      fc.property(anyValue, anyNow, (value, now) => {
        expect(safeWait(parseRetryAfter(value, now))).toBe(true);
      }),
      { numRuns: RUNS },
    );
  });

  it('delay-seconds are read exactly (and capped), with optional spaces', () => {
    fc.assert(
      fc.property(fc.bigInt({ min: 0n, max: 10n ** 16n - 1n }), fc.constantFrom('', ' ', '\t'), (n, pad) => {
        expect(parseRetryAfter(`${pad}${n}${pad}`, NOW)).toBe(Math.min(Number(n) * 1000, MAX_WAIT));
      }),
      { numRuns: RUNS },
    );
  });

  it('an IMF-fixdate is read as the wait from now to that second, never negative', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 253_402_300_799 }),
        fc.integer({ min: 0, max: 2 ** 45 }),
        (s, now) => {
          const wait = parseRetryAfter(new Date(s * 1000).toUTCString(), now);
          expect(wait).toBe(Math.min(Math.max(0, s * 1000 - now), MAX_WAIT));
        },
      ),
      { numRuns: RUNS },
    );
  });

  it('a 10 MB Retry-After is read in one pass: 10 MB of digits is the longest wait, 10 MB of dates refused at once', () => {
    const huge = '9'.repeat(TEN_MB);
    const date = `${'Sun, 06 Nov 1994 08:49:37 GMT '.repeat(TEN_MB / 32)}`;
    // Digits are read in one pass (~30 ms for 10 MB on a quiet machine): linear, with room for a busy one.
    expect(timed(() => expect(parseRetryAfter(huge, NOW)).toBe(MAX_WAIT))).toBeLessThan(1_000);
    expect(timed(() => expect(parseRetryAfter(date, NOW)).toBeUndefined())).toBeLessThan(100);
  });

  it('only 429 and 503 carry a wait; any other status ignores the header', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 1000 }), anyText, (status, value) => {
        const wait = retryAfterMs(status, { 'retry-after': value }, NOW);
        if (status !== 429 && status !== 503) expect(wait).toBeUndefined();
        expect(safeWait(wait)).toBe(true);
      }),
      { numRuns: RUNS },
    );
  });
});

/** Error-like shapes: statuses, codes, headers, causes and aggregates, nested a few levels. */
const errorShape = fc.letrec<{ err: unknown }>((tie) => ({
  err: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.anything({ maxDepth: 1 }),
    fc.record(
      {
        status: fc.oneof(fc.integer({ min: -1, max: 1000 }), fc.double(), anyText),
        statusCode: fc.integer({ min: 0, max: 999 }),
        code: fc.oneof(
          fc.constantFrom(
            'ECONNREFUSED',
            'ECONNRESET',
            'UND_ERR_SOCKET',
            'ENOTFOUND',
            'UND_ERR_HEADERS_TIMEOUT',
          ),
          fc.integer(),
          anyText,
        ),
        headers: fc.record({ 'retry-after': anyValue }, { requiredKeys: [] }),
        cause: tie('err'),
        errors: fc.array(tie('err'), { maxLength: 10 }),
        metadata: fc.constant({}),
      },
      { requiredKeys: [] },
    ),
  ),
}));

describe('fuzz: classifyFailure', () => {
  it('never throws; a deliberate 4xx is never retryable; a wait is always bounded', () => {
    fc.assert(
      fc.property(errorShape.err, fc.boolean(), (failure, retryResponseTimeout) => {
        const v = classifyFailure(failure, { nowEpochMs: NOW, retryResponseTimeout });
        expect(typeof v.retryable).toBe('boolean');
        expect(safeWait(v.retryAfterMs)).toBe(true);
        if (
          v.status !== undefined &&
          v.status >= 400 &&
          v.status < 500 &&
          v.status !== 408 &&
          v.status !== 429
        )
          expect(v.retryable).toBe(false);
      }),
      { numRuns: RUNS },
    );
  });

  it('a status the server chose on purpose cannot force a retry, whatever its Retry-After says', () => {
    const deliberate = fc.integer({ min: 400, max: 499 }).filter((s) => s !== 408 && s !== 429);
    fc.assert(
      fc.property(deliberate, anyText, (status, retryAfter) => {
        const v = classifyFailure({ status, headers: { 'retry-after': retryAfter } }, { nowEpochMs: NOW });
        expect(v).toMatchObject({ retryable: false, kind: 'status' });
        expect(v.retryAfterMs).toBeUndefined();
      }),
      { numRuns: RUNS },
    );
  });

  it('a cyclic cause chain and a wide aggregate are classified at bounded cost', () => {
    const a: Record<string, unknown> = { code: 'ENOPE' };
    a.cause = { cause: a };
    expect(classifyFailure(a).retryable).toBe(false);
    const wide = { errors: Array.from({ length: 1_000_000 }, () => ({ code: 'ECONNREFUSED' })) };
    expect(timed(() => expect(classifyFailure(wide).retryable).toBe(true))).toBeLessThan(100);
  });
});

describe('fuzz: idempotency keys', () => {
  it('a key accepted as valid is 1-255 visible ASCII characters: it cannot smuggle a header line', () => {
    fc.assert(
      fc.property(fc.oneof(anyText, fc.string({ maxLength: 300 }), fc.anything({ maxDepth: 0 })), (key) => {
        if (isValidIdempotencyKey(key)) {
          expect(key.length).toBeGreaterThanOrEqual(1);
          expect(key.length).toBeLessThanOrEqual(255);
          expect(/^[\x21-\x7e]+$/.test(key)).toBe(true);
        }
      }),
      { numRuns: RUNS },
    );
    expect(timed(() => expect(isValidIdempotencyKey('k'.repeat(TEN_MB))).toBe(false))).toBeLessThan(100);
  });
});
