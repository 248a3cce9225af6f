import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type OpenCall, OpenCalls } from './plan.js';

function call(id: number): OpenCall & { readonly id: number } {
  return { id, wrapUp() {}, end() {}, openPrev: undefined, openNext: undefined };
}

describe('OpenCalls (a client’s calls not answered yet, for close() and destroy())', () => {
  it('holds exactly what a Set would, whatever the order of joins and leaves (a call left twice, or never joined, included)', () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.boolean(), fc.integer({ min: 0, max: 7 })), { maxLength: 60 }),
        (steps) => {
          const calls = Array.from({ length: 8 }, (_, i) => call(i));
          const list = new OpenCalls();
          const model = new Set<number>();
          for (const [join, i] of steps) {
            if (join && !model.has(i)) {
              list.add(calls[i]!);
              model.add(i);
            } else if (!join) {
              list.delete(calls[i]!);
              model.delete(i);
            }
            const held = list.list().map((c) => (c as ReturnType<typeof call>).id);
            expect(new Set(held)).toEqual(model);
            expect(held).toHaveLength(model.size); // no call twice, none lost
          }
          // A call out of the list keeps no link to the others (nothing is kept alive through it).
          for (const c of calls)
            if (!model.has(c.id)) expect([c.openPrev, c.openNext]).toEqual([undefined, undefined]);
        },
      ),
      { numRuns: 500 },
    );
  });

  it('a call may end while the list is walked (list() is a copy)', () => {
    const list = new OpenCalls();
    const calls = [call(0), call(1), call(2)];
    for (const c of calls) list.add(c);
    const seen: number[] = [];
    for (const c of list.list()) {
      seen.push((c as ReturnType<typeof call>).id);
      list.delete(c);
    }
    expect(seen.sort()).toEqual([0, 1, 2]);
    expect(list.list()).toEqual([]);
  });
});
