import fc from 'fast-check';
import { describe, expect, it, vi } from 'vitest';
import { FakeClock } from '../../../src/clock/fake.js';
import { createDeadlineReader, DeadlineHeaders } from '../../../src/deadline/index.js';
import {
  formatGrpcTimeout,
  parseEpochMs,
  parseGrpcTimeout,
  parseRelativeMs,
} from '../../../src/deadline/parse.js';
import { anyText, FUZZ_TIMEOUT_MS, headerValue, isSafeResult, RUNS, TEN_MB, timed } from './arbitraries.js';

vi.setConfig({ testTimeout: FUZZ_TIMEOUT_MS });

/**
 * Fuzzing the incoming deadline headers (SPEC D2, D3, D8): whatever a caller sends, the reader yields a
 * deadline in [now, now + maxMs], never NaN, never a throw, at a bounded cost.
 */

const EPOCH = 1_700_000_000_000;
const MAX_MS = 5_000;
const DEFAULT_MS = 1_000;
const NAMES = [DeadlineHeaders.epochMs, DeadlineHeaders.grpcTimeout, DeadlineHeaders.envoyExpected] as const;
const parsers = { parseEpochMs, parseRelativeMs, parseGrpcTimeout };

describe('fuzz: deadline header parsers', () => {
  it.each(Object.entries(parsers))('%s: any text gives a finite ms >= 0 or undefined', (_name, parse) => {
    fc.assert(
      fc.property(anyText, (text) => {
        expect(isSafeResult(parse(text))).toBe(true);
      }),
      { numRuns: RUNS },
    );
  });

  it('grpc-timeout accepts exactly 1-8 digits and one unit, and reads them exactly', () => {
    const unitMs: Record<string, number> = { H: 3_600_000, M: 60_000, S: 1_000, m: 1, u: 1e-3, n: 1e-6 };
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 99_999_999 }),
        fc.constantFrom(...Object.keys(unitMs)),
        fc.constantFrom('', ' '),
        fc.integer({ min: 100_000_000, max: Number.MAX_SAFE_INTEGER }),
        (n, unit, pad, tooLong) => {
          expect(parseGrpcTimeout(`${pad}${n}${unit}${pad}`)).toBe(n * unitMs[unit]!);
          expect(parseGrpcTimeout(`${tooLong}${unit}`)).toBeUndefined();
          expect(parseGrpcTimeout(`${n}`)).toBeUndefined();
          expect(parseGrpcTimeout(`-${n}${unit}`)).toBeUndefined();
        },
      ),
      { numRuns: RUNS },
    );
  });

  it('formatGrpcTimeout never tells the next hop it has more time than it has', () => {
    fc.assert(
      fc.property(fc.oneof(fc.double(), fc.integer({ min: -1, max: 2 ** 53 })), (ms) => {
        const text = formatGrpcTimeout(ms);
        const back = parseGrpcTimeout(text);
        expect(back).toBeDefined();
        // The grammar's value is a positive integer: below 1 ns (nothing left, NaN) it says the least
        // it can, 1n; past 99999999 hours (Infinity), the most.
        if (!(ms >= 1e-6)) expect(text).toBe('1n');
        else if (ms < 99_999_999 * 3_600_000) expect(back!).toBeLessThanOrEqual(ms);
        else expect(text).toBe('99999999H');
      }),
      { numRuns: RUNS },
    );
  });

  it('refuses a 10 MB value in O(1): under 100 ms for all three parsers', () => {
    const huge = '1'.repeat(TEN_MB);
    const padded = `${' '.repeat(TEN_MB)}5m`;
    for (const parse of Object.values(parsers)) {
      expect(timed(() => expect(parse(huge)).toBeUndefined())).toBeLessThan(100);
      expect(timed(() => expect(parse(padded)).toBeUndefined())).toBeLessThan(100);
    }
  });
});

describe('fuzz: createDeadlineReader', () => {
  const clock = new FakeClock({ epoch: EPOCH });
  const read = createDeadlineReader({ clock, maxMs: MAX_MS, defaultMs: DEFAULT_MS, clockSkewMs: 250 });

  it('any header record gives a deadline in [now, now + maxMs] with a coherent source', () => {
    const record = fc.record(
      { epoch: headerValue, grpc: headerValue, envoy: headerValue, junk: headerValue },
      { requiredKeys: [] },
    );
    fc.assert(
      fc.property(record, fc.boolean(), (r, asProtoLess) => {
        const headers: Record<string, unknown> = asProtoLess ? Object.create(null) : {};
        if ('epoch' in r) headers[NAMES[0]] = r.epoch;
        if ('grpc' in r) headers[NAMES[1]] = r.grpc;
        if ('envoy' in r) headers[NAMES[2]] = r.envoy;
        if ('junk' in r) headers['x-other'] = r.junk;
        const got = read(headers as Record<string, string>);
        const left = got.deadline.remainingMs();
        expect(Number.isFinite(left)).toBe(true);
        expect(left).toBeGreaterThanOrEqual(0);
        expect(left).toBeLessThanOrEqual(MAX_MS);
        expect(Number.isFinite(got.deadline.at)).toBe(true);
        if (got.source === 'default') expect(left).toBe(DEFAULT_MS);
        expect(got.expired).toBe(left === 0);
      }),
      { numRuns: RUNS },
    );
  });

  it('fetch Headers with any valid header text behave the same way', () => {
    const headerText = fc.string({
      unit: fc.integer({ min: 0x21, max: 0x7e }).map((c) => String.fromCharCode(c)),
    });
    fc.assert(
      fc.property(fc.constantFrom(...NAMES), headerText, (name, value) => {
        const left = read(new Headers({ [name]: value })).deadline.remainingMs();
        expect(left >= 0 && left <= MAX_MS).toBe(true);
      }),
      { numRuns: RUNS },
    );
  });

  it('a caller cannot extend the local maximum, whatever it sends (SPEC D2)', () => {
    fc.assert(
      fc.property(
        fc.bigInt({ min: 0n, max: 10n ** 16n - 1n }),
        fc.integer({ min: 0, max: 99_999_999 }),
        (epoch, rel) => {
          const headers = {
            [NAMES[0]]: String(epoch),
            [NAMES[1]]: `${rel}H`,
            [NAMES[2]]: String(rel),
          };
          expect(read(headers).deadline.remainingMs()).toBeLessThanOrEqual(MAX_MS);
        },
      ),
      { numRuns: RUNS },
    );
  });

  it('bounds the work on a header repeated a million times or 10 MB long: under 100 ms', () => {
    const many = Array.from({ length: 1_000_000 }, (_, i) => String(EPOCH + i));
    expect(timed(() => read({ [NAMES[0]]: many }))).toBeLessThan(100);
    const long = { [NAMES[0]]: '9'.repeat(TEN_MB), [NAMES[1]]: '9'.repeat(TEN_MB) };
    let source = '';
    expect(timed(() => (source = read(long).source))).toBeLessThan(100);
    expect(source).toBe('default');
  });
});
