import { Metadata } from '@grpc/grpc-js';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { FakeClock } from '../clock/fake.js';
import { createDeadlineReader } from '../deadline/headers.js';
import { grpcDeadlineEpochMs } from './deadline.js';
import { readCallDeadline } from './incoming.js';

const EPOCH = 1_700_000_000_000;
const setup = () => {
  const clock = new FakeClock({ epoch: EPOCH });
  return { clock, read: createDeadlineReader({ clock, defaultMs: 500, maxMs: 2_000 }) };
};
const call = (deadline: unknown, entries: Record<string, string> = {}) => {
  const metadata = new Metadata();
  for (const [k, v] of Object.entries(entries)) metadata.set(k, v);
  return { metadata, getDeadline: () => deadline };
};

describe('readCallDeadline (SPEC D2, D3, D8)', () => {
  it('reads getDeadline() as a Date or epoch number, Infinity or junk as none', () => {
    const { clock, read } = setup();
    expect(readCallDeadline(read, clock, call(EPOCH + 800)).deadline.remainingMs()).toBe(800);
    expect(readCallDeadline(read, clock, call(new Date(EPOCH + 300))).deadline.remainingMs()).toBe(300);
    for (const none of [Number.POSITIVE_INFINITY, Number.NaN, 'soon', null, undefined, {}]) {
      const r = readCallDeadline(read, clock, call(none));
      expect(r.source).toBe('default');
      expect(r.deadline.remainingMs()).toBe(500);
    }
    expect(grpcDeadlineEpochMs(new Date(Number.NaN))).toBeUndefined();
  });

  it('caps at maxMs, takes the earlier of grpc and x-deadline-epoch-ms, and sees an expired call', () => {
    const { clock, read } = setup();
    expect(readCallDeadline(read, clock, call(EPOCH + 60_000))).toMatchObject({
      capped: true,
      expired: false,
    });
    const both = readCallDeadline(
      read,
      clock,
      call(EPOCH + 900, { 'x-deadline-epoch-ms': String(EPOCH + 400) }),
    );
    expect([both.source, both.deadline.remainingMs()]).toEqual(['x-deadline-epoch-ms', 400]);
    expect(readCallDeadline(read, clock, call(EPOCH - 1)).expired).toBe(true);
  });

  it('property: any deadline value and metadata give a deadline in [0, maxMs], never NaN', () => {
    const { clock, read } = setup();
    const deadline = fc.oneof(
      fc.double(),
      fc.integer({ min: EPOCH - 10_000, max: EPOCH + 10_000 }),
      fc.date({ noInvalidDate: false }),
      fc.string(),
      fc.constant(undefined),
    );
    const text = fc.string({ unit: 'grapheme-ascii', maxLength: 40 });
    fc.assert(
      fc.property(deadline, text, text, (d, epoch, envoy) => {
        const metadata: Record<string, string> = {};
        if (/^[\x20-\x7e]*$/.test(epoch)) metadata['x-deadline-epoch-ms'] = epoch;
        if (/^[\x20-\x7e]*$/.test(envoy)) metadata['x-envoy-expected-rq-timeout-ms'] = envoy;
        const left = readCallDeadline(read, clock, call(d, metadata)).deadline.remainingMs();
        expect(Number.isFinite(left)).toBe(true);
        expect(left).toBeGreaterThanOrEqual(0);
        expect(left).toBeLessThanOrEqual(2_000);
      }),
      { numRuns: 500 },
    );
  });
});
