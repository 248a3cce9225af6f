import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { FakeClock } from '../clock/fake.js';
import { InvalidOptionsError } from '../errors/options.js';
import { createLatencyRecorder } from '../latency/recorder.js';
import type { LatencySource } from '../latency/types.js';
import { createHedgePolicy } from './policy.js';

/** A latency source answering fixed quantiles (undefined = not enough samples yet). */
const fixed = (values: Record<number, number | undefined>): LatencySource => ({
  record: () => {},
  quantile: (q) => values[q],
  lastWindow: () => undefined,
  currentWindow: () => {
    throw new Error('unused');
  },
});

describe('createHedgePolicy (SPEC H1)', () => {
  it('hedges after the live p95', () => {
    expect(createHedgePolicy(fixed({ 0.95: 40 })).delayMs()).toBe(40);
  });

  it('does not hedge until the source has enough samples', () => {
    expect(createHedgePolicy(fixed({})).delayMs()).toBeUndefined();
  });

  it('keeps a minimum delay, and no hedge above the ceiling', () => {
    expect(createHedgePolicy(fixed({ 0.95: 1 }), { minDelayMs: 5 }).delayMs()).toBe(5);
    expect(createHedgePolicy(fixed({ 0.95: 300 }), { maxDelayMs: 250 }).delayMs()).toBeUndefined();
    expect(createHedgePolicy(fixed({ 0.95: 250 }), { maxDelayMs: 250 }).delayMs()).toBe(250);
  });

  it('derives the percentile from the allowed extra load (Finagle)', () => {
    const policy = createHedgePolicy(fixed({ 0.98: 70 }), { maxExtraLoad: 0.02 });
    expect(policy.percentile).toBe(0.98);
    expect(policy.delayMs()).toBe(70);
  });

  it('follows a real recorder: nothing until its window fills, then its p95', () => {
    const clock = new FakeClock();
    const recorder = createLatencyRecorder({ clock, windowMs: 1_000, minSamples: 100 });
    const policy = createHedgePolicy(recorder, { minDelayMs: 0 });
    for (let i = 1; i <= 100; i += 1) recorder.record(i, 'success');
    expect(policy.delayMs()).toBeUndefined();
    clock.advance(1_000);
    expect(policy.delayMs()).toBeGreaterThanOrEqual(94);
    expect(policy.delayMs()).toBeLessThanOrEqual(97);
  });

  it('reports every bad option at once', () => {
    let error: unknown;
    try {
      createHedgePolicy(fixed({}), { percentile: 0.2, maxExtraLoad: 0.9, minDelayMs: 10, maxDelayMs: 5 });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(InvalidOptionsError);
    expect((error as InvalidOptionsError).problems).toHaveLength(4);
  });

  it('never returns NaN, a negative delay or one above the ceiling', () => {
    fc.assert(
      fc.property(fc.option(fc.double(), { nil: undefined }), fc.nat(100), fc.nat(1_000), (q, min, span) => {
        const d = createHedgePolicy(fixed({ 0.95: q }), {
          minDelayMs: min,
          maxDelayMs: min + span,
        }).delayMs();
        expect(d === undefined || (d >= min && d <= min + span)).toBe(true);
      }),
    );
  });
});
