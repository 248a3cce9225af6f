import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { FakeClock } from './fake.js';
import { ON_DUE, type QueuedBound, TimerQueue } from './timer-queue.js';

/** A queued bound that runs `fn`. */
const bound = (fn: () => unknown): QueuedBound => ({ [ON_DUE]: () => void fn() });

describe('TimerQueue: timers of one delay behind one clock timer', () => {
  it('runs each entry once at its own due instant, in arming order, with one clock timer', () => {
    const clock = new FakeClock();
    const queue = new TimerQueue(clock, 100);
    const ran: string[] = [];
    queue.add(
      bound(() => ran.push(`a@${clock.now()}`)),
      clock.now(),
    );
    clock.advance(30);
    queue.add(
      bound(() => ran.push(`b@${clock.now()}`)),
      clock.now(),
    );
    queue.add(
      bound(() => ran.push(`c@${clock.now()}`)),
      clock.now(),
    );
    expect(clock.pendingTimers()).toBe(1);
    clock.advance(69);
    expect(ran).toEqual([]);
    clock.advance(1);
    expect(ran).toEqual(['a@100']);
    clock.advance(30);
    expect(ran).toEqual(['a@100', 'b@130', 'c@130']);
    expect(clock.pendingTimers()).toBe(0);
  });

  it('never runs a cancelled entry, and holds no timer once nothing is left', () => {
    const clock = new FakeClock();
    const queue = new TimerQueue(clock, 50);
    let ran = 0;
    const a = queue.add(
      bound(() => ran++),
      0,
    );
    const b = queue.add(
      bound(() => ran++),
      0,
    );
    queue.cancel(a);
    expect(clock.pendingTimers()).toBe(1);
    queue.cancel(b);
    expect(clock.pendingTimers()).toBe(1); // kept until the pending I/O is read: the next call may reuse it
    clock.advance(0);
    expect(clock.pendingTimers()).toBe(0);
    queue.cancel(b); // twice: a no-op
    clock.advance(100);
    expect(ran).toBe(0);
  });

  it('an entry armed or cancelled by a running one waits its turn (property)', () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.record({ gap: fc.integer({ min: 0, max: 120 }), cancel: fc.boolean(), chain: fc.boolean() }),
          { maxLength: 40 },
        ),
        (steps) => {
          const clock = new FakeClock();
          const queue = new TimerQueue(clock, 100);
          const expected = new Map<number, number>(); // id → due
          const ran = new Map<number, number>();
          let next = 0;
          const arm = (chain: boolean): number => {
            const id = next++;
            expected.set(id, clock.now() + 100);
            const handle = queue.add(
              bound(() => {
                ran.set(id, clock.now());
                if (chain) arm(false); // armed from inside a callback
              }),
              clock.now(),
            );
            return handle * 1_000 + id;
          };
          const handles: number[] = [];
          for (const step of steps) {
            clock.advance(step.gap);
            handles.push(arm(step.chain));
            if (step.cancel && handles.length > 1) {
              const victim = handles[Math.floor(handles.length / 2)]!;
              const id = victim % 1_000;
              if (!ran.has(id)) {
                queue.cancel(Math.floor(victim / 1_000));
                expected.delete(id);
              }
            }
            expect(clock.pendingTimers()).toBeLessThanOrEqual(1);
          }
          clock.advance(10_000);
          expect(clock.pendingTimers()).toBe(0);
          expect([...ran.entries()].sort((x, y) => x[0] - y[0])).toEqual(
            [...expected.entries()].sort((x, y) => x[0] - y[0]),
          );
        },
      ),
      { numRuns: 300 },
    );
  });
});
