import { describe, expect, it } from 'vitest';
import { FakeClock } from '../clock/fake.js';
import { createLatencyRecorder, type LatencyRecorder } from '../latency/recorder.js';
import { fakeCall } from './dependency.test-helpers.js';
import type { AttemptContext, DependencyEvent } from './index.js';
import { createDependency } from './index.js';

/**
 * Hedges wait in a queue per delay (TimerQueues, issue 25), seen from the outside: through
 * `createDependency(...).execute(...)` on a fake clock, with a real latency recorder whose window
 * rotation moves the live p95 the hedge is sent after (SPEC H1).
 */

const WINDOW_MS = 1_000;

/** Fills the recorder's current window with `n` successes of `ms` (the dependency's own answers). */
function fill(recorder: LatencyRecorder, ms: number, n = 100): void {
  for (let i = 0; i < n; i += 1) recorder.record(ms, 'success');
}

/**
 * A hedging dependency whose recorder holds a full window of 30 ms answers: from `WINDOW_MS` on, its
 * live p95 (the hedge delay) is about 30 ms. The budget is wide: every hedge due is sent (SPEC H3 is
 * not what these tests look at).
 */
function setup() {
  const clock = new FakeClock();
  const recorder = createLatencyRecorder({ clock, windowMs: WINDOW_MS, minSamples: 20 });
  const dep = createDependency({
    name: 'catalog',
    p99Ms: 200,
    clock,
    hedge: { minDelayMs: 1 },
    recorder,
    retryBudget: { maxRatio: 10, minPerSecond: 1_000_000 },
    defaultDeadlineMs: 10_000,
  });
  const events: { at: number; event: DependencyEvent }[] = [];
  dep.on((event) => events.push({ at: clock.now(), event }));
  /** The instants of the hedges sent, as the dependency's events tell them. */
  const hedgeEvents = () =>
    events.filter(({ event }) => event.type === 'attempt' && event.kind === 'hedge').map(({ at }) => at);
  fill(recorder, 30);
  /** Operations (originals and hedges) running: each holds one fake-clock timer. */
  const operations = { inFlight: 0 };
  /** The delay a hedge armed now waits (the live p95 the executor reads). */
  const delayNow = () => recorder.quantile(0.95, clock.now(), clock)!;
  return { clock, recorder, dep, events, hedgeEvents, delayNow, operations };
}

/** A call whose original answers after `originalMs` (honouring its signal) and whose hedge after `hedgeMs`. */
function call(
  s: ReturnType<typeof setup>,
  id: string,
  originalMs: number,
  hedgeMs = 5,
): { id: string; startedAt: number; hedges: number[]; done: Promise<unknown> } {
  const { clock } = s;
  const hedges: number[] = [];
  const startedAt = clock.now();
  const done = s.dep.execute(
    (ctx: AttemptContext) => {
      s.operations.inFlight += 1;
      let answer: Promise<string>;
      if (ctx.kind === 'hedge') {
        hedges.push(clock.now());
        answer = fakeCall(clock, ctx, hedgeMs, () => `${id}:hedge`);
      } else answer = fakeCall(clock, ctx, originalMs, () => `${id}:${ctx.kind}`);
      void answer.then(
        () => (s.operations.inFlight -= 1),
        () => (s.operations.inFlight -= 1),
      );
      return answer;
    },
    { idempotent: true },
  );
  return { id, startedAt, hedges, done };
}

