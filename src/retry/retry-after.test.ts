import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseRetryAfter, readHeader, retryAfterMs } from './retry-after.js';

const NOW = 1_700_000_000_000;

describe('parseRetryAfter (SPEC R3)', () => {
  it('reads delay-seconds as ms', () => {
    expect(parseRetryAfter('0', NOW)).toBe(0);
    expect(parseRetryAfter('2', NOW)).toBe(2_000);
    expect(parseRetryAfter(' 120\t', NOW)).toBe(120_000);
  });

  it('reads an HTTP-date against the wall clock, a past date meaning now', () => {
    expect(parseRetryAfter('Tue, 14 Nov 2023 22:13:25 GMT', NOW)).toBe(5_000);
    expect(parseRetryAfter('Tue, 14 Nov 2023 22:13:00 GMT', NOW)).toBe(0);
  });

  it('refuses what is not strictly one of the two forms', () => {
    for (const bad of ['-1', '1.5', '1e3', '+3', '0x10', '', ' ', '3 s', 'soon', '١٢', 'Infinity', 'NaN']) {
      expect(parseRetryAfter(bad, NOW), bad).toBeUndefined();
    }
    expect(parseRetryAfter(undefined, NOW)).toBeUndefined();
    expect(parseRetryAfter(42, NOW)).toBeUndefined();
  });

  it('bounds the input and the wait', () => {
    expect(parseRetryAfter(`${' '.repeat(60)}1234x`, NOW)).toBeUndefined();
    // The bound is on the value, not its padding: a date with 36 spaces after it is still a date.
    expect(parseRetryAfter(`Tue, 14 Nov 2023 22:13:25 GMT${' '.repeat(36)}`, NOW)).toBe(5_000);
    expect(parseRetryAfter(`Tue, 14 Nov 2023 22:13:25 GMT ${'x'.repeat(35)}`, NOW)).toBeUndefined();
    expect(parseRetryAfter('9999999999999999', NOW)).toBe(2 ** 31 - 1);
    expect(parseRetryAfter('Fri, 01 Jan 9999 00:00:00 GMT', NOW)).toBe(2 ** 31 - 1);
  });

  it('reads delay-seconds too large to represent as the largest wait, 17 digits and more like 16 (#14)', () => {
    // Before: 16 digits were capped but 17+ were refused, and the client retried after its own ~25 ms.
    for (const digits of [16, 17, 20, 40, 64]) {
      expect(parseRetryAfter('9'.repeat(digits), NOW), `${digits} digits`).toBe(2 ** 31 - 1);
    }
    expect(parseRetryAfter(`1${'0'.repeat(30)}`, NOW)).toBe(2 ** 31 - 1);
    expect(parseRetryAfter('0'.repeat(40), NOW)).toBe(0);
    fc.assert(
      fc.property(fc.stringMatching(/^[0-9]{1,64}$/), (digits) => {
        const wait = parseRetryAfter(digits, NOW);
        expect(wait).toBe(Math.min(Number(digits) * 1000, 2 ** 31 - 1));
      }),
    );
  });

  it('reads delay-seconds of any length as the wait they ask for, the longest past the cap (#7)', () => {
    // Before: over 64 characters was malformed even when all digits, and the client retried after its
    // own ~25 ms backoff a server that asked for the longest wait (while 40 digits returned at once).
    for (const digits of [65, 80, 1_000, 100_000]) {
      expect(parseRetryAfter('9'.repeat(digits), NOW), `${digits} digits`).toBe(2 ** 31 - 1);
    }
    expect(parseRetryAfter(`${'0'.repeat(100)}7`, NOW)).toBe(7_000); // leading zeros count for nothing
    expect(parseRetryAfter('0'.repeat(100), NOW)).toBe(0);
    expect(parseRetryAfter(`${' '.repeat(60)}12345\t`, NOW)).toBe(12_345_000); // spaces around digits
    expect(parseRetryAfter(`${'9'.repeat(80)}x`, NOW)).toBeUndefined(); // not digits: past the bound
    expect(parseRetryAfter(`${'9'.repeat(80)} 1`, NOW)).toBeUndefined();
    fc.assert(
      fc.property(fc.stringMatching(/^[0-9]{65,300}$/), fc.constantFrom('', ' ', '\t'), (digits, pad) => {
        const exact = BigInt(digits) * 1000n;
        const wait = exact > BigInt(2 ** 31 - 1) ? 2 ** 31 - 1 : Number(exact);
        expect(parseRetryAfter(`${pad}${digits}${pad}`, NOW)).toBe(wait);
        expect(parseRetryAfter(`${digits}s`, NOW)).toBeUndefined();
      }),
    );
  });

  it('reads 10 MB of digits in one pass, and refuses 10 MB of anything else as fast', () => {
    const digits = '9'.repeat(10 * 1024 * 1024);
    const garbage = `${digits}x`;
    const spaces = ' '.repeat(digits.length);
    // One plain pass over the same input, timed alongside: on a loaded machine both slow down alike.
    const base = performance.now();
    let sum = 0;
    for (const s of [digits, garbage, spaces]) {
      sum += s.trim().length;
      for (let i = 0; i < s.length; i += 1) sum += s.charCodeAt(i);
    }
    const baseline = performance.now() - base;
    expect(sum).toBeGreaterThan(0);
    const started = performance.now();
    expect(parseRetryAfter(digits, NOW)).toBe(2 ** 31 - 1);
    expect(parseRetryAfter(garbage, NOW)).toBeUndefined();
    expect(parseRetryAfter(spaces, NOW)).toBeUndefined();
    // Linear: about the plain pass (~30 ms idle); quadratic: hours, past any load's multiple of it.
    expect(performance.now() - started).toBeLessThan(1_000 + 10 * baseline);
  });

  it('round-trips any whole number of seconds up to the cap', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 2_147_483 }), (s) => {
        expect(parseRetryAfter(String(s), NOW)).toBe(s * 1000);
      }),
    );
  });

  it('never throws and never yields NaN or a negative wait', () => {
    fc.assert(
      fc.property(
        fc.oneof(fc.string(), fc.stringMatching(/^[0-9 ,:A-Za-z-]{0,40}$/)),
        fc.double(),
        (text, now) => {
          const r = parseRetryAfter(text, now);
          expect(r === undefined || (Number.isFinite(r) && r >= 0 && r <= 2 ** 31 - 1)).toBe(true);
        },
      ),
    );
  });
});

describe('retryAfterMs', () => {
  it('applies to 429 and 503 only', () => {
    const headers = { 'retry-after': '3' };
    expect(retryAfterMs(429, headers, NOW)).toBe(3_000);
    expect(retryAfterMs(503, headers, NOW)).toBe(3_000);
    expect(retryAfterMs(500, headers, NOW)).toBeUndefined();
    expect(retryAfterMs(undefined, headers, NOW)).toBeUndefined();
  });

  it('reads fetch Headers, header records and repeated values', () => {
    expect(retryAfterMs(429, new Headers({ 'Retry-After': '1' }), NOW)).toBe(1_000);
    expect(readHeader({ 'retry-after': ['4', '5'] }, 'retry-after')).toBe('4');
    expect(readHeader(null, 'retry-after')).toBeUndefined();
    expect(readHeader({ 'retry-after': 4 }, 'retry-after')).toBeUndefined();
  });
});
