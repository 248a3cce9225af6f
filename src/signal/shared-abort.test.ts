import { getEventListeners } from 'node:events';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { subscribeAbort, unsubscribeAbort } from './shared-abort.js';

describe('shared abort fan-out', () => {
  it('puts one real listener on a signal however many calls subscribe, and removes it after the last', () => {
    const controller = new AbortController();
    const subs = Array.from({ length: 100 }, () => () => {});
    for (const s of subs) subscribeAbort(controller.signal, s);
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(1);
    for (const s of subs) unsubscribeAbort(controller.signal, s);
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
  });

  it('calls every subscribed listener once on abort, not the unsubscribed ones', () => {
    const controller = new AbortController();
    const calls: number[] = [];
    const a = () => calls.push(1);
    const b = () => calls.push(2);
    const c = () => calls.push(3);
    subscribeAbort(controller.signal, a);
    subscribeAbort(controller.signal, b);
    subscribeAbort(controller.signal, c);
    unsubscribeAbort(controller.signal, b);
    controller.abort();
    controller.abort();
    expect(calls).toEqual([1, 3]);
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
    unsubscribeAbort(controller.signal, a); // after the fact: a no-op
  });

  it('keeps going when one listener throws, and reports the error asynchronously', async () => {
    const controller = new AbortController();
    const seen: string[] = [];
    const errors: unknown[] = [];
    const onError = (e: unknown) => errors.push(e);
    process.prependListener('uncaughtException', onError);
    subscribeAbort(controller.signal, () => {
      throw new Error('listener failed');
    });
    subscribeAbort(controller.signal, () => seen.push('second'));
    controller.abort();
    await new Promise((r) => setImmediate(r));
    process.off('uncaughtException', onError);
    expect(seen).toEqual(['second']);
    expect(errors).toHaveLength(1);
  });

  it('property: after any interleaving of subscribe/unsubscribe, the real listener count is 0 or 1', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.boolean(), fc.nat(9)), { maxLength: 200 }), (ops) => {
        const controller = new AbortController();
        const fns = Array.from({ length: 10 }, () => () => {});
        const live = new Set<number>();
        for (const [add, i] of ops) {
          if (add) {
            subscribeAbort(controller.signal, fns[i]!);
            live.add(i);
          } else {
            unsubscribeAbort(controller.signal, fns[i]!);
            live.delete(i);
          }
          expect(getEventListeners(controller.signal, 'abort')).toHaveLength(live.size > 0 ? 1 : 0);
        }
      }),
      { numRuns: 500 },
    );
  });
});
