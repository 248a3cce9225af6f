import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { blockAsked, boundBlocking, serverBlockMs, shareBlock } from './blocking.js';

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
        fc.oneof(fc.double({ noNaN: true }), fc.double({ min: 0, max: 2 ** 44, noNaN: true })),
        fc.double({ min: 0, max: 10_000, noNaN: true }),
        (left, margin) => {
          const ms = serverBlockMs(left, margin);
          const bounded = boundBlocking('BLPOP', ['k', 0], ms);
          if (ms === Number.POSITIVE_INFINITY) {
            // endless for any purpose (~278 years and more): the command's own timeout stands
            expect(left - margin).toBeGreaterThan(2 ** 43);
            expect(bounded.args).toEqual(['k', 0]);
            return;
          }
          expect(ms).toBeGreaterThanOrEqual(1);
          expect(Number.isInteger(ms)).toBe(true);
          // the seconds written, read back as the exact decimal they are
          expect(Math.round(Number(bounded.args[1]) * 1000)).toBeLessThanOrEqual(ms);
        },
      ),
    );
  });

  it("a deadline weeks away is the block as it is, not cut at a timer's 24.8 days; an endless one bounds nothing (SPEC D7)", () => {
    const thirtyDays = 30 * 86_400_000;
    expect(serverBlockMs(thirtyDays, 100)).toBe(thirtyDays - 100);
    expect(boundBlocking('BLPOP', ['k', 0], serverBlockMs(thirtyDays, 100)).args).toEqual([
      'k',
      '2591999.900',
    ]);
    expect(boundBlocking('XREAD', ['BLOCK', 0, 'STREAMS', 's', '$'], thirtyDays - 100).args[1]).toBe(
      '2591999900',
    );
    expect(serverBlockMs(Number.POSITIVE_INFINITY, 100)).toBe(Number.POSITIVE_INFINITY);
    expect(boundBlocking('WAIT', [1, 0], Number.POSITIVE_INFINITY).args).toEqual([1, 0]);
    expect(shareBlock([Number.POSITIVE_INFINITY, 5_000], Number.POSITIVE_INFINITY)).toEqual([
      Number.POSITIVE_INFINITY,
      Number.POSITIVE_INFINITY,
    ]);
  });

  it('XREAD/XREADGROUP: the options read as the server reads them, up to STREAMS (SPEC D7)', () => {
    // A group named "streams", a consumer named "block", a COUNT value reading "block": never the option.
    expect(
      boundBlocking('XREADGROUP', ['GROUP', 'streams', 'block', 'BLOCK', 0, 'STREAMS', 's', '>'], 300).args,
    ).toEqual(['GROUP', 'streams', 'block', 'BLOCK', '300', 'STREAMS', 's', '>']);
    expect(
      boundBlocking(
        'xreadgroup',
        ['group', 'g', 'c', 'count', 1, 'block', 0, 'noack', 'streams', 's', '>'],
        30,
      ).args[6],
    ).toBe('30');
    // GROUP may stand after the options; CLAIM (8.4), MAXCOUNT/MAXSIZE take one value each.
    expect(
      boundBlocking('XREADGROUP', ['CLAIM', 'block', 'BLOCK', 0, 'GROUP', 'g', 'c', 'STREAMS', 's', '>'], 9)
        .args,
    ).toEqual(['CLAIM', 'block', 'BLOCK', '9', 'GROUP', 'g', 'c', 'STREAMS', 's', '>']);
    expect(
      blockAsked('XREADGROUP', ['MAXCOUNT', 5, 'MAXSIZE', 9, 'GROUP', 'g', 'c', 'STREAMS', 's', '>']),
    ).toBe(undefined);
    // The server keeps the last BLOCK of two.
    expect(boundBlocking('XREAD', ['BLOCK', 5, 'BLOCK', 0, 'STREAMS', 's', '$'], 50).args).toEqual([
      'BLOCK',
      5,
      'BLOCK',
      '50',
      'STREAMS',
      's',
      '$',
    ]);
    // No STREAMS <key> <id>, a BLOCK with no value: refused by the server, nothing rewritten.
    for (const [cmd, args] of [
      ['XREAD', ['BLOCK', 0]],
      ['XREAD', ['BLOCK', 0, 'STREAMS']],
      ['XREAD', ['STREAMS', 's', '$', 'BLOCK']],
    ] as const) {
      expect(boundBlocking(cmd, args, 10), JSON.stringify(args)).toEqual({ args, blocking: false });
    }
  });

  it('an option it does not know (a later Redis): the BLOCK behind it is still bounded, no key or id rewritten (SPEC D7)', () => {
    // The option's values cannot be skipped with certainty: the BLOCK is found by scanning for the
    // last "block" followed by ms, before the first "streams" followed by as many ids as keys.
    expect(
      boundBlocking('XREADGROUP', ['GROUP', 'g', 'c', 'LATER', 'BLOCK', 0, 'STREAMS', 's', '>'], 10).args,
    ).toEqual(['GROUP', 'g', 'c', 'LATER', 'BLOCK', '10', 'STREAMS', 's', '>']);
    expect(boundBlocking('XREAD', ['LATER', 7, 'x', 'block', '0', 'STREAMS', 's', '$'], 10)).toEqual({
      args: ['LATER', 7, 'x', 'block', '10', 'STREAMS', 's', '$'],
      blocking: true,
    });
    // A BLOCK read before the unknown option stands, unless a later one follows (the server keeps the last).
    expect(boundBlocking('XREAD', ['BLOCK', 0, 'LATER', 'STREAMS', 's', '$'], 10).args[1]).toBe('10');
    expect(boundBlocking('XREAD', ['BLOCK', 0, 'LATER', 'BLOCK', 0, 'STREAMS', 's', '$'], 10).args).toEqual([
      'BLOCK',
      0,
      'LATER',
      'BLOCK',
      '10',
      'STREAMS',
      's',
      '$',
    ]);
    expect(blockAsked('XREAD', ['LATER', 'BLOCK', 5_000, 'STREAMS', 's', '$'])).toBe(5_000);
    // An option value "streams" with an odd rest is not the STREAMS; keys and ids named block/0 never move.
    expect(
      boundBlocking('XREAD', ['LATER', 'streams', 'BLOCK', 0, 'STREAMS', 'block', 'k', '0', '$'], 10).args,
    ).toEqual(['LATER', 'streams', 'BLOCK', '10', 'STREAMS', 'block', 'k', '0', '$']);
    expect(boundBlocking('XREAD', ['LATER', 'STREAMS', 'block', '0', '0', '0'], 10)).toEqual({
      args: ['LATER', 'STREAMS', 'block', '0', '0', '0'],
      blocking: false,
    });
    // Refused by the server in any version (GROUP/NOACK in XREAD): bounding it changes nothing.
    expect(boundBlocking('XREAD', ['NOACK', 'BLOCK', 0, 'STREAMS', 's', '$'], 10).args[2]).toBe('10');
    // No BLOCK anywhere, or none with a value in ms, or no STREAMS <key> <id>: nothing to bound.
    for (const args of [
      ['LATER', 'STREAMS', 's', '$'],
      ['LATER', 'BLOCK', 'soon', 'STREAMS', 's', '$'],
      ['LATER', 'BLOCK', 0, 'STREAMS'],
      ['LATER', 'BLOCK', 0],
    ]) {
      expect(boundBlocking('XREAD', args, 10), JSON.stringify(args)).toEqual({ args, blocking: false });
    }
  });

  it('property: a group, consumer, option value or key equal to a keyword (any case) never fools XREAD/XREADGROUP', () => {
    const keyword = fc
      .constantFrom('streams', 'block', 'group', 'count', 'noack', 'claim', 'maxcount', 'maxsize', '0', 'x')
      .chain((k) =>
        fc
          .array(fc.boolean(), { minLength: k.length, maxLength: k.length })
          .map((up) => [...k].map((ch, i) => (up[i] ? ch.toUpperCase() : ch)).join('')),
      );
    const name = fc.oneof(keyword, fc.string());
    const cased = (k: string) => fc.constantFrom(k, k.toUpperCase(), k[0]!.toUpperCase() + k.slice(1));
    // One option, as [tokens, is it the BLOCK].
    const option = fc.oneof(
      fc
        .tuple(cased('count'), fc.oneof(name, fc.nat().map(String)))
        .map((t) => ({ tokens: t, block: false })),
      fc.tuple(cased('claim'), name).map((t) => ({ tokens: t, block: false })),
      fc.tuple(cased('maxsize'), name).map((t) => ({ tokens: t, block: false })),
      cased('noack').map((t) => ({ tokens: [t], block: false, group: true })),
    );
    fc.assert(
      fc.property(
        fc.boolean(),
        fc.tuple(name, name),
        fc.array(option, { maxLength: 4 }),
        fc.nat({ max: 4 }),
        fc.nat({ max: 4 }),
        fc.option(fc.integer({ min: 0, max: 100_000 }), { nil: undefined }),
        fc.array(name, { minLength: 1, maxLength: 3 }),
        fc.integer({ min: 1, max: 50_000 }),
        (group, [g, c], options, groupAt, blockAt, asked, keys, blockMs) => {
          const opts = options.filter((o) => group || !('group' in o));
          const parts: Array<readonly (string | number)[]> = opts.map((o) => o.tokens);
          if (asked !== undefined) parts.splice(Math.min(blockAt, parts.length), 0, ['BLOCK', asked]);
          if (group) parts.splice(Math.min(groupAt, parts.length), 0, ['GROUP', g, c]);
          const args = [...parts.flat(), 'STREAMS', ...keys, ...keys.map(() => '>')];
          const command = group ? 'XREADGROUP' : 'XREAD';
          const bounded = boundBlocking(command, args, blockMs);
          expect(bounded.blocking).toBe(asked !== undefined);
          const at = args.indexOf(asked as number); // the one number-typed BLOCK value
          const expected = [...args];
          if (asked !== undefined && (asked === 0 || asked > blockMs)) expected[at] = String(blockMs);
          expect(bounded.args).toEqual(expected);
        },
      ),
    );
  });
});

