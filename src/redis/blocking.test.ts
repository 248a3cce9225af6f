import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { askedMs, blockAsked, boundBlocking, serverBlockMs, shareBlock } from './blocking.js';

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

/**
 * The timeout argument read by Redis's own grammar (SPEC D7): what the server refuses is left for it
 * to refuse, never rewritten into a block it takes. Checked against a real redis-server in
 * test/reliability/attacks/rpc-stores.test.ts.
 */
describe('askedMs', () => {
  const refusedMs = [
    '',
    ' 5',
    '5 ',
    ' 5 ',
    '0x10',
    '1e3',
    '5.0',
    '+5',
    '-5',
    '-0',
    '007',
    '5\0',
    '١٢',
    'NaN',
  ];
  const refusedSeconds = [
    '',
    ' 5',
    '5 ',
    '\t5',
    '5\n',
    'inf',
    '-inf',
    'Infinity',
    'nan',
    '0x',
    '1e',
    '5\0',
    '1,5',
  ];

  it('a BLOCK or WAIT timeout is an integer as string2ll reads it: no space, sign, fraction, exponent nor hex', () => {
    expect(askedMs('5000', 'ms')).toBe(5_000);
    expect(askedMs(250, 'ms')).toBe(250);
    expect(askedMs(Buffer.from('250'), 'ms')).toBe(250);
    expect(askedMs('0', 'ms')).toBe(Number.POSITIVE_INFINITY);
    expect(askedMs('9223372036854775807', 'ms')).toBe(2 ** 63); // 2^63 − 1: the largest it reads
    expect(askedMs('9223372036854775808', 'ms')).toBeNaN();
    expect(askedMs(1e21, 'ms')).toBeNaN(); // sent as "1e+21"
    for (const text of refusedMs) expect(askedMs(text, 'ms'), JSON.stringify(text)).toBeNaN();
  });

  it('a BLPOP-style timeout is a float as strtold reads it, in seconds, rounded up to whole ms', () => {
    const cases: Array<[string, number]> = [
      ['1', 1_000],
      ['0.1', 100],
      ['2.007', 2_007],
      ['0.0015', 2],
      ['0.0001', 1],
      ['+5', 5_000],
      ['.5', 500],
      ['5.', 5_000],
      ['007', 7_000],
      ['1e1', 10_000],
      ['1E-1', 100],
      ['0x10', 16_000],
      ['0x1p-3', 125],
      ['0X.8', 500],
      ['1e-400', 1], // too small for a double, not for Redis's long double
      ['9223372036854775', 9_223_372_036_854_775_000],
    ];
    for (const [text, ms] of cases) expect(askedMs(text, 's'), text).toBe(ms);
    // "forever": 0, and anything in (−1 ms, 0] (Redis rounds −0.1 ms up to 0)
    for (const text of ['0', '-0', '0.0', '0e999', '-0.0001', '-1e-400', '0x0p0'])
      expect(askedMs(text, 's'), text).toBe(Number.POSITIVE_INFINITY);
    for (const text of [...refusedSeconds, '-1', '-0.001', '1e-5000', '9223372036854776', '1e400', '0x1p64'])
      expect(askedMs(text, 's'), JSON.stringify(text)).toBeNaN();
    expect(askedMs(`${'0'.repeat(5_118)}1`, 's')).toBe(1_000); // 5119 bytes: Redis's longest
    expect(askedMs(`${'0'.repeat(5_119)}1`, 's')).toBeNaN();
  });

  // Was a defect (fixed): `BLOCK ''` was read by Number() as 0 ("forever") and rewritten into
  // `BLOCK 250`, which Redis takes, where it refuses `BLOCK ''`; so were ' 5 ', '1e3' and the like.
  it('a timeout Redis refuses is left as given, never rewritten into one it takes', () => {
    for (const text of refusedMs) {
      const xread = ['BLOCK', text, 'STREAMS', 's', '$'];
      expect(boundBlocking('XREAD', xread, 250).args, JSON.stringify(text)).toEqual(xread);
      expect(boundBlocking('WAIT', [1, text], 250).args).toEqual([1, text]);
    }
    for (const text of refusedSeconds)
      expect(boundBlocking('BLPOP', ['k', text], 250).args, JSON.stringify(text)).toEqual(['k', text]);
  });

  it('property: a block written in any form Redis takes reads back as itself; with spaces or junk around it, refused and left as given', () => {
    const space = fc.constantFrom(' ', '\t', '\n', '\r', '\v', '\f', '\0');
    // Around an integer in ms, even "+", "-", "." and "e" spoil it; around seconds only what no float has.
    const msJunk = fc.oneof(space, fc.constantFrom('x', ',', '_', 'ms', '.', 'e', '+', '-', '0x'));
    const secondsJunk = fc.oneof(space, fc.constantFrom('x', ',', '_', 's', 'ms', 'sec'));
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 2 ** 43 }),
        fc.constantFrom('fixed', 'exponent', 'plus', 'zeros', 'shortest'),
        fc.tuple(msJunk, secondsJunk),
        fc.boolean(),
        (ms, form, [junk, secondsJunk], before) => {
          expect(askedMs(String(ms), 'ms')).toBe(ms);
          expect(askedMs(Buffer.from(String(ms)), 'ms')).toBe(ms);
          const fixed = (ms / 1000).toFixed(3);
          const seconds = {
            fixed,
            exponent: `${ms}e-3`,
            plus: `+${fixed}`,
            zeros: `00${fixed}000`,
            shortest: String(ms / 1000), // the shortest text of a double: within the ms
          }[form];
          const read = askedMs(seconds, 's');
          if (form === 'shortest') expect(Math.abs(read - ms)).toBeLessThanOrEqual(1);
          else expect(read).toBe(ms);
          const spoil = (text: string, extra: string) => (before ? extra + text : text + extra);
          const badMs = spoil(String(ms), junk);
          expect(askedMs(badMs, 'ms')).toBeNaN();
          const xread = ['BLOCK', badMs, 'STREAMS', 's', '$'];
          expect(boundBlocking('XREAD', xread, 1).args).toEqual(xread);
          const badSeconds = spoil(seconds, secondsJunk);
          expect(askedMs(badSeconds, 's')).toBeNaN();
          expect(boundBlocking('BLPOP', ['k', badSeconds], 1).args).toEqual(['k', badSeconds]);
        },
      ),
    );
  });

  it('property: any text reads as NaN (left as given), "forever" or a whole number of ms from 1 up; never throws', () => {
    const text = fc.oneof(
      fc.string({ unit: fc.constantFrom(...'0123456789+-.eExXpPabcfinINF \t\0'), maxLength: 12 }),
      fc.string(),
    );
    fc.assert(
      fc.property(
        text,
        fc.constantFrom<'ms' | 's'>('ms', 's'),
        fc.integer({ min: 1, max: 10_000 }),
        (t, unit, blockMs) => {
          const ms = askedMs(t, unit);
          expect(
            Number.isNaN(ms) || ms === Number.POSITIVE_INFINITY || (Number.isInteger(ms) && ms >= 1),
          ).toBe(true);
          const args = unit === 'ms' ? [1, t] : ['k', t];
          const bounded = boundBlocking(unit === 'ms' ? 'WAIT' : 'BLPOP', args, blockMs);
          if (Number.isNaN(ms) || ms <= blockMs) expect(bounded.args).toEqual(args);
          else expect(askedMs(bounded.args[1], unit)).toBe(blockMs);
        },
      ),
    );
  });
});
