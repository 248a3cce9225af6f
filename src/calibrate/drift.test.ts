import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { FakeClock } from '../clock/fake.js';
import { InvalidOptionsError } from '../errors/index.js';
import { createLatencyRecorder } from '../latency/recorder.js';
import { checkDrift } from './drift.js';
import { createDriftMonitor } from './drift-monitor.js';

const w = (count: number, timeouts: number, p99: number | undefined) => ({ count, errors: 0, timeouts, p99 });

describe('checkDrift (SPEC C5, V1)', () => {
  it('is ok inside the slack band', () => {
    expect(checkDrift({ timeoutMs: 252, window: w(1000, 2, 180) })).toMatchObject({
      status: 'ok',
      suggestedTimeoutMs: undefined,
    });
  });

  it('is too-tight when the timeout falls below the current p99', () => {
    const r = checkDrift({ timeoutMs: 252, window: w(1000, 0, 300) });
    expect(r.status).toBe('too-tight');
    expect(r.reason).toBe('timeout 252 ms is below the measured p99 300 ms');
    expect(r.suggestedTimeoutMs).toBe(420);
  });

  it('is too-tight when more than 1% of calls are abandoned', () => {
    const r = checkDrift({ timeoutMs: 252, window: w(1000, 15, 180) });
    expect(r).toMatchObject({ status: 'too-tight', abandonRate: 0.015 });
    expect(r.reason).toContain('1.50% of calls abandoned');
    expect(checkDrift({ timeoutMs: 252, window: w(1000, 10, 180) }).status).toBe('ok'); // exactly 1%
  });

  it('is idle-margin with ~0 abandonment, a stable p99 and a timeout far above it', () => {
    const r = checkDrift({ timeoutMs: 2000, window: w(1000, 0, 180), previousP99Ms: 175 });
    expect(r.status).toBe('idle-margin');
    expect(r.suggestedTimeoutMs).toBe(252);
    // an unstable p99 is not a reason to give the margin back
    expect(checkDrift({ timeoutMs: 2000, window: w(1000, 0, 180), previousP99Ms: 90 }).status).toBe('ok');
    // nor is a 0.5% abandonment
    expect(checkDrift({ timeoutMs: 2000, window: w(1000, 5, 180) }).status).toBe('ok');
  });

  it('says insufficient-data rather than guessing, and validates its input', () => {
    expect(checkDrift({ timeoutMs: 252, window: w(20, 0, 180) }).status).toBe('insufficient-data');
    expect(checkDrift({ timeoutMs: 252, window: w(2000, 2000, undefined) }).status).toBe('insufficient-data');
    expect(() => checkDrift({ window: w(1, 0, 1) } as never)).toThrow(/timeoutMs.*required/);
    expect(() => checkDrift({ timeoutMs: 1, window: w(1, 0, 1), idleAbandonRate: 0.5 })).toThrow(
      InvalidOptionsError,
    );
  });

  it('property: a known status, never NaN', () => {
    const n = fc.oneof(fc.double(), fc.nat(), fc.constant(Number.NaN));
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 100_000 }),
        n,
        n,
        fc.option(n, { nil: undefined }),
        (t, c, to, p) => {
          const r = checkDrift({ timeoutMs: t, window: { count: c, errors: 0, timeouts: to, p99: p } });
          expect(['ok', 'too-tight', 'idle-margin', 'insufficient-data']).toContain(r.status);
          expect(Number.isNaN(r.abandonRate)).toBe(false);
          if (r.suggestedTimeoutMs !== undefined) expect(Number.isFinite(r.suggestedTimeoutMs)).toBe(true);
        },
      ),
    );
  });
});

describe('createDriftMonitor (SPEC V1)', () => {
  it('raises an alarm when the p99 of a recorded dependency overtakes the configured timeout, once', () => {
    const clock = new FakeClock();
    const changes: string[] = [];
    const monitor = createDriftMonitor({ timeoutMs: 252, onChange: (r) => changes.push(r.status) });
    const rec = createLatencyRecorder({ clock, windowMs: 1000, onWindow: (win) => monitor.observe(win) });
    const windowOf = (ms: number) => {
      for (let i = 0; i < 200; i += 1) rec.record(i < 196 ? ms / 2 : ms, 'success');
      clock.advance(1000);
    };
    windowOf(180);
    windowOf(180);
    windowOf(400); // the dependency got slower: p99 400 > 252
    windowOf(400);
    rec.record(1, 'success');
    expect(changes).toEqual(['ok', 'too-tight']);
    expect(monitor.last()?.status).toBe('too-tight');
    expect(() => createDriftMonitor({} as never)).toThrow(/timeoutMs/);
  });
});