/** The blocks of one exchange run one after the other on the server: they share its budget (SPEC D7). */
describe('shareBlock', () => {
  it('alone, the whole budget; two forever ones, half each; a shorter one keeps its own, the rest to the other', () => {
    expect(shareBlock([Number.POSITIVE_INFINITY], 700)).toEqual([700]);
    expect(shareBlock([Number.POSITIVE_INFINITY, Number.POSITIVE_INFINITY], 701)).toEqual([350, 351]); // the odd ms to the last
    expect(shareBlock([Number.POSITIVE_INFINITY, 100], 700)).toEqual([600, 350]); // the second keeps 100
    expect(shareBlock([Number.NaN, Number.POSITIVE_INFINITY], 700)).toEqual([350, 700]); // NaN: refused, no block
    expect(
      shareBlock([Number.POSITIVE_INFINITY, Number.POSITIVE_INFINITY, Number.POSITIVE_INFINITY], 2),
    ).toEqual([1, 1, 1]); // the protocol's minimum: 0 would be "forever"
    expect(shareBlock([], 700)).toEqual([]);
  });

  it('property: the blocks as bounded fit in the budget (or 1 ms each), and none exceeds what it asked', () => {
    const ask = fc.oneof(
      fc.constant(Number.POSITIVE_INFINITY),
      fc.constant(Number.NaN),
      fc.double({ min: 0.001, max: 100_000, noNaN: true }),
    );
    fc.assert(
      fc.property(
        fc.array(ask, { maxLength: 8 }),
        fc.integer({ min: 1, max: 2 ** 31 - 1 }),
        (asked, budget) => {
          const shares = shareBlock(asked, budget);
          expect(shares).toHaveLength(asked.length);
          const spent = asked.map((a, i) => {
            const s = shares[i]!;
            expect(Number.isInteger(s) && s >= 1).toBe(true);
            return Number.isNaN(a) ? 0 : Math.min(a, s);
          });
          const total = spent.reduce((x, y) => x + y, 0);
          expect(total).toBeLessThanOrEqual(Math.max(budget, asked.length) + 1e-6);
          if (asked.length === 1) expect(shares[0]).toBe(budget);
        },
      ),
    );
  });
});
