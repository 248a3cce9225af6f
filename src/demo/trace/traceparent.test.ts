import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { formatTraceparent, parseTraceparent, randomIds, sequentialIds } from './traceparent.js';

const hexOf = (length: number) =>
  fc.string({ unit: fc.constantFrom(...'0123456789abcdef'), minLength: length, maxLength: length });
const traceIds = hexOf(32).filter((s) => !/^0+$/.test(s));
const spanIds = hexOf(16).filter((s) => !/^0+$/.test(s));

describe('traceparent (W3C Trace Context), parsed defensively', () => {
  it('reads back what it writes, for any valid ids', () => {
    fc.assert(
      fc.property(traceIds, spanIds, (traceId, spanId) => {
        expect(parseTraceparent(formatTraceparent(traceId, spanId))).toEqual({
          traceId,
          parentId: spanId,
          flags: 1,
        });
      }),
    );
  });

  it('never throws, and whatever it accepts is well formed (any string, any value)', () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.string(),
          fc.string({ unit: fc.constantFrom(...'0123456789abcdefABF-x ') }),
          fc.anything(),
        ),
        (value) => {
          const parsed = parseTraceparent(value);
          if (parsed === undefined) return;
          expect(parsed.traceId).toMatch(/^[0-9a-f]{32}$/);
          expect(parsed.parentId).toMatch(/^[0-9a-f]{16}$/);
          expect(parsed.traceId).not.toMatch(/^0+$/);
          expect(parsed.parentId).not.toMatch(/^0+$/);
          expect(Number.isInteger(parsed.flags) && parsed.flags >= 0 && parsed.flags <= 255).toBe(true);
        },
      ),
    );
  });

  it('refuses any one-character corruption of a valid header that breaks its grammar', () => {
    fc.assert(
      fc.property(
        traceIds,
        spanIds,
        fc.nat(54),
        fc.constantFrom('G', 'A', '-', ' ', '_', 'z'),
        (t, s, at, c) => {
          const valid = formatTraceparent(t, s);
          const broken = valid.slice(0, at) + c + valid.slice(at + 1);
          if (broken === valid) return;
          // A dash where a dash belongs, or a hex digit in a hex field, keeps it valid: only breaks are refused.
          const dashAt = at === 2 || at === 35 || at === 52;
          if (dashAt && c === '-') return;
          expect(parseTraceparent(broken)).toBeUndefined();
        },
      ),
    );
  });

  it('refuses zero ids, version ff, a 00 with extra fields, upper case, several values; reads a future version', () => {
    const t = '4bf92f3577b34da6a3ce929d0e0e4736';
    const s = '00f067aa0ba902b7';
    expect(parseTraceparent(`00-${t}-${s}-01`)?.traceId).toBe(t);
    expect(parseTraceparent(`00-${'0'.repeat(32)}-${s}-01`)).toBeUndefined();
    expect(parseTraceparent(`00-${t}-${'0'.repeat(16)}-01`)).toBeUndefined();
    expect(parseTraceparent(`ff-${t}-${s}-01`)).toBeUndefined();
    expect(parseTraceparent(`00-${t}-${s}-01-extra`)).toBeUndefined();
    expect(parseTraceparent(`00-${t.toUpperCase()}-${s}-01`)).toBeUndefined();
    expect(parseTraceparent([`00-${t}-${s}-01`])).toBeUndefined();
    expect(parseTraceparent(`cc-${t}-${s}-01-what-the-future-holds`)).toEqual({
      traceId: t,
      parentId: s,
      flags: 1,
    });
    expect(parseTraceparent(`cc-${t}-${s}-01x`)).toBeUndefined();
    expect(parseTraceparent(undefined)).toBeUndefined();
  });

  it('makes ids the parser accepts', () => {
    const ids = sequentialIds();
    for (const source of [randomIds, ids]) {
      expect(
        parseTraceparent(formatTraceparent(source.traceId(1_700_000_000_000), source.spanId())),
      ).toBeDefined();
    }
  });
});
