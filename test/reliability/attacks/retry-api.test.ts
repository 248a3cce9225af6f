import { Metadata } from '@grpc/grpc-js';
import fc from 'fast-check';
import { Headers } from 'undici';
import { describe, expect, it } from 'vitest';
import { FakeClock } from '../../../src/clock/fake.js';
import { isInvalidOptions } from '../../../src/errors/guards.js';
import { fullJitterMs } from '../../../src/retry/backoff.js';
import {
  classifyFailure,
  type FailureVerdict,
  isIdempotentMethod,
  isIdempotentRequest,
  isRetryable,
  isValidIdempotencyKey,
  markResponseStarted,
  PUSHBACK_HEADER,
  parsePushback,
  parseRetryAfter,
  readPushback,
  retryAfterMs,
} from '../../../src/retry/index.js';
import { mergeFailures } from '../../../src/retry/merge.js';
import { planRetry } from '../../../src/retry/planner.js';
import { anyCallerValue } from '../fuzz/arbitraries.js';

/**
 * Attacks on `prazo/retry` from the outside: what a user's transport hands its parsers (header values
 * no server should send, header bags of every shape, errors that are frozen, Proxies or throw when
 * read) and what the RFCs the parsers follow say of them (RFC 9110 §10.2.3 `Retry-After`, §5.6.7
 * HTTP-date; gRPC A6 pushback). Time comes only from a FakeClock; no timer is armed.
 */

const clock = new FakeClock({ epoch: Date.UTC(2026, 11, 3, 12, 0, 0) });
const NOW = clock.epochNow();
const MAX_WAIT = 2 ** 31 - 1;
const STOP = { retry: false };

/** A Proxy that throws on every trap, and one that is revoked: errors and headers nobody can read. */
const hostile = (): object =>
  new Proxy(
    {},
    {
      get: () => {
        throw new Error('read me not');
      },
      has: () => {
        throw new Error('read me not');
      },
      ownKeys: () => {
        throw new Error('read me not');
      },
      getOwnPropertyDescriptor: () => {
        throw new Error('read me not');
      },
      getPrototypeOf: () => {
        throw new Error('read me not');
      },
    },
  );
const revoked = (): object => {
  const { proxy, revoke } = Proxy.revocable({}, {});
  revoke();
  return proxy;
};
const throwingGetter = (key: string, base: object = {}): object =>
  Object.defineProperty(base, key, {
    get() {
      throw new TypeError(`no ${key} for you`);
    },
  });

const anyValue = anyCallerValue;

/** A value of a header: what parseRetryAfter / parsePushback accept must be within these bounds. */
const isWait = (ms: unknown): boolean =>
  typeof ms === 'number' && Number.isFinite(ms) && ms >= 0 && ms <= MAX_WAIT && !Object.is(ms, -0);

describe('Retry-After values (RFC 9110 §10.2.3 delay-seconds = 1*DIGIT, SPEC R3)', () => {
  it.each([
    ['0', 0],
    ['  10 ', 10_000],
    ['\t10\t', 10_000],
    ['007', 7_000], // leading zeros are still 1*DIGIT
    ['99999999999999999999', MAX_WAIT],
    ['2147484', MAX_WAIT], // 2,147,484 s is past the timer cap in ms
    ['2147482', 2_147_482_000],
  ])('%j → %s ms', (value, ms) => {
    expect(parseRetryAfter(value, NOW)).toBe(ms);
  });

  it.each([
    '-1',
    '1.5',
    '1e3',
    '+10',
    '0x10',
    '10s',
    '1 0',
    '',
    '   ',
    '10, 20', // two values comma-joined (fetch Headers of a repeated field): malformed → own backoff
    '10,10',
    'Infinity',
    'NaN',
    '١٠', // Arabic-Indic digits are not DIGIT
    '１０', // nor are fullwidth ones
  ])('%j is malformed: undefined (the client falls back to its own backoff)', (value) => {
    expect(parseRetryAfter(value, NOW)).toBeUndefined();
  });

  it('a value that is not a string (a list of values, a number, a Buffer) is malformed', () => {
    for (const value of [['5'], 5, Buffer.from('5'), null, undefined, {}, Symbol('5'), 5n]) {
      expect(parseRetryAfter(value, NOW)).toBeUndefined();
    }
  });
});