describe('hedges wait in a queue per delay (SPEC H1, issue 25)', () => {
  it('many concurrent calls each get their hedge at their own start + the live p95', async () => {
    const s = setup();
    const { clock, delayNow, hedgeEvents } = s;
    await clock.advanceAsync(WINDOW_MS);
    const delay = delayNow();
    expect(delay).toBeGreaterThan(28);
    expect(delay).toBeLessThan(32);
    const baseline = 0;
    expect(clock.pendingTimers()).toBe(baseline); // nothing armed before the calls
    const calls: ReturnType<typeof call>[] = [];
    // 25 slow calls started 3 ms apart (and 4 at one instant): they overlap each other's hedge delay.
    for (let i = 0; i < 25; i += 1) {
      calls.push(call(s, `c${i}`, 400));
      if (i === 10) for (let j = 0; j < 3; j += 1) calls.push(call(s, `c${i}.${j}`, 400));
      await clock.advanceAsync(3);
    }
    // 1075: the last calls still wait for their hedge. Clock timers: one per operation in flight (the
    // fake remote calls), one for the attempts' timeouts (their queue) and one for the hedges still
    // due (their queue): not one per waiting hedge.
    const waiting = calls.filter((c) => c.hedges.length === 0).length;
    expect(waiting).toBeGreaterThan(5);
    expect(clock.pendingTimers()).toBeLessThanOrEqual(s.operations.inFlight + 2);
    await clock.advanceAsync(1_000);
    await Promise.all(calls.map((c) => c.done));
    for (const c of calls) {
      expect(c.hedges, c.id).toHaveLength(1);
      expect(c.hedges[0]! - c.startedAt, c.id).toBeCloseTo(delay, 6);
    }
    expect(hedgeEvents()).toEqual(calls.map((c) => c.hedges[0]));
    expect(new Set(hedgeEvents()).size).toBe(25); // one instant per start, not one for all
    await clock.advanceAsync(0);
    expect(clock.pendingTimers()).toBe(baseline);
  });

  it('a call that answers before its delay sends no hedge and leaves no timer behind; its neighbours keep theirs (SPEC H1)', async () => {
    const s = setup();
    const { clock, delayNow, hedgeEvents } = s;
    await clock.advanceAsync(WINDOW_MS);
    const delay = delayNow();
    const baseline = 0;
    expect(clock.pendingTimers()).toBe(baseline); // nothing armed before the calls
    // Only fast calls: each one's hedge entry is cancelled when it answers.
    const fast = [call(s, 'f0', 10)];
    await clock.advanceAsync(2);
    fast.push(call(s, 'f1', 10), call(s, 'f2', 10));
    await clock.advanceAsync(2);
    fast.push(call(s, 'f3', 10));
    await clock.advanceAsync(10); // 1014: all four answered, the first hedge would be due at ~1030
    await Promise.all(fast.map((c) => c.done));
    expect(clock.now() - fast[0]!.startedAt).toBeLessThan(delay);
    expect(clock.pendingTimers()).toBe(baseline); // the hedge queue's timer went with its last entry
    await clock.advanceAsync(2 * delay);
    expect(fast.map((c) => c.hedges)).toEqual([[], [], [], []]);
    expect(hedgeEvents()).toEqual([]);

    // Fast and slow calls interleaved: the fast ones' cancelled entries (the head among them) do not
    // take the slow ones' hedges with them, nor move them.
    const mixed = [call(s, 'm0', 10), call(s, 'm1', 400)];
    await clock.advanceAsync(1);
    mixed.push(call(s, 'm2', 12), call(s, 'm3', 400));
    await clock.advanceAsync(1);
    mixed.push(call(s, 'm4', 400), call(s, 'm5', 8));
    await clock.advanceAsync(1_000);
    await Promise.all(mixed.map((c) => c.done));
    const got = mixed.map((c) => c.hedges.map((at) => at - c.startedAt));
    expect(got.map((h) => h.length)).toEqual([0, 1, 0, 1, 1, 0]);
    for (const i of [1, 3, 4]) expect(got[i]![0]).toBeCloseTo(delay, 6);
    expect(hedgeEvents()).toEqual([1, 3, 4].map((i) => mixed[i]!.hedges[0]));
    expect(clock.pendingTimers()).toBe(baseline);
  });

  it('after the live p95 changes (window rotation) hedges wait the new delay; calls armed before keep theirs', async () => {
    const s = setup();
    const { clock, recorder, delayNow, hedgeEvents } = s;
    await clock.advanceAsync(WINDOW_MS);
    const before = delayNow(); // ~30 ms, from the first window
    fill(recorder, 60); // the dependency slows down: the window under way holds 60 ms answers
    const baseline = 0;
    expect(clock.pendingTimers()).toBe(baseline); // nothing armed before the calls
    await clock.advanceAsync(WINDOW_MS - 30); // 1970
    const early = [call(s, 'e0', 400)];
    await clock.advanceAsync(10); // 1980
    early.push(call(s, 'e1', 400));
    await clock.advanceAsync(15); // 1995
    early.push(call(s, 'e2', 400));
    await clock.advanceAsync(5); // 2000: the window rotates, the p95 read now is the 60 ms one
    const after = delayNow();
    expect(after).toBeGreaterThan(before + 25);
    const late = [call(s, 'l0', 400)];
    await clock.advanceAsync(7); // 2007
    late.push(call(s, 'l1', 400));
    await clock.advanceAsync(1_000);
    await Promise.all([...early, ...late].map((c) => c.done));
    for (const c of early) {
      expect(c.hedges, c.id).toHaveLength(1);
      expect(c.hedges[0]! - c.startedAt, c.id).toBeCloseTo(before, 6);
    }
    for (const c of late) {
      expect(c.hedges, c.id).toHaveLength(1);
      expect(c.hedges[0]! - c.startedAt, c.id).toBeCloseTo(after, 6);
    }
    // The early calls' hedges came after the switch (e2's at ~2025), in their old queue.
    expect(early[2]!.hedges[0]!).toBeGreaterThan(2_000);
    expect(hedgeEvents()).toEqual([...early, ...late].map((c) => c.hedges[0])); // the events say the same
    // Both queues let their timers go once their entries ran.
    expect(clock.pendingTimers()).toBe(baseline);
  });

  it('dependency.update mid-flight does not lose a hedge armed before it (SPEC X9)', async () => {
    const s = setup();
    const { clock, dep, delayNow, hedgeEvents } = s;
    await clock.advanceAsync(WINDOW_MS);
    const delay = delayNow();
    const baseline = 0;
    expect(clock.pendingTimers()).toBe(baseline); // nothing armed before the calls
    const a = call(s, 'a', 400); // armed under the first plan: due at ~1030
    await clock.advanceAsync(5);
    dep.update({ p99Ms: 210 }); // a new plan, same hedge delay: a queue of its own
    const b = call(s, 'b', 400); // 1005
    await clock.advanceAsync(5);
    dep.update({ hedge: { minDelayMs: 80 } }); // a new plan whose hedges wait 80 ms
    const c = call(s, 'c', 400); // 1010: due at 1090
    await clock.advanceAsync(5);
    dep.update({ hedge: false }); // no hedge for calls from now on
    const d = call(s, 'd', 100); // 1015
    await clock.advanceAsync(1_000);
    await Promise.all([a, b, c, d].map((x) => x.done));
    expect(a.hedges.map((at) => at - a.startedAt)).toEqual([expect.closeTo(delay, 6)]);
    expect(b.hedges.map((at) => at - b.startedAt)).toEqual([expect.closeTo(delay, 6)]);
    expect(c.hedges.map((at) => at - c.startedAt)).toEqual([80]);
    expect(d.hedges).toEqual([]);
    expect(hedgeEvents()).toEqual([a.hedges[0], b.hedges[0], c.hedges[0]]);
    expect(clock.pendingTimers()).toBe(baseline);
  });
});
