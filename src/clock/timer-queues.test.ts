import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { FakeClock } from './fake.js';
import { ON_DUE, type QueuedBound, type TimerQueue, TimerQueues } from './timer-queue.js';

/** A queued bound that runs `fn`. */
const bound = (fn: () => unknown): QueuedBound => ({ [ON_DUE]: () => void fn() });

/** Arms an entry of `delayMs` in `queues` now, recording the instants it runs at under `id`. */
function armer(clock: FakeClock, queues: TimerQueues) {
  const ran = new Map<string, number[]>();
  const arm = (id: string, delayMs: number): { queue: TimerQueue; handle: number } => {
    const queue = queues.of(delayMs);
    const handle = queue.add(
      bound(() => {
        const at = ran.get(id) ?? [];
        at.push(clock.now());
        ran.set(id, at);
      }),
      clock.now(),
    );
    return { queue, handle };
  };
  return { ran, arm };
}

describe('TimerQueues: one queue per hedge delay, the delay following the live p95 (SPEC H1)', () => {
  it('hands out the same queue while the delay stays the same, and a new one of the new delay when it changes', () => {
    const clock = new FakeClock();
    const queues = new TimerQueues(clock);
    const first = queues.of(30);
    expect(first.delayMs).toBe(30);
    expect(queues.of(30)).toBe(first);
    expect(queues.of(30)).toBe(first);
    const second = queues.of(45.5);
    expect(second).not.toBe(first);
    expect(second.delayMs).toBe(45.5);
    expect(queues.of(45.5)).toBe(second);
    const third = queues.of(30); // the p95 went back: a queue of that delay again
    expect(third.delayMs).toBe(30);
    expect(third).not.toBe(second);
    expect(queues.of(30)).toBe(third);
  });

  it('entries armed in the old queue still run at their own instants after the switch, and its timer goes once they are done', () => {
    const clock = new FakeClock({ now: 1_000 });
    const queues = new TimerQueues(clock);
    const { ran, arm } = armer(clock, queues);
    arm('a', 30); // due 1030
    clock.advance(4);
    arm('b', 30); // due 1034
    clock.advance(6);
    arm('c', 30); // due 1040
    expect(clock.pendingTimers()).toBe(1); // one clock timer for the three
    clock.advance(2); // 1012: the p95 moved
    arm('d', 50); // due 1062, in a new queue
    clock.advance(1); // 1013
    arm('e', 50); // due 1063
    expect(clock.pendingTimers()).toBe(2); // one per queue, not one per entry
    clock.advance(16); // 1029
    expect(ran).toEqual(new Map());
    clock.advance(1); // 1030
    expect(ran).toEqual(new Map([['a', [1_030]]]));
    clock.advance(9); // 1039
    expect(ran).toEqual(
      new Map([
        ['a', [1_030]],
        ['b', [1_034]],
      ]),
    );
    clock.advance(1); // 1040: the old queue's last entry
    expect(ran.get('c')).toEqual([1_040]);
    expect(clock.pendingTimers()).toBe(1); // the old queue let its timer go: only the new one's is left
    clock.advance(21); // 1061
    expect(ran.has('d')).toBe(false);
    clock.advance(1); // 1062
    expect(ran.get('d')).toEqual([1_062]);
    expect(ran.has('e')).toBe(false);
    clock.advance(1); // 1063
    expect(ran.get('e')).toEqual([1_063]);
    expect(clock.pendingTimers()).toBe(0);
    clock.advance(1_000);
    // Each ran once.
    expect([...ran.values()].map((at) => at.length)).toEqual([1, 1, 1, 1, 1]);
  });

  it('an entry armed in the new queue of a shorter delay runs before the old queue’s later ones', () => {
    const clock = new FakeClock();
    const queues = new TimerQueues(clock);
    const { ran, arm } = armer(clock, queues);
    arm('slow', 80); // due 80
    clock.advance(10);
    arm('fast', 20); // due 30: the p95 dropped
    clock.advance(19);
    expect(ran.size).toBe(0);
    clock.advance(1);
    expect([...ran.entries()]).toEqual([['fast', [30]]]);
    clock.advance(49);
    expect(ran.has('slow')).toBe(false);
    clock.advance(1);
    expect(ran.get('slow')).toEqual([80]);
    expect(clock.pendingTimers()).toBe(0);
  });

  it('cancels entries in either queue after the switch (handles are per queue), and holds no timer once all are gone', () => {
    const clock = new FakeClock();
    const queues = new TimerQueues(clock);
    const { ran, arm } = armer(clock, queues);
    const a = arm('a', 30); // old queue, handle 0
    const b = arm('b', 30); // old queue, handle 1
    clock.advance(5);
    const c = arm('c', 40); // new queue, handle 0
    const d = arm('d', 40); // new queue, handle 1
    expect(c.handle).toBe(a.handle); // handles collide across queues: a cancel goes to its own queue
    c.queue.cancel(c.handle); // cancels c, not a
    a.queue.cancel(a.handle); // cancels a, not c's slot again
    clock.advance(25); // 30
    expect(ran).toEqual(new Map([['b', [30]]]));
    expect(clock.pendingTimers()).toBe(1); // the old queue is done; the new one waits for d
    clock.advance(14); // 44
    expect(ran.has('d')).toBe(false);
    clock.advance(1); // 45
    expect(ran.get('d')).toEqual([45]);
    expect(ran.has('a') || ran.has('c')).toBe(false);
    expect(clock.pendingTimers()).toBe(0);

    // Both queues with live entries, every entry cancelled: their timers go once the I/O was read.
    const e = arm('e', 40); // the latest queue (delay 40) again
    expect(e.queue).toBe(c.queue);
    const f = arm('f', 55); // a new queue
    expect(clock.pendingTimers()).toBe(2);
    e.queue.cancel(e.handle);
    f.queue.cancel(f.handle);
    clock.advance(0); // the idle checks run (afterIo)
    expect(clock.pendingTimers()).toBe(0);
    clock.advance(1_000);
    expect(ran.has('e') || ran.has('f')).toBe(false);
    // A cancel after the entry ran, or twice, is a no-op.
    b.queue.cancel(b.handle);
    d.queue.cancel(d.handle);
    f.queue.cancel(f.handle);
    expect(clock.pendingTimers()).toBe(0);
  });

  it('every entry not cancelled runs exactly once, at its instant, whichever queue it went to; a cancelled one never (property)', () => {
    const DELAYS = [10, 25, 25.5, 40] as const;
    type Step =
      | { readonly op: 'advance'; readonly ms: number }
      | { readonly op: 'arm'; readonly delay: number; readonly chain: number | undefined }
      | { readonly op: 'cancel'; readonly pick: number };
    const step: fc.Arbitrary<Step> = fc.oneof(
      fc.record({
        op: fc.constant('advance' as const),
        ms: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 60 })),
      }),
      fc.record({
        op: fc.constant('arm' as const),
        delay: fc.constantFrom(...DELAYS),
        chain: fc.option(fc.constantFrom(...DELAYS), { nil: undefined }),
      }),
      fc.record({ op: fc.constant('cancel' as const), pick: fc.nat() }),
    );
    fc.assert(
      fc.property(fc.array(step, { maxLength: 60 }), (steps) => {
        const clock = new FakeClock({ now: 500 });
        const queues = new TimerQueues(clock);
        interface Entry {
          readonly due: number;
          readonly queue: TimerQueue;
          readonly handle: number;
          readonly ran: number[];
          cancelled: boolean;
        }
        const entries: Entry[] = [];
        const arm = (delay: number, chain: number | undefined): void => {
          const queue = queues.of(delay);
          expect(queue.delayMs).toBe(delay);
          const ran: number[] = [];
          const handle = queue.add(
            bound(() => {
              ran.push(clock.now());
              // A callback arming another entry (maybe of another delay: a new queue) while its queue fires.
              if (chain !== undefined) arm(chain, undefined);
            }),
            clock.now(),
          );
          entries.push({ due: clock.now() + delay, queue, handle, ran, cancelled: false });
        };
        const check = (): void => {
          const now = clock.now();
          for (const e of entries) {
            if (e.cancelled) expect(e.ran).toEqual([]);
            else if (e.due <= now)
              expect(e.ran).toEqual([e.due]); // not later than its instant, once
            else expect(e.ran).toEqual([]); // not before
          }
        };
        for (const s of steps) {
          if (s.op === 'advance') clock.advance(s.ms);
          else if (s.op === 'arm') arm(s.delay, s.chain);
          else if (entries.length > 0) {
            const e = entries[s.pick % entries.length]!;
            e.queue.cancel(e.handle); // a no-op when it ran or was cancelled already
            if (e.ran.length === 0) e.cancelled = true;
          }
          check();
          // Never more clock timers than queues holding live entries (+ the ones waiting for their idle check).
          expect(clock.pendingTimers()).toBeLessThanOrEqual(new Set(entries.map((e) => e.queue)).size);
        }
        clock.advance(1_000);
        check();
        expect(entries.filter((e) => !e.cancelled).every((e) => e.ran.length === 1)).toBe(true);
        expect(clock.pendingTimers()).toBe(0);
      }),
      { numRuns: 500 },
    );
  });
});
