import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { driveCall } from './call.test-helpers.js';

/**
 * The phase timer against a reference model, on random schedules (fast-check): whatever the order
 * and spacing of the write, the head and body chunks, the attempt fails exactly at the earliest bound
 * it crossed, with that bound's code, never earlier, never later, and with at most one timer armed
 * (the executor arms none of its own for an HTTP attempt).
 */

interface Schedule {
  deadlineMs: number;
  attemptMs: number;
  responseMs: number;
  bodyMs: number;
  connectAfter: number;
  headAfter: number;
  gaps: number[];
}

type Expected = { at: number; code: string } | undefined;

/** The reference: when and how the schedule should fail (deadline checked first, as documented). */
function model(s: Schedule): Expected {
  const end = Math.min(s.deadlineMs, s.attemptMs);
  const code = (deadlineBound: boolean, queued: boolean) =>
    deadlineBound ? 'DEADLINE_EXCEEDED' : queued ? 'QUEUE_TIMEOUT' : 'RESPONSE_TIMEOUT';
  if (s.connectAfter >= end) return { at: end, code: code(s.deadlineMs <= s.attemptMs, true) };
  const head = s.connectAfter + s.headAfter;
  const headBound = Math.min(end, s.connectAfter + s.responseMs);
  if (head >= headBound) return { at: headBound, code: code(s.deadlineMs <= headBound, false) };
  let last = head;
  for (const gap of [...s.gaps, 1]) {
    const bound = Math.min(s.deadlineMs, last + s.bodyMs);
    if (last + gap >= bound)
      return { at: bound, code: s.deadlineMs <= bound ? 'DEADLINE_EXCEEDED' : 'BODY_TIMEOUT' };
    last += gap;
  }
  return undefined;
}

async function run(s: Schedule): Promise<{ failed: Expected; maxTimers: number }> {
  const { clock, attempt, handler, controller } = driveCall(s);
  let failed: Expected;
  let maxTimers = 0;
  const onError = handler.onResponseError.bind(handler);
  handler.onResponseError = (c, error) => {
    failed ??= { at: clock.now(), code: (error as Error & { code: string }).code };
    onError(c, error);
  };
  const step = async (ms: number, then: () => void) => {
    clock.advance(ms);
    maxTimers = Math.max(maxTimers, clock.pendingTimers());
    if (failed === undefined) then();
    await new Promise<void>((resolve) => queueMicrotask(resolve)); // the deferred body timer
    maxTimers = Math.max(maxTimers, clock.pendingTimers());
  };
  await step(s.connectAfter, () => attempt.onRequestStart(controller));
  await step(s.headAfter, () => attempt.onResponseStart(controller, 200, {}, 'OK'));
  for (const gap of s.gaps) await step(gap, () => attempt.onResponseData(controller, Buffer.from('x')));
  await step(1, () => attempt.onResponseEnd(controller, {}));
  return { failed, maxTimers };
}

describe('PhaseTimer (property)', () => {
  it('fails exactly at the earliest crossed bound, with its code, holding at most one timer', async () => {
    const ms = (max: number) => fc.integer({ min: 1, max });
    await fc.assert(
      fc.asyncProperty(
        fc.record({
          deadlineMs: ms(2_000),
          attemptMs: ms(2_000),
          responseMs: ms(1_000),
          bodyMs: ms(500),
          connectAfter: fc.integer({ min: 0, max: 600 }),
          headAfter: fc.integer({ min: 0, max: 600 }),
          gaps: fc.array(fc.integer({ min: 0, max: 400 }), { maxLength: 8 }),
        }),
        async (schedule) => {
          const { failed, maxTimers } = await run(schedule);
          expect(failed).toEqual(model(schedule));
          expect(maxTimers).toBeLessThanOrEqual(1);
        },
      ),
      { numRuns: 500 },
    );
  });
});
