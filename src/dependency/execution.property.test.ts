import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { FakeClock } from '../clock/fake.js';
import { Deadline } from '../deadline/deadline.js';
import { createDependency } from './dependency.js';
import { coded, fakeCall } from './dependency.test-helpers.js';
import type { AttemptContext } from './types.js';

/** What one attempt does: how long it takes and how it ends. */
const stepArb = fc.record({
  ms: fc.integer({ min: 0, max: 400 }),
  end: fc.constantFrom('ok', 'refused', 'reset', '503', '429', '400', 'hang'),
  retryAfter: fc.constantFrom(undefined, '0', '1', 'garbage'),
});

function outcome(step: { readonly end: string; readonly retryAfter: string | undefined }): unknown {
  const headers = step.retryAfter === undefined ? {} : { 'retry-after': step.retryAfter };
  switch (step.end) {
    case 'ok':
      return 'ok';
    case 'refused':
      return coded('ECONNREFUSED');
    case 'reset':
      return coded('ECONNRESET');
    default:
      return Object.assign(new Error(step.end), { status: Number(step.end), headers });
  }
}

describe('executor invariants on random failure sequences (SPEC R1, R5, R6)', () => {
  it('never exceeds its attempts, pays every retry, starts no attempt without its p99, never outlives the deadline', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(stepArb, { minLength: 1, maxLength: 8 }),
        fc.record({
          attempts: fc.integer({ min: 1, max: 5 }),
          p99Ms: fc.integer({ min: 1, max: 200 }),
          deadlineMs: fc.integer({ min: 0, max: 3_000 }),
          idempotent: fc.boolean(),
          retryResponseTimeout: fc.boolean(),
          seed: fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }),
        }),
        async (script, o) => {
          const clock = new FakeClock();
          const dep = createDependency({
            name: 'x',
            p99Ms: o.p99Ms,
            attempts: o.attempts,
            clock,
            random: () => o.seed,
          });
          const deadline = Deadline.after(o.deadlineMs, { clock });
          const starts: { at: number; ctx: AttemptContext }[] = [];
          const operation = (ctx: AttemptContext) => {
            const step = script[Math.min(starts.length, script.length - 1)]!;
            starts.push({ at: clock.now(), ctx });
            if (step.end === 'hang') return fakeCall(clock, ctx, 1e9, () => 'never');
            return fakeCall(clock, ctx, step.ms, () => {
              const result = outcome(step);
              if (result instanceof Error) throw result;
              return result;
            });
          };
          let settledAt = Number.NaN;
          const p = dep
            .execute(operation, {
              idempotent: o.idempotent,
              deadline,
              retryResponseTimeout: o.retryResponseTimeout,
            })
            .finally(() => {
              settledAt = clock.now();
            });
          p.catch(() => {});
          await clock.runAllAsync();
          await p.catch(() => {});

          expect(starts.length).toBeLessThanOrEqual(o.idempotent ? o.attempts : 1);
          expect(dep.budget.state().extras).toBe(Math.max(0, starts.length - 1));
          for (const { at, ctx } of starts) {
            expect(deadline.at - at).toBeGreaterThanOrEqual(o.p99Ms);
            expect(ctx.timeoutMs).toBeLessThanOrEqual(Math.min(dep.timeouts.responseMs, deadline.at - at));
          }
          expect(settledAt).toBeLessThanOrEqual(deadline.at);
          expect(clock.pendingTimers()).toBe(0);
        },
      ),
      { numRuns: 300 },
    );
  });
});

describe('the hedge rule on random deadlines and latencies (SPEC H1, D4; issue 15)', () => {
  it('sends a hedge exactly when the original is unanswered at the delay and the median is left; every hedge fits its deadline', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.record({
          p99Ms: fc.integer({ min: 1, max: 300 }),
          p50Ms: fc.option(fc.integer({ min: 0, max: 300 }), { nil: undefined }),
          p95Ms: fc.integer({ min: 0, max: 400 }),
          deadlineMs: fc.integer({ min: 0, max: 800 }),
          originalMs: fc.integer({ min: 0, max: 1_000 }),
          hedgeMs: fc.integer({ min: 0, max: 1_000 }),
        }),
        async (o) => {
          const clock = new FakeClock();
          const dep = createDependency({
            name: 'x',
            p99Ms: o.p99Ms,
            clock,
            hedge: { minDelayMs: 0, maxDelayMs: 1e6 },
            recorder: {
              record: () => {},
              quantile: (q) => (q === 0.95 ? o.p95Ms : q === 0.5 ? o.p50Ms : undefined),
              lastWindow: () => undefined,
              currentWindow: () => {
                throw new Error('unused');
              },
            },
          });
          const skipped: { remainingMs: number; neededMs: number }[] = [];
          dep.on((e) => {
            if (e.type === 'hedge-skipped') skipped.push(e);
          });
          const starts: { kind: string; at: number }[] = [];
          const p = dep.execute(
            (ctx) => {
              starts.push({ kind: ctx.kind, at: clock.now() });
              return fakeCall(clock, ctx, ctx.kind === 'hedge' ? o.hedgeMs : o.originalMs, () => ctx.kind);
            },
            { idempotent: true, deadline: Deadline.after(o.deadlineMs, { clock }) },
          );
          p.catch(() => {});
          await clock.runAllAsync();
          await p.then(
            () => {},
            () => {},
          );
          const hedges = starts.filter((s) => s.kind === 'hedge');
          expect(hedges.length).toBeLessThanOrEqual(1);
          if (starts.length === 0) return; // D4 refused the call itself
          const responseMs = Math.ceil(o.p99Ms * 1.4);
          const due = o.p95Ms < Math.min(o.deadlineMs, responseMs) && o.originalMs > o.p95Ms;
          const needed = Math.max(o.p50Ms ?? o.p99Ms, 1);
          const left = o.deadlineMs - o.p95Ms;
          if (!due) expect(hedges).toEqual([]);
          else if (left >= needed) expect(hedges).toEqual([{ kind: 'hedge', at: o.p95Ms }]);
          else {
            expect(hedges).toEqual([]);
            expect(skipped).toEqual([
              {
                type: 'hedge-skipped',
                dependency: 'x',
                reason: 'deadline',
                remainingMs: left,
                neededMs: needed,
              },
            ]);
          }
        },
      ),
      { numRuns: 300 },
    );
  });
});
