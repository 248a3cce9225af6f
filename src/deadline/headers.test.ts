import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { FakeClock } from '../clock/fake.js';
import { isInvalidOptions } from '../errors/guards.js';
import { createDeadlineReader, deadlineFromHeaders, readIncomingDeadline } from './headers.js';

const EPOCH = 1_700_000_000_000;
const setup = () => {
  const clock = new FakeClock({ epoch: EPOCH });
  return { clock, opts: { defaultMs: 1_000, maxMs: 2_000, clock } };
};

describe('deadlineFromHeaders', () => {
  it('reads the absolute x-deadline-epoch-ms header (SPEC D1)', () => {
    const { clock, opts } = setup();
    const r = readIncomingDeadline({ 'x-deadline-epoch-ms': String(EPOCH + 1_500) }, opts);
    expect(r).toMatchObject({ source: 'x-deadline-epoch-ms', capped: false, expired: false });
    expect(r.deadline.remainingMs()).toBe(1_500);
    clock.advance(100);
    expect(r.deadline.remainingMs()).toBe(1_400);
  });

  it('caps a caller asking for 60 s at the local 2 s maximum (SPEC D2)', () => {
    const { opts } = setup();
    const r = readIncomingDeadline({ 'x-deadline-epoch-ms': String(EPOCH + 60_000) }, opts);
    expect(r.capped).toBe(true);
    expect(r.deadline.remainingMs()).toBe(2_000);
  });

  it('gives the default deadline for a missing or malformed header (SPEC D3)', () => {
    const { opts } = setup();
    for (const value of ['', 'abc', '-5', '1e13', '0x10', '12.5', ' ', '1'.repeat(40), '١٢٣']) {
      const r = readIncomingDeadline({ 'x-deadline-epoch-ms': value }, opts);
      expect(r.source, value).toBe('default');
      expect(r.deadline.remainingMs()).toBe(1_000);
    }
    expect(deadlineFromHeaders({}, opts).remainingMs()).toBe(1_000);
  });

  it('reads a repeated header joined with commas: the earliest valid value wins (#14)', () => {
    const { opts } = setup();
    // Before: "T1, T2" was malformed and fell back to the 1 s default.
    const joined = `${EPOCH + 1_500}, ${EPOCH + 900}`;
    expect(deadlineFromHeaders({ 'x-deadline-epoch-ms': joined }, opts).remainingMs()).toBe(900);
    expect(
      deadlineFromHeaders(
        new Headers([
          ['x-deadline-epoch-ms', String(EPOCH + 800)],
          ['x-deadline-epoch-ms', String(EPOCH + 1_200)],
        ]),
        opts,
      ).remainingMs(),
    ).toBe(800);
    expect(deadlineFromHeaders({ 'x-deadline-epoch-ms': `junk, ${EPOCH + 700},` }, opts).remainingMs()).toBe(
      700,
    );
    expect(deadlineFromHeaders({ 'grpc-timeout': '900m, 300m' }, opts).remainingMs()).toBe(300);
    expect(
      deadlineFromHeaders({ 'x-envoy-expected-rq-timeout-ms': ['600, 400', '500'] }, opts).remainingMs(),
    ).toBe(400);
    const r = readIncomingDeadline({ 'x-deadline-epoch-ms': 'a, b' }, opts);
    expect([r.source, r.deadline.remainingMs()]).toEqual(['default', 1_000]);
    // Bounded: a header of a million commas costs a bounded scan and reads as nothing.
    expect(readIncomingDeadline({ 'x-deadline-epoch-ms': ','.repeat(1_000_000) }, opts).source).toBe(
      'default',
    );
  });

  it('accepts grpc-timeout and envoy relative headers (SPEC D8)', () => {
    const { opts } = setup();
    expect(deadlineFromHeaders({ 'grpc-timeout': '250m' }, opts).remainingMs()).toBe(250);
    expect(deadlineFromHeaders({ 'grpc-timeout': '1S' }, opts).remainingMs()).toBe(1_000);
    expect(deadlineFromHeaders({ 'grpc-timeout': '1500000u' }, opts).remainingMs()).toBe(1_500);
    expect(deadlineFromHeaders({ 'x-envoy-expected-rq-timeout-ms': '700' }, opts).remainingMs()).toBe(700);
  });

  it("reads Connect's connect-timeout-ms: relative ms, capped, the earliest of the forms wins (#26 item 4)", () => {
    const { opts } = setup();
    // Before: the header was not read at all and the request got the 1 s default.
    const one = readIncomingDeadline({ 'connect-timeout-ms': '450' }, opts);
    expect(one).toMatchObject({ source: 'connect-timeout-ms', capped: false, expired: false });
    expect(one.deadline.remainingMs()).toBe(450);
    // Capped at maxMs like every other form (SPEC D2).
    const long = readIncomingDeadline({ 'connect-timeout-ms': '60000' }, opts);
    expect([long.source, long.capped, long.deadline.remainingMs()]).toEqual([
      'connect-timeout-ms',
      true,
      2_000,
    ]);
    // Earliest wins, whichever header says it.
    const earlier = readIncomingDeadline(
      { 'connect-timeout-ms': '300', 'grpc-timeout': '400m', 'x-deadline-epoch-ms': String(EPOCH + 900) },
      opts,
    );
    expect([earlier.source, earlier.deadline.remainingMs()]).toEqual(['connect-timeout-ms', 300]);
    const later = readIncomingDeadline({ 'connect-timeout-ms': '700', 'grpc-timeout': '400m' }, opts);
    expect([later.source, later.deadline.remainingMs()]).toEqual(['grpc-timeout', 400]);
    // A tie goes to the forms read first (the absolute one, then gRPC's, Envoy's).
    const tie = readIncomingDeadline({ 'connect-timeout-ms': '400', 'grpc-timeout': '400m' }, opts);
    expect(tie.source).toBe('grpc-timeout');
    // Repeated: value by value, the earliest; fetch Headers (a Connect server's) read the same.
    expect(deadlineFromHeaders({ 'connect-timeout-ms': '900, 250' }, opts).remainingMs()).toBe(250);
    expect(deadlineFromHeaders(new Headers({ 'Connect-Timeout-Ms': '650' }), opts).remainingMs()).toBe(650);
    // "0" is a deadline already gone; malformed values are ignored (the default applies).
    expect(readIncomingDeadline({ 'connect-timeout-ms': '0' }, opts).expired).toBe(true);
    for (const value of ['', '-5', '1.5', '250m', '1e3', '12345678901', '0x10', ' ']) {
      const r = readIncomingDeadline({ 'connect-timeout-ms': value }, opts);
      expect([r.source, r.deadline.remainingMs()], value).toEqual(['default', 1_000]);
    }
  });

  it('takes the earliest of several valid headers', () => {
    const { opts } = setup();
    const r = readIncomingDeadline(
      {
        'x-deadline-epoch-ms': String(EPOCH + 900),
        'grpc-timeout': '400m',
        'x-envoy-expected-rq-timeout-ms': '600',
      },
      opts,
    );
    expect(r.source).toBe('grpc-timeout');
    expect(r.deadline.remainingMs()).toBe(400);
    const repeated = readIncomingDeadline(
      { 'x-deadline-epoch-ms': [String(EPOCH + 900), 'junk', String(EPOCH + 300)] },
      opts,
    );
    expect(repeated.deadline.remainingMs()).toBe(300);
  });

  it('reads fetch Headers', () => {
    const { opts } = setup();
    const headers = new Headers({ 'X-Deadline-Epoch-Ms': String(EPOCH + 800) });
    expect(deadlineFromHeaders(headers, opts).remainingMs()).toBe(800);
  });

  it('marks an already expired request', () => {
    const { opts } = setup();
    const r = readIncomingDeadline({ 'x-deadline-epoch-ms': String(EPOCH - 5) }, opts);
    expect(r.expired).toBe(true);
    expect(r.deadline.expired()).toBe(true);
  });

  it('corrects a known clock skew of the sender', () => {
    const { clock } = setup();
    // The sender's clock runs 300 ms ahead: its "now + 1000" is our "now + 700".
    const d = deadlineFromHeaders(
      { 'x-deadline-epoch-ms': String(EPOCH + 300 + 1_000) },
      { clock, maxMs: 5_000, clockSkewMs: 300 },
    );
    expect(d.remainingMs()).toBe(1_000);
  });

  it('validates its options once, listing every problem', () => {
    try {
      createDeadlineReader({ defaultMs: -1, maxMs: Number.NaN, clockSkewMs: 1e12 });
      expect.unreachable();
    } catch (error) {
      expect(isInvalidOptions(error)).toBe(true);
      if (!isInvalidOptions(error)) return;
      expect(error.problems).toHaveLength(3);
      expect(error.problems[1]).toContain('`maxMs` must be');
    }
    expect(() => createDeadlineReader({ defaultMs: 5_000, maxMs: 1_000 })).toThrow(/must not exceed/);
  });

  it('property: any header shape gives a deadline in [now, now + max], never NaN, never throws', () => {
    const { clock, opts } = setup();
    const read = createDeadlineReader(opts);
    const value = fc.oneof(
      fc.string(),
      fc.string({ unit: 'binary' }),
      fc.integer().map(String),
      fc.double().map(String),
      fc.bigInt().map(String),
      fc.constantFrom('250m', '8H', '99999999n', '9999999999', '0', String(EPOCH + 10), String(EPOCH * 10)),
      fc.array(fc.string(), { maxLength: 20 }),
      fc.integer(),
      fc.double(),
      fc.constant(undefined),
      fc.constant(null),
      fc.object(),
    );
    const headers = fc.oneof(
      fc.record(
        {
          'x-deadline-epoch-ms': value,
          'grpc-timeout': value,
          'x-envoy-expected-rq-timeout-ms': value,
          'connect-timeout-ms': value,
        },
        { requiredKeys: [] },
      ),
      fc.dictionary(fc.string(), value),
      fc.anything(),
    );
    fc.assert(
      fc.property(headers, fc.nat(1_000_000), (h, advance) => {
        clock.advance(advance);
        const r = read(h as never);
        const left = r.deadline.remainingMs();
        expect(Number.isNaN(left)).toBe(false);
        expect(left).toBeGreaterThanOrEqual(0);
        expect(left).toBeLessThanOrEqual(2_000);
        expect(Number.isFinite(r.deadline.epochMs())).toBe(true);
      }),
      { numRuns: 10_000 },
    );
  });
});