describe('Retry-After HTTP-dates (RFC 9110 §5.6.7, SPEC R3)', () => {
  const in10s = 10_000;
  it.each([
    ['IMF-fixdate', 'Thu, 03 Dec 2026 12:00:10 GMT', in10s],
    ['rfc850, two-digit year', 'Thursday, 03-Dec-26 12:00:10 GMT', in10s],
    ['asctime, day padded with a space', 'Thu Dec  3 12:00:10 2026', in10s],
    ['asctime, day padded with a zero', 'Thu Dec 03 12:00:10 2026', in10s],
    ['a wrong weekday (ignored, RFC 9110 lets a recipient)', 'Mon, 03 Dec 2026 12:00:10 GMT', in10s],
    [
      'a leap second: 23:59:60 is the next midnight',
      'Thu, 03 Dec 2026 23:59:60 GMT',
      Date.UTC(2026, 11, 4) - NOW,
    ],
    ['the past', 'Sun, 06 Nov 1994 08:49:37 GMT', 0],
    ['before 1970', 'Mon, 01 Jan 1900 00:00:00 GMT', 0],
    ['year 0000', 'Sat, 01 Jan 0000 00:00:00 GMT', 0],
    ['year 9999: capped', 'Fri, 31 Dec 9999 23:59:59 GMT', MAX_WAIT],
    ['rfc850 "-94" read in 2026 is 1994', 'Sunday, 06-Nov-94 08:49:37 GMT', 0],
    [
      'rfc850 "-76" read in 2026 is 2076 (≤ 50 years ahead): capped',
      'Thursday, 03-Dec-76 12:00:00 GMT',
      MAX_WAIT,
    ],
    ['rfc850 "-77" read in 2026 is 1977', 'Friday, 03-Dec-77 12:00:00 GMT', 0],
  ])('%s: %s', (_what, value, ms) => {
    expect(parseRetryAfter(value, NOW)).toBe(ms);
  });

  it.each([
    'Thu, 03 Dec 2026 12:00:10 GMT, Thu, 03 Dec 2026 12:00:20 GMT', // two dates comma-joined
    'Thu, 03 Dec 2026 12:00:10 gmt',
    'Thu, 03 Dec 2026 12:00:10 UTC',
    'Thu, 03 Dec 2026 12:00:10 +0000',
    'Thu, 3 Dec 2026 12:00:10 GMT',
    'Thu, 03 Dec 26 12:00:10 GMT',
    'Thu, 03 Dec 10000 12:00:10 GMT',
    'Thu, 03 Dec -2026 12:00:10 GMT',
    'Thu, 29 Feb 2027 12:00:10 GMT',
    'Thu, 31 Apr 2026 12:00:10 GMT',
    'Thu, 00 Dec 2026 12:00:10 GMT',
    'Thu, 03 Dec 2026 24:00:00 GMT',
    'Thu, 03 Dec 2026 12:60:00 GMT',
    'Thu, 03 Dec 2026 12:00:61 GMT',
    'Thu, 03 dec 2026 12:00:10 GMT',
    'Thu, 03 Dec 2026 12:00:10.5 GMT',
    'Thu, 03 Dec 2026 12:00 GMT',
    'Thu Dec  3 12:00:10 26',
    'Thu, 03-Dec-26 12:00:10 GMT', // rfc850 needs the long weekday
    '2026-12-03T12:00:10Z', // ISO 8601 is no HTTP-date
    '1764763210', // (this one is delay-seconds, read below)
  ])('%j is not an HTTP-date', (value) => {
    const got = parseRetryAfter(value, NOW);
    if (/^\d+$/.test(value)) expect(got).toBe(MAX_WAIT);
    else expect(got).toBeUndefined();
  });

  it('Was a defect: a now outside ECMAScript time (±8.64e15 ms) reads no date (1e308 read an rfc850 date as a 24.8-day wait, an IMF one as now)', () => {
    const rfc850 = 'Thursday, 03-Dec-26 12:00:10 GMT';
    const imf = 'Thu, 03 Dec 2026 12:00:10 GMT';
    for (const now of [1e308, -1e308, 8.64e15 + 1, -8.64e15 - 1, Number.NaN, Number.POSITIVE_INFINITY]) {
      expect(parseRetryAfter(rfc850, now), String(now)).toBeUndefined();
      expect(parseRetryAfter(imf, now), String(now)).toBeUndefined();
      expect(parseRetryAfter('5', now), String(now)).toBe(5_000); // delay-seconds need no clock
    }
    // A now that is no number at all (a BigInt, a string, a Date) reads no date either, and never throws.
    for (const now of [BigInt(NOW), String(NOW), new Date(NOW), Symbol('now'), null, undefined]) {
      expect(parseRetryAfter(imf, now as never)).toBeUndefined();
      expect(parseRetryAfter(rfc850, now as never)).toBeUndefined();
      expect(retryAfterMs(503, { 'retry-after': imf }, now as never)).toBeUndefined();
    }
    // The edges of the range still read: a date against the last representable instant is past.
    expect(parseRetryAfter(imf, 8.64e15)).toBe(0);
    expect(parseRetryAfter(imf, -8.64e15)).toBe(MAX_WAIT);
    // classifyFailure's option says so with a typed error, not a silent wrong wait.
    const e = (() => {
      try {
        classifyFailure({ status: 503, headers: { 'retry-after': rfc850 } }, { nowEpochMs: 1e308 });
      } catch (error) {
        return error;
      }
      return undefined;
    })();
    expect(isInvalidOptions(e)).toBe(true);
    expect(String((e as Error).message)).toContain('nowEpochMs');
  });

  it('Was a defect: a date padded with spaces past 64 characters is still a date (the bound counted the padding: own backoff)', () => {
    const date = 'Thu, 03 Dec 2026 12:00:10 GMT';
    expect(parseRetryAfter(`${' '.repeat(40)}${date}\t`, NOW)).toBe(10_000);
    expect(parseRetryAfter(`${date}${' '.repeat(10_000)}`, NOW)).toBe(10_000);
    expect(parseRetryAfter(`${date} ${'x'.repeat(40)}`, NOW)).toBeUndefined();
  });

  it('property: never throws, never NaN, within [0, 2^31 − 1] ms, for any value and any now', () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.string({ maxLength: 80 }),
          fc.stringMatching(/^[ \t]*\d{0,25}[ \t]*$/),
          fc
            .date({ min: new Date(-8.64e15), max: new Date(8.64e15), noInvalidDate: true })
            .map((d) => d.toUTCString()),
          anyValue,
        ),
        fc.oneof(fc.double(), fc.integer({ min: -8.64e15, max: 8.64e15 }), anyValue),
        (value, now) => {
          const got = parseRetryAfter(value, now as number);
          expect(got === undefined || isWait(got)).toBe(true);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('property: an IMF-fixdate from Date.toUTCString reads as the exact wait to it (past: 0, far: capped)', () => {
    fc.assert(
      fc.property(fc.integer({ min: -62_135_596_800_000, max: 253_402_300_799_000 }), (at) => {
        const whole = Math.floor(at / 1000) * 1000;
        const want = Math.min(Math.max(whole - NOW, 0), MAX_WAIT);
        expect(parseRetryAfter(new Date(whole).toUTCString(), NOW)).toBe(want);
      }),
      { numRuns: 300 },
    );
  });

  it('property: the obsolete forms (rfc850, asctime) of any instant read as the IMF-fixdate of it does', () => {
    const LONG = ['Sunday', 'Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday'];
    const two = (n: number): string => String(n).padStart(2, '0');
    fc.assert(
      fc.property(
        // rfc850 names a year by two digits: instants within the 100 years around now (RFC 9110's
        // 50-year rule, by whole years), where the two digits name exactly one year.
        fc.integer({ min: Date.UTC(2026 - 49, 0, 1) / 1000, max: Date.UTC(2026 + 51, 0, 1) / 1000 - 1 }),
        (s) => {
          const d = new Date(s * 1000);
          const imf = parseRetryAfter(d.toUTCString(), NOW);
          const [wd, , mon, , time] = d.toUTCString().split(' ');
          const yy = two(d.getUTCFullYear() % 100);
          const rfc850 = `${LONG[d.getUTCDay()]}, ${two(d.getUTCDate())}-${mon}-${yy} ${time} GMT`;
          const day = String(d.getUTCDate()).padStart(2, ' ');
          const asctime = `${wd!.slice(0, 3)} ${mon} ${day} ${time} ${d.getUTCFullYear()}`;
          expect(imf).toBeDefined();
          expect(parseRetryAfter(rfc850, NOW), rfc850).toBe(imf);
          expect(parseRetryAfter(asctime, NOW), asctime).toBe(imf);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('10 kB adversarial strings (regex backtracking bait) are refused in linear time', () => {
    const bait = [
      'Thu, '.repeat(2_000),
      `Thu, 03 Dec 2026 12:00:10 ${' '.repeat(10_000)}`,
      `${'9'.repeat(10_000)}x`,
      `${'1'.repeat(5_000)} ${'1'.repeat(5_000)}`,
      '\t'.repeat(10_000),
      `Thursday, 03-Dec-${'2'.repeat(10_000)} 12:00:10 GMT`,
      'Thu Dec '.repeat(1_250),
    ];
    const started = performance.now();
    for (let i = 0; i < 20; i += 1) {
      for (const value of bait) expect(parseRetryAfter(value, NOW)).toBeUndefined();
    }
    expect(performance.now() - started).toBeLessThan(500); // ~2 ms linear; quadratic: seconds
  });
});

describe('retryAfterMs: the header bags a transport hands over (SPEC R3)', () => {
  it('reads fetch Headers, Node/undici records (first of a list) and Maps', () => {
    expect(retryAfterMs(503, new Headers({ 'Retry-After': '5' }), NOW)).toBe(5_000);
    expect(retryAfterMs(429, { 'retry-after': '5' }, NOW)).toBe(5_000);
    expect(retryAfterMs(429, { 'retry-after': ['5', '7'] }, NOW)).toBe(5_000); // Node keeps the first
    expect(retryAfterMs(503, new Map([['retry-after', '5']]), NOW)).toBe(5_000);
    const twice = new Headers();
    twice.append('retry-after', '5');
    twice.append('retry-after', '7');
    expect(retryAfterMs(503, twice, NOW)).toBeUndefined(); // "5, 7": malformed, own backoff
  });

  it('only 429 and 503 carry the instruction; a status that is no HTTP status carries nothing', () => {
    for (const status of [200, 500, 502, 504, 0, 99, 600, Number.NaN, -429, 429.5, '429', undefined]) {
      expect(retryAfterMs(status as number, { 'retry-after': '5' }, NOW), String(status)).toBeUndefined();
    }
  });

  it('Was a defect: a fetch init record in any case, [name, value] pairs and a get answering a list are read (they were ignored: the server’s wait lost)', () => {
    expect(retryAfterMs(503, { 'Retry-After': '5' }, NOW)).toBe(5_000);
    expect(retryAfterMs(503, { 'RETRY-AFTER': ['5'] }, NOW)).toBe(5_000);
    expect(retryAfterMs(503, [['Retry-After', '5']], NOW)).toBe(5_000);
    expect(retryAfterMs(503, [['x', 'y'], 'junk', [1, 2], ['retry-after', '6']], NOW)).toBe(6_000);
    // A get that answers with a list (grpc-js Metadata): its first value, as for a record's list.
    const md = new Metadata();
    md.set('retry-after', '5');
    expect(retryAfterMs(503, md, NOW)).toBe(5_000);
    // The exact lower-case key wins over another spelling.
    expect(retryAfterMs(503, { 'Retry-After': '9', 'retry-after': '5' }, NOW)).toBe(5_000);
  });

  it('Was a defect: a header planted on Object.prototype is no response’s (it was read from every record)', () => {
    const proto = Object.prototype as Record<string, unknown>;
    proto['retry-after'] = '999';
    proto[PUSHBACK_HEADER] = '-1';
    try {
      expect(retryAfterMs(503, {}, NOW)).toBeUndefined();
      expect(readPushback({})).toBeUndefined();
      expect(classifyFailure({ status: 503, headers: {} }, { nowEpochMs: NOW })).toMatchObject({
        retryable: true,
        kind: 'status',
      });
      expect(classifyFailure({ status: 503, headers: {} }, { nowEpochMs: NOW }).retryAfterMs).toBeUndefined();
    } finally {
      delete proto['retry-after'];
      delete proto[PUSHBACK_HEADER];
    }
  });

  it('Was a defect: headers that throw when read (a get that throws, a revoked Proxy) have no Retry-After (it threw)', () => {
    const bags: unknown[] = [
      {
        get() {
          throw new Error('no');
        },
      },
      revoked(),
      hostile(),
      throwingGetter('retry-after'),
      [throwingGetter('0', [])],
      {
        'retry-after': new Proxy(['5'], {
          get: () => {
            throw new Error('no');
          },
        }),
      },
    ];
    for (const bag of bags) {
      expect(() => retryAfterMs(503, bag, NOW)).not.toThrow();
      expect(retryAfterMs(503, bag, NOW)).toBeUndefined();
    }
  });

  it('property: any bag, any status: never throws, a wait in bounds or undefined', () => {
    fc.assert(
      fc.property(anyValue, anyValue, (status, headers) => {
        const got = retryAfterMs(status as number, headers, NOW);
        expect(got === undefined || isWait(got)).toBe(true);
      }),
      { numRuns: 200 },
    );
  });
});

describe('pushback values (gRPC A6: an ASCII signed 32-bit integer, negative or unparseable stops; SPEC X6)', () => {
  it.each([
    ['0', { retry: true, afterMs: 0 }],
    [' 5 ', { retry: true, afterMs: 5 }],
    ['2147483647', { retry: true, afterMs: MAX_WAIT }],
    ['-1', STOP],
    ['-0', STOP],
    ['00', STOP],
    ['2147483648', STOP],
    ['-2147483649', STOP],
    ['5, 5', STOP],
    ['5,-1', STOP],
    ['1.5', STOP],
    ['1e3', STOP],
    ['', STOP],
    [`${' '.repeat(20)}5`, STOP], // past 16 characters: not parsed
    ['9'.repeat(10_000), STOP],
  ])('%j → %j', (value, want) => {
    expect(parsePushback(value)).toEqual(want);
  });

  it('the forms a transport gives: fetch Headers (repeated: joined, so stop), records, Metadata (first; binary stops)', () => {
    const twice = new Headers();
    twice.append(PUSHBACK_HEADER, '5');
    twice.append(PUSHBACK_HEADER, '7');
    expect(readPushback(twice)).toEqual(STOP);
    expect(readPushback({ [PUSHBACK_HEADER]: '-1' })).toEqual(STOP);
    expect(readPushback({ [PUSHBACK_HEADER]: [] })).toBeUndefined();
    expect(readPushback({ [PUSHBACK_HEADER]: [Buffer.from('5')] })).toEqual(STOP);
    expect(readPushback({ [PUSHBACK_HEADER]: 5 })).toEqual(STOP); // not a header value
    const md = new Metadata();
    md.set(PUSHBACK_HEADER, '250');
    expect(readPushback(md)).toEqual({ retry: true, afterMs: 250 });
    expect(readPushback({})).toBeUndefined();
    expect(readPushback(null)).toBeUndefined();
    expect(readPushback('grpc-retry-pushback-ms: -1')).toBeUndefined();
  });

  it('Was a defect: headers that throw when read carry no pushback (readPushback threw)', () => {
    for (const bag of [
      revoked(),
      hostile(),
      {
        get() {
          throw new Error('no');
        },
      },
      throwingGetter(PUSHBACK_HEADER),
      {
        [PUSHBACK_HEADER]: new Proxy(['5'], {
          get: () => {
            throw new Error('no');
          },
        }),
      },
    ]) {
      expect(() => readPushback(bag)).not.toThrow();
      expect(readPushback(bag)).toBeUndefined();
    }
  });

  it('Was a defect: a fetch init record in any case and [name, value] pairs push back too', () => {
    expect(readPushback({ 'Grpc-Retry-Pushback-Ms': '-1' })).toEqual(STOP);
    expect(readPushback([['grpc-retry-pushback-ms', '40']])).toEqual({ retry: true, afterMs: 40 });
  });

  it('property: parsePushback and readPushback never throw; a retry is an integer wait in bounds', () => {
    const ok = (p: unknown): boolean =>
      p === undefined ||
      (typeof p === 'object' &&
        p !== null &&
        ((p as { retry: unknown }).retry === false ||
          ((p as { retry: unknown }).retry === true &&
            Number.isInteger((p as { afterMs: number }).afterMs) &&
            isWait((p as { afterMs: number }).afterMs))));
    fc.assert(
      fc.property(
        fc.oneof(fc.string({ maxLength: 20 }), fc.stringMatching(/^-?\d{1,12}$/), anyValue),
        (value) => {
          expect(ok(parsePushback(value))).toBe(true);
          expect(ok(readPushback({ [PUSHBACK_HEADER]: value }))).toBe(true);
          expect(ok(readPushback(value))).toBe(true);
        },
      ),
      { numRuns: 300 },
    );
  });
});

describe('classifyFailure on what no server should send (SPEC R2-R4)', () => {
  it.each([0, 99, 600, 1e308, Number.NaN, Number.POSITIVE_INFINITY, -503, 503.5, '503', null, true, 503n])(
    'status %s is no HTTP status: not retried, no status reported',
    (status) => {
      const verdict = classifyFailure({ status, headers: { 'retry-after': '3' } }, { nowEpochMs: NOW });
      expect(verdict).toEqual({ retryable: false, immediate: false, kind: 'unknown' });
      expect(classifyFailure({ statusCode: status }, { nowEpochMs: NOW }).retryable).toBe(false);
    },
  );

  it('a frozen error is classified like any other', () => {
    const reset = Object.freeze(Object.assign(new Error('reset'), { code: 'ECONNRESET' }));
    expect(classifyFailure(reset)).toMatchObject({ retryable: true, kind: 'connection-lost' });
    const frozen503 = Object.freeze({ status: 503, headers: Object.freeze({ 'retry-after': '2' }) });
    expect(classifyFailure(frozen503, { nowEpochMs: NOW })).toMatchObject({
      retryable: true,
      retryAfterMs: 2_000,
    });
  });

  it('Was a defect: an error that throws when read (revoked Proxy, a throwing status/cause/errors getter) is unknown, not a throw', () => {
    const unreadable: unknown[] = [
      revoked(),
      hostile(),
      throwingGetter('status'),
      throwingGetter('statusCode'),
      throwingGetter('code'),
      throwingGetter('cause', new Error('fetch failed')),
      throwingGetter('errors', new AggregateError([])),
      throwingGetter('headers', { status: 503 }),
      throwingGetter('metadata', { code: 14 }),
      { status: 503, headers: revoked() }, // headers unreadable: still a 503, without a wait
      new Proxy(
        { code: 14, metadata: {} },
        {
          has: () => {
            throw new Error('no');
          },
        },
      ),
      new Error('outer', { cause: revoked() }),
      new AggregateError([revoked()]),
    ];
    for (const failure of unreadable) {
      expect(() => classifyFailure(failure)).not.toThrow();
      expect(() => isRetryable(failure)).not.toThrow();
    }
    expect(classifyFailure(revoked())).toEqual({ retryable: false, immediate: false, kind: 'unknown' });
    expect(classifyFailure(throwingGetter('cause', new Error('fetch failed'))).retryable).toBe(false);
    expect(classifyFailure({ status: 503, headers: revoked() }, { nowEpochMs: NOW })).toMatchObject({
      retryable: true,
      status: 503,
    });
  });

  it('Was a defect: markResponseStarted on a frozen, sealed or refusing error marks it (it threw a TypeError)', () => {
    const frozen = Object.freeze(Object.assign(new Error('reset'), { code: 'ECONNRESET' }));
    const sealed = Object.seal(Object.assign(new Error('reset'), { code: 'UND_ERR_SOCKET' }));
    const refusing = new Proxy(Object.assign(new Error('reset'), { code: 'EPIPE' }), { set: () => false });
    for (const error of [frozen, sealed, refusing]) {
      expect(classifyFailure(error).retryable).toBe(true);
      expect(markResponseStarted(error)).toBe(error);
      // Marked: the server may have acted, so the reset is not retried (SPEC R2).
      expect(classifyFailure(error)).toMatchObject({ retryable: false, kind: 'connection-lost' });
      expect(classifyFailure(new Error('fetch failed', { cause: error })).retryable).toBe(false);
    }
    expect(() => markResponseStarted(revoked())).not.toThrow();
    for (const v of [undefined, null, 0, 'x', Symbol('s')]) expect(markResponseStarted(v)).toBe(v);
  });

  it('Was a defect: an AggregateError of 429s waits the longest Retry-After its members asked for (their waits were dropped: own backoff)', () => {
    const r429 = (s: string) => ({ status: 429, headers: { 'retry-after': s } });
    const all = new AggregateError([r429('1'), r429('3'), r429('2')]);
    expect(classifyFailure(all, { nowEpochMs: NOW })).toMatchObject({ retryable: true, retryAfterMs: 3_000 });
    // Without a wait from any member, as before: the members' backoff or immediacy.
    expect(
      classifyFailure(new AggregateError([{ status: 502 }, { status: 500 }])).retryAfterMs,
    ).toBeUndefined();
    const refused = Object.assign(new Error('refused'), { code: 'ECONNREFUSED' });
    expect(classifyFailure(new AggregateError([refused, refused]))).toMatchObject({ immediate: true });
    // One member that must not be retried still decides.
    expect(isRetryable(new AggregateError([r429('1'), { status: 400 }]), { nowEpochMs: NOW })).toBe(false);
  });

  it('an aggregate sharing one member at every level reads it once per level, not once per path (8⁴ paths)', () => {
    // Headers in any case are looked up by a scan of the record's keys: 5,000 of them on one shared
    // 503, read along each of the 4,096 paths to it, would be 40 M comparisons for a 5,000-key input.
    const headers = Object.fromEntries(Array.from({ length: 5_000 }, (_, i) => [`x-h${i}`, 'v']));
    let level: unknown = { status: 503, headers };
    for (let i = 0; i < 4; i += 1) level = new AggregateError(Array(8).fill(level));
    const started = performance.now();
    expect(classifyFailure(level, { nowEpochMs: NOW })).toMatchObject({ retryable: true });
    expect(performance.now() - started).toBeLessThan(250); // ~2 ms once per level; per path: seconds
    // A member shared at different depths is still cut off past the depth bound (4 levels).
    let deep: unknown = { status: 503 };
    for (let i = 0; i < 5; i += 1) deep = new AggregateError([deep, { status: 502 }]);
    expect(isRetryable(deep)).toBe(false);
  });

  it('Was a defect: an AggregateError with a member that pushed back is a pushback, wherever it stands (it was "unknown", which the executor does not read as a pushback, SPEC X6)', () => {
    const pushed = { code: 14, metadata: { [PUSHBACK_HEADER]: '-1' } };
    const unavailable = { code: 14, metadata: {} };
    const r503 = { status: 503, headers: { [PUSHBACK_HEADER]: '-1' } };
    for (const errors of [
      [pushed, unavailable],
      [unavailable, pushed],
      [{ status: 400 }, r503],
      [r503, r503],
    ]) {
      expect(classifyFailure(new AggregateError(errors))).toEqual({
        retryable: false,
        immediate: false,
        kind: 'pushback',
        pushback: true,
      });
    }
    // Nested, and behind a cause.
    const nested = new Error('all replicas failed', {
      cause: new AggregateError([unavailable, new AggregateError([r503])]),
    });
    expect(classifyFailure(nested)).toMatchObject({ kind: 'pushback', pushback: true });
    // With pushback off, the header means nothing: the members decide as before.
    expect(classifyFailure(new AggregateError([pushed, unavailable]), { pushback: false })).toMatchObject({
      retryable: true,
    });
  });

  it('option typos and wrong types: one InvalidOptionsError naming every problem, with "did you mean"', () => {
    const thrown = (options: unknown): Error => {
      try {
        classifyFailure({ status: 503 }, options as never);
      } catch (error) {
        return error as Error;
      }
      throw new Error('accepted');
    };
    const typo = thrown({ retryResponseTimeouts: true, nowEpochMS: 1 });
    expect(isInvalidOptions(typo)).toBe(true);
    expect(typo.message).toContain('did you mean `retryResponseTimeout`');
    expect(typo.message).toContain('did you mean `nowEpochMs`');
    const types = thrown({ pushback: 'yes', retryResponseTimeout: 1, nowEpochMs: '5' });
    expect(types.message.match(/^ {2}- /gm)).toHaveLength(3);
    for (const bad of [null, [], new Map(), 'x', 5, JSON.parse('{"__proto__": {"pushback": false}}')]) {
      expect(isInvalidOptions(thrown(bad))).toBe(true);
    }
    for (const bad of [Number.NaN, Number.POSITIVE_INFINITY]) {
      expect(isInvalidOptions(thrown({ nowEpochMs: bad }))).toBe(true);
    }
    expect(() => isRetryable({}, { retryResponseTimout: true } as never)).toThrow(/did you mean/);
  });

  it('property: any value, plain or hostile, classifies without throwing into a well-formed verdict', () => {
    // Hostile objects are built inside the property: fast-check itself would trip on them.
    const failure = fc.oneof(
      anyValue.map((x) => ({ x, wrap: 'none' as const })),
      fc.record({
        x: fc.record({
          status: fc.oneof(fc.integer({ min: -1, max: 700 }), fc.double(), fc.string()),
          headers: fc.dictionary(
            fc.constantFrom('retry-after', 'Retry-After', PUSHBACK_HEADER),
            fc.string({ maxLength: 40 }),
          ),
          code: fc.oneof(
            fc.constantFrom('ECONNRESET', 'ECONNREFUSED', 'UND_ERR_HEADERS_TIMEOUT'),
            fc.integer(),
          ),
        }),
        wrap: fc.constantFrom(
          'none',
          'revoked-headers',
          'hostile-cause',
          'frozen',
          'aggregate',
          'hostile',
          'revoked',
        ),
      }),
    );
    const build = ({ x, wrap }: { x: unknown; wrap: string }): unknown => {
      if (wrap === 'revoked-headers') return { ...(x as object), headers: revoked() };
      if (wrap === 'hostile-cause') return new Error('outer', { cause: hostile() });
      if (wrap === 'frozen') return Object.freeze(x);
      if (wrap === 'aggregate') return new AggregateError([x, x, hostile()]);
      if (wrap === 'hostile') return hostile();
      if (wrap === 'revoked') return revoked();
      return x;
    };
    fc.assert(
      fc.property(failure, (given) => {
        const x = build(given);
        const v: FailureVerdict = classifyFailure(x, { nowEpochMs: NOW });
        expect(typeof v.retryable).toBe('boolean');
        expect(typeof v.immediate).toBe('boolean');
        expect(v.retryAfterMs === undefined || isWait(v.retryAfterMs)).toBe(true);
        expect(
          v.status === undefined || (Number.isInteger(v.status) && v.status >= 100 && v.status <= 599),
        ).toBe(true);
      }),
      { numRuns: 300 },
    );
  });
});

describe('idempotency (SPEC R5)', () => {
  it('methods are case-sensitive names; anything that is not one is not idempotent', () => {
    for (const m of ['GET', 'HEAD', 'OPTIONS', 'PUT', 'DELETE', 'TRACE', 'QUERY'])
      expect(isIdempotentMethod(m)).toBe(true);
    for (const m of [
      'get',
      'POST',
      'PATCH',
      ' GET',
      'GET ',
      '',
      undefined,
      null,
      {},
      { toString: () => 'GET' },
    ]) {
      expect(isIdempotentMethod(m as string)).toBe(false);
    }
  });

  it('keys: 1 to 255 visible ASCII characters, nothing that could smuggle a line break', () => {
    expect(isValidIdempotencyKey('a'.repeat(255))).toBe(true);
    for (const k of ['', 'a'.repeat(256), 'a b', 'a\r\nb', 'ключ', 'a\u0000', 5, null, ['k']]) {
      expect(isValidIdempotencyKey(k)).toBe(false);
    }
  });

  it('property: a key is valid exactly when it is 1-255 visible ASCII characters; any request reads as a boolean', () => {
    fc.assert(
      fc.property(
        fc.oneof(fc.string({ maxLength: 300 }), fc.string({ unit: 'binary', maxLength: 20 }), anyValue),
        anyValue,
        (key, method) => {
          const want = typeof key === 'string' && /^[\x21-\x7e]{1,255}$/.test(key);
          expect(isValidIdempotencyKey(key)).toBe(want);
          const request = { method, headers: [['Idempotency-Key', key]] };
          // A list of values (a repeated header) is read by its first.
          const sent = Array.isArray(key) ? key[0] : key;
          const keyed = typeof sent === 'string' && isValidIdempotencyKey(sent);
          expect(isIdempotentRequest(request as never)).toBe(isIdempotentMethod(method as string) || keyed);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('Was a defect: isIdempotentRequest of null, a non-object or an unreadable request is false (it threw a TypeError)', () => {
    for (const request of [null, undefined, 'GET', 5, revoked(), hostile(), throwingGetter('method')]) {
      expect(() => isIdempotentRequest(request as never)).not.toThrow();
      expect(isIdempotentRequest(request as never)).toBe(false);
    }
    expect(isIdempotentRequest({ method: 'POST', headers: revoked() })).toBe(false);
    expect(isIdempotentRequest({ method: 'GET', headers: revoked() })).toBe(true);
  });

  it('Was a defect: a fetch init’s headers (a record in any case, [name, value] pairs) carry the key (it was not seen: a keyed POST sent once)', () => {
    expect(isIdempotentRequest({ method: 'POST', headers: { 'Idempotency-Key': 'k-1' } })).toBe(true);
    expect(isIdempotentRequest({ method: 'POST', headers: [['Idempotency-Key', 'k-1']] })).toBe(true);
    expect(isIdempotentRequest({ method: 'POST', headers: new Headers({ 'Idempotency-Key': 'k-1' }) })).toBe(
      true,
    );
    expect(isIdempotentRequest({ method: 'POST', headers: { 'Idempotency-Key': 'k 1' } })).toBe(false);
    expect(isIdempotentRequest({ method: 'POST', headers: [['Idempotency-Key']] })).toBe(false);
  });
});

describe('backoff, merge and the planner (SPEC R3, R6)', () => {
  const backoff = { baseMs: 25, capMs: 1_000 };

  it('jitter draws at the edges and huge attempt numbers stay within [0, ceiling)', () => {
    expect(fullJitterMs(1, backoff, () => 0)).toBe(0);
    expect(fullJitterMs(1, backoff, () => 1 - 2 ** -53)).toBeLessThan(25);
    expect(fullJitterMs(1, backoff, () => 1)).toBeLessThan(25);
    for (const retry of [1e9, Number.MAX_SAFE_INTEGER, 1e308, Number.POSITIVE_INFINITY]) {
      const w = fullJitterMs(retry, backoff, () => 1);
      expect(w).toBeLessThan(1_000);
      expect(w).toBeGreaterThan(999);
    }
    for (const retry of [0, -1, Number.NaN, -Number.POSITIVE_INFINITY, 0.5]) {
      expect(fullJitterMs(retry, backoff, () => 0.5)).toBe(12.5); // the first retry's ceiling
    }
    expect(fullJitterMs(5, { baseMs: 0, capMs: 0 }, () => 0.5)).toBe(0);
  });

  it('Was a defect: a draw of −0 waits 0, not −0', () => {
    expect(
      Object.is(
        fullJitterMs(3, backoff, () => -0),
        0,
      ),
    ).toBe(true);
  });

  it('property: any draw, any attempt: a wait that is finite, ≥ 0, not −0, below the ceiling', () => {
    fc.assert(
      fc.property(
        fc.double(),
        fc.oneof(fc.integer(), fc.double()),
        fc.integer({ min: 0, max: 60_000 }),
        fc.integer({ min: 0, max: 60_000 }),
        (r, retry, baseMs, capMs) => {
          const w = fullJitterMs(retry, { baseMs, capMs }, () => r);
          expect(Number.isFinite(w) && w >= 0 && !Object.is(w, -0)).toBe(true);
          expect(w === 0 || w < Math.min(capMs, baseMs * 2 ** 30)).toBe(true);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('property: the planner never waits past what fits, never a negative or NaN delay', () => {
    const verdict = fc.record({
      retryable: fc.boolean(),
      immediate: fc.boolean(),
      kind: fc.constant('status' as const),
      retryAfterMs: fc.option(fc.integer({ min: 0, max: MAX_WAIT }), { nil: undefined }),
    });
    fc.assert(
      fc.property(
        verdict,
        fc.integer({ min: 1, max: 10 }),
        fc.integer({ min: 0, max: 100_000 }),
        fc.integer({ min: 0, max: 10_000 }),
        fc.double({ min: 0, max: 1, noNaN: true }),
        (v, attemptsMade, remainingMs, p99Ms, r) => {
          const d = planRetry({
            verdict: v,
            idempotent: true,
            attemptsMade,
            maxAttempts: 5,
            remainingMs,
            p99Ms,
            backoff,
            random: () => r,
          });
          if (d.action === 'retry') {
            expect(Number.isFinite(d.delayMs) && d.delayMs >= 0).toBe(true);
            expect(remainingMs - d.delayMs).toBeGreaterThanOrEqual(Math.max(p99Ms, 1));
            if (v.retryAfterMs !== undefined) expect(d.delayMs).toBe(v.retryAfterMs);
          }
        },
      ),
      { numRuns: 300 },
    );
  });

  it('property: merge is retried only if both are, at once only if both are, and waits the longer server wait', () => {
    const verdict = fc.record({
      retryable: fc.boolean(),
      immediate: fc.boolean(),
      kind: fc.constantFrom('status' as const, 'connect' as const, 'pushback' as const),
      retryAfterMs: fc.option(fc.integer({ min: 0, max: MAX_WAIT }), { nil: undefined }),
    });
    fc.assert(
      fc.property(verdict, verdict, (a, b) => {
        const m = mergeFailures(a, b);
        expect(m.retryable).toBe(a.retryable && b.retryable);
        expect(m.immediate).toBe(a.immediate && b.immediate);
        const waits = [a.retryAfterMs, b.retryAfterMs].filter((w) => w !== undefined);
        expect(m.retryAfterMs).toBe(waits.length === 0 ? undefined : Math.max(...waits));
        if (!a.retryable) expect(m.kind).toBe(a.kind);
      }),
      { numRuns: 200 },
    );
  });

  it('merge: both must allow the retry, and the longer server wait holds (R3)', () => {
    const a: FailureVerdict = {
      retryable: true,
      immediate: false,
      kind: 'status',
      status: 429,
      retryAfterMs: 0,
    };
    const b: FailureVerdict = { retryable: true, immediate: true, kind: 'connect' };
    expect(mergeFailures(a, b)).toMatchObject({ retryable: true, immediate: false, retryAfterMs: 0 });
    expect(mergeFailures(b, b)).toEqual({ retryable: true, immediate: true, kind: 'connect' });
  });
});
