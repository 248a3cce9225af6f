import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  formatGrpcTimeout,
  parseConnectTimeout,
  parseEnvoyTimeoutMs,
  parseEpochMs,
  parseGrpcTimeout,
  parseRelativeMs,
} from './parse.js';

describe('deadline header parsers', () => {
  it('parse strict digits only', () => {
    expect(parseEpochMs('1700000000000')).toBe(1_700_000_000_000);
    expect(parseEpochMs(' 17 ')).toBe(17);
    for (const bad of ['', '+1', '-1', '1.5', '1e3', '0x1', 'Infinity', 'NaN', '12345678901234567']) {
      expect(parseEpochMs(bad), bad).toBeUndefined();
    }
    expect(parseRelativeMs('250')).toBe(250);
    expect(parseRelativeMs('12345678901')).toBeUndefined();
  });

  it('Envoy\'s header: 0 is its "no timeout", read as no limit; anything else as parseRelativeMs reads it (property)', () => {
    expect(parseEnvoyTimeoutMs('0')).toBeUndefined();
    expect(parseEnvoyTimeoutMs(' 0000 ')).toBeUndefined();
    expect(parseEnvoyTimeoutMs('1')).toBe(1);
    expect(parseEnvoyTimeoutMs('250')).toBe(250);
    fc.assert(
      fc.property(fc.oneof(fc.string({ maxLength: 14 }), fc.nat().map(String)), (text) => {
        const relative = parseRelativeMs(text);
        expect(parseEnvoyTimeoutMs(text)).toBe(relative === 0 ? undefined : relative);
      }),
    );
  });

  it('parse every grpc-timeout unit', () => {
    expect(parseGrpcTimeout('2H')).toBe(7_200_000);
    expect(parseGrpcTimeout('3M')).toBe(180_000);
    expect(parseGrpcTimeout('2S')).toBe(2_000);
    expect(parseGrpcTimeout('250m')).toBe(250);
    expect(parseGrpcTimeout('2500u')).toBe(2.5);
    expect(parseGrpcTimeout('3000000n')).toBe(3);
    for (const bad of ['', 'm', '1', '123456789m', '1s', '1.5S', '-1S', 'S1']) {
      expect(parseGrpcTimeout(bad), bad).toBeUndefined();
    }
  });

  it("parse connect-timeout-ms as Connect's own servers do: 1 to 10 ASCII digits, ms (#26 item 4)", () => {
    expect(parseConnectTimeout('250')).toBe(250);
    expect(parseConnectTimeout('0')).toBe(0);
    expect(parseConnectTimeout('9999999999')).toBe(9_999_999_999);
    expect(parseConnectTimeout(' 30 ')).toBe(30);
    for (const bad of ['', '+1', '-1', '1.5', '1e3', '0x1', '250m', '12345678901', '١٢']) {
      expect(parseConnectTimeout(bad), bad).toBeUndefined();
    }
  });

  it('refuse oversized values at a bounded cost', () => {
    const huge = '1'.repeat(10_000_000);
    expect(parseEpochMs(huge)).toBeUndefined();
    expect(parseGrpcTimeout(huge)).toBeUndefined();
    expect(parseConnectTimeout(huge)).toBeUndefined();
  });

  it('property: parsers return undefined or a finite non-negative number', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 64 }), (s) => {
        for (const parse of [
          parseEpochMs,
          parseRelativeMs,
          parseEnvoyTimeoutMs,
          parseGrpcTimeout,
          parseConnectTimeout,
        ]) {
          const v = parse(s);
          if (v !== undefined) {
            expect(Number.isFinite(v)).toBe(true);
            expect(v).toBeGreaterThanOrEqual(0);
          }
        }
      }),
      { numRuns: 10_000 },
    );
  });

  it('property: formatGrpcTimeout round-trips, never above the input, within one unit', () => {
    fc.assert(
      fc.property(fc.double({ min: 1e-6, max: 3.5e14, noNaN: true }), (ms) => {
        const text = formatGrpcTimeout(ms);
        const back = parseGrpcTimeout(text);
        expect(back).toBeDefined();
        expect(back!).toBeLessThanOrEqual(ms);
        const unit = text.endsWith('H')
          ? 3_600_000
          : text.endsWith('M')
            ? 60_000
            : text.endsWith('S')
              ? 1_000
              : text.endsWith('m')
                ? 1
                : text.endsWith('u')
                  ? 1e-3
                  : 1e-6;
        expect(ms - back!).toBeLessThan(unit * (1 + 1e-9));
      }),
      { numRuns: 10_000 },
    );
    expect(formatGrpcTimeout(Number.NaN)).toBe('1n');
    expect(formatGrpcTimeout(-4)).toBe('1n');
    expect(formatGrpcTimeout(0)).toBe('1n');
  });

  it('writes what is below 1 ms in u or n: a positive integer of at most 8 digits, rounded down (#14)', () => {
    expect(formatGrpcTimeout(0.5)).toBe('500u'); // before: '0m', which says "expired"
    expect(formatGrpcTimeout(0.999)).toBe('999u');
    expect(formatGrpcTimeout(0.0015)).toBe('1u');
    expect(formatGrpcTimeout(0.0009)).toBe('900n');
    expect(formatGrpcTimeout(1e-9)).toBe('1n');
    fc.assert(
      fc.property(fc.double({ min: 0, max: 1e13, noNaN: true }), (ms) => {
        const text = formatGrpcTimeout(ms);
        expect(text).toMatch(/^[1-9][0-9]{0,7}[HMSmun]$/);
        const back = parseGrpcTimeout(text)!;
        if (ms >= 1e-6 && ms < 3.6e14) expect(back).toBeLessThanOrEqual(ms * (1 + 1e-12));
      }),
      { numRuns: 10_000 },
    );
  });
});
