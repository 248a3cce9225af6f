import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { boundBlocking, serverBlockMs } from './blocking.js';

/** The server-side block of each blocking command, bounded by the deadline (SPEC D7, #17 item 2). */
describe('boundBlocking', () => {
  it('rewrites the timeout where each command keeps it, in its unit', () => {
    expect(boundBlocking('BLPOP', ['a', 'b', 10], 275)).toEqual({
      args: ['a', 'b', '0.275'],
      blocking: true,
    });
    expect(boundBlocking('brpop', ['a', '0'], 275).args).toEqual(['a', '0.275']); // 0 = forever
    expect(boundBlocking('BLMOVE', ['a', 'b', 'LEFT', 'RIGHT', 5], 1_000).args.at(-1)).toBe('1.000');
    expect(boundBlocking('BZMPOP', [30, 1, 'z', 'MIN'], 500).args).toEqual(['0.500', 1, 'z', 'MIN']);
    expect(boundBlocking('WAIT', [1, 0], 300).args).toEqual([1, '300']);
    expect(boundBlocking('XREAD', ['COUNT', 1, 'BLOCK', 10_000, 'STREAMS', 's', '$'], 250).args).toEqual([
      'COUNT',
      1,
      'BLOCK',
      '250',
      'STREAMS',
      's',
      '$',
    ]);
  });

  it('keeps a shorter block, an unreadable one (the server refuses it), and everything non-blocking', () => {
    expect(boundBlocking('BLPOP', ['a', 0.1], 275)).toEqual({ args: ['a', 0.1], blocking: true });
    expect(boundBlocking('BLPOP', ['a', 'soon'], 275).args).toEqual(['a', 'soon']);
    expect(boundBlocking('XREAD', ['STREAMS', 'block', '0'], 250)).toEqual({
      args: ['STREAMS', 'block', '0'],
      blocking: false,
    }); // a stream named "block" is not the option
    expect(boundBlocking('GET', ['k'], 10)).toEqual({ args: ['k'], blocking: false });
    expect(boundBlocking('BLPOP', [], 10)).toEqual({ args: [], blocking: false });
  });

  it('property: the bounded block never exceeds the time given, never goes below 1 ms', () => {
    fc.assert(
      fc.property(
        fc.double({ noNaN: true }),
        fc.double({ min: 0, max: 10_000, noNaN: true }),
        (left, margin) => {
          const ms = serverBlockMs(left, margin);
          expect(ms).toBeGreaterThanOrEqual(1);
          expect(Number.isInteger(ms)).toBe(true);
          const bounded = boundBlocking('BLPOP', ['k', 0], ms);
          expect(Number(bounded.args[1]) * 1000).toBeLessThanOrEqual(ms + 1e-6);
        },
      ),
    );
  });
});
