import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { daysFromCivil, parseHttpDate, yearOf } from './http-date.js';

const NOW = Date.UTC(2023, 10, 14, 22, 13, 20); // the fake clock's default epoch
const DAYS = ['Sun', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat'];
const LONG = ['Sunday', 'Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday'];
const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
const p2 = (n: number): string => String(n).padStart(2, '0');

/** Formats an instant (whole seconds) in the three HTTP-date formats, from Date.UTC's own fields. */
function formats(ms: number) {
  const days = Math.floor(ms / 86_400_000);
  const secs = Math.floor(ms / 1000) - days * 86_400;
  const { y, m, d } = (() => {
    for (let year = 1900; year <= 2200; year += 1) {
      for (let month = 0; month < 12; month += 1) {
        const start = Date.UTC(year, month, 1) / 86_400_000;
        const next = Date.UTC(year, month + 1, 1) / 86_400_000;
        if (days >= start && days < next) return { y: year, m: month, d: days - start + 1 };
      }
    }
    throw new Error('out of range');
  })();
  const wd = (((days + 4) % 7) + 7) % 7;
  const time = `${p2(Math.floor(secs / 3600))}:${p2(Math.floor(secs / 60) % 60)}:${p2(secs % 60)}`;
  return {
    imf: `${DAYS[wd]}, ${p2(d)} ${MONTHS[m]} ${y} ${time} GMT`,
    rfc850: `${LONG[wd]}, ${p2(d)}-${MONTHS[m]}-${p2(y % 100)} ${time} GMT`,
    asctime: `${DAYS[wd]} ${MONTHS[m]} ${String(d).padStart(2, ' ')} ${time} ${y}`,
  };
}

describe('parseHttpDate (RFC 9110 §5.6.7)', () => {
  it('reads the RFC examples in all three formats', () => {
    const at = Date.UTC(1994, 10, 6, 8, 49, 37);
    expect(parseHttpDate('Sun, 06 Nov 1994 08:49:37 GMT', NOW)).toBe(at);
    expect(parseHttpDate('Sunday, 06-Nov-94 08:49:37 GMT', NOW)).toBe(at);
    expect(parseHttpDate('Sun Nov  6 08:49:37 1994', NOW)).toBe(at);
  });

  it('agrees with Date.UTC on any instant from 1900 to 2199 (IMF-fixdate and asctime)', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: Date.UTC(1900, 0, 1) / 1000, max: Date.UTC(2199, 11, 31) / 1000 }),
        (s) => {
          const ms = s * 1000;
          const f = formats(ms);
          expect(parseHttpDate(f.imf, NOW)).toBe(ms);
          expect(parseHttpDate(f.asctime, NOW)).toBe(ms);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('reads rfc850 two-digit years within 50 years ahead, else in the past century', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: Date.UTC(1974, 0, 1) / 1000, max: Date.UTC(2073, 11, 1) / 1000 }),
        (s) => {
          expect(parseHttpDate(formats(s * 1000).rfc850, NOW)).toBe(s * 1000);
        },
      ),
      { numRuns: 200 },
    );
    expect(parseHttpDate('Friday, 01-Jan-99 00:00:00 GMT', NOW)).toBe(Date.UTC(1999, 0, 1));
    expect(parseHttpDate('Tuesday, 01-Jan-30 00:00:00 GMT', NOW)).toBe(Date.UTC(2030, 0, 1));
  });

  // #24 item 16: the century was the one of `now`, a year more than 50 ahead moved back, never
  // forward: in 2099 `-00` read as 2000 (99 years ago) instead of 2100 (next year).
  it('reads rfc850 two-digit years from any now, across century boundaries (the 100 years from now − 49 to now + 50)', () => {
    const yearNear = fc.oneof(
      fc.integer({ min: 1949, max: 1952 }),
      fc.integer({ min: 1996, max: 2004 }),
      fc.integer({ min: 2046, max: 2054 }),
      fc.integer({ min: 2096, max: 2104 }),
      fc.integer({ min: 2146, max: 2150 }),
    );
    const DAY = 86_400_000;
    fc.assert(
      fc.property(
        yearNear,
        fc.integer({ min: 0, max: 364 }),
        fc.integer({ min: -49, max: 50 }),
        fc.integer({ min: 0, max: 365 * 86_400 - 1 }),
        (nowYear, nowDay, ahead, second) => {
          const now = Date.UTC(nowYear, 0, 1) + nowDay * DAY + 43_200_000;
          const year = nowYear + ahead;
          const at = Date.UTC(year, 0, 1) + second * 1000;
          const f = formats(at);
          expect(parseHttpDate(f.rfc850, now), `${f.rfc850} read in ${nowYear}`).toBe(at);
        },
      ),
      { numRuns: 500 },
    );
    const in2099 = Date.UTC(2099, 5, 1);
    expect(parseHttpDate('Friday, 01-Jan-00 00:00:00 GMT', in2099)).toBe(Date.UTC(2100, 0, 1));
    expect(parseHttpDate('Friday, 01-Jan-49 00:00:00 GMT', in2099)).toBe(Date.UTC(2149, 0, 1));
    expect(parseHttpDate('Friday, 01-Jan-50 00:00:00 GMT', in2099)).toBe(Date.UTC(2050, 0, 1));
    expect(parseHttpDate('Friday, 01-Jan-99 00:00:00 GMT', Date.UTC(2001, 0, 1))).toBe(Date.UTC(1999, 0, 1));
    expect(parseHttpDate('Friday, 01-Jan-51 00:00:00 GMT', Date.UTC(2001, 0, 1))).toBe(Date.UTC(2051, 0, 1));
    expect(parseHttpDate('Friday, 01-Jan-52 00:00:00 GMT', Date.UTC(2001, 0, 1))).toBe(Date.UTC(1952, 0, 1));
  });

  it('refuses malformed, impossible or differently-cased dates', () => {
    for (const bad of [
      '',
      'Sun, 06 Nov 1994 08:49:37 UTC',
      'sun, 06 Nov 1994 08:49:37 GMT',
      'Sun, 6 Nov 1994 08:49:37 GMT',
      'Sun, 31 Feb 1994 08:49:37 GMT',
      'Sun, 29 Feb 1900 08:49:37 GMT',
      'Sun, 06 Nov 1994 24:00:00 GMT',
      'Sun, 06 Nov 1994 08:60:00 GMT',
      'Sun, 06 Nov 1994 08:49:61 GMT',
      'Sun, 00 Nov 1994 08:49:37 GMT',
      'Sun, 06 Nov 1994 08:49:37 GMT ',
      'Sunday, 06-Nov-1994 08:49:37 GMT',
      '1994-11-06T08:49:37Z',
    ]) {
      expect(parseHttpDate(bad, NOW), bad).toBeUndefined();
    }
    expect(parseHttpDate('Thu, 29 Feb 2024 00:00:00 GMT', NOW)).toBe(Date.UTC(2024, 1, 29));
  });

  it('never throws or yields NaN on arbitrary text', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 40 }), fc.double(), (text, now) => {
        const r = parseHttpDate(text, now);
        expect(r === undefined || Number.isFinite(r)).toBe(true);
      }),
    );
  });
});

describe('calendar helpers', () => {
  it('daysFromCivil and yearOf agree with Date.UTC', () => {
    fc.assert(
      fc.property(fc.integer({ min: -1899, max: 5000 }), fc.integer({ min: 0, max: 11 }), (y, m) => {
        const ms = Date.UTC(2000 + y, m, 1);
        expect(daysFromCivil(2000 + y, m + 1, 1) * 86_400_000).toBe(ms);
        expect(yearOf(ms)).toBe(2000 + y);
        expect(yearOf(ms - 1)).toBe(m === 0 ? 1999 + y : 2000 + y);
      }),
    );
  });
});
