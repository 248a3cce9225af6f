import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { RE2JS } from 're2js';
import { describe, expect, it } from 'vitest';
import { readOptions } from '../options/validator.js';
import { hasPromtool, promtoolDir } from '../rules/promql.test-helpers.js';
import { PROMETHEUS_SERIES_OPTIONS } from './options.js';
import { parseSelector, quote, selector, successMatcher } from './promql.js';
import { re2Problem } from './re2.js';

/**
 * The regex of a `=~`/`!~` matcher is judged by RE2's grammar as Go reads it (SPEC X8: the selector
 * of `histogram.prometheus` is sent to Prometheus and written into rule files). The reference is
 * re2js (RE2/J's port); where it and Go differ, the corners are named below and Go wins.
 */

/** re2js' verdict: undefined when it compiles, else its message. */
function re2js(pattern: string): string | undefined {
  try {
    RE2JS.compile(pattern);
    return undefined;
  } catch (error) {
    return (error as Error).message;
  }
}

describe('RE2 syntax of Prometheus regex matchers', () => {
  it('accepts what RE2 accepts and JavaScript refuses', () => {
    for (const pattern of [
      '(?i)x',
      '(?P<n>x)',
      'a\\z',
      '\\Qa.b*\\E',
      '[[:alpha:]]',
      '\\pL',
      '\\p{Greek}',
      'x(?i)*',
      '^*',
    ]) {
      expect(() => new RegExp(pattern, 'u'), pattern).toThrow();
      expect(re2Problem(pattern), pattern).toBeUndefined();
      expect(re2js(pattern), pattern).toBeUndefined();
    }
  });

  it('refuses what RE2 refuses and JavaScript accepts', () => {
    const refused: Record<string, string> = {
      '(?=a)': 'invalid or unsupported Perl syntax: `(?=`',
      '(?!a)': 'invalid or unsupported Perl syntax: `(?!`',
      '(?<=a)b': 'invalid or unsupported Perl syntax: `(?<`',
      '(?<!a)b': 'invalid or unsupported Perl syntax: `(?<`',
      '(a)\\1': 'invalid escape sequence: `\\1`',
      '(?<n>a)\\k<n>': 'invalid or unsupported Perl syntax: `(?<`',
      'a{1001}': 'invalid repeat count: `{1001}`',
      '(a{11}){100}': 'invalid repeat count: `{100}`',
      'a*+': 'invalid nested repetition operator: `*+`',
      'a++': 'invalid nested repetition operator: `++`',
      'a{2}*': 'invalid nested repetition operator: `{2}*`',
      '\\u0041': 'invalid escape sequence: `\\u`',
      '[\\b]': 'invalid escape sequence: `\\b`',
      '\\cA': 'invalid escape sequence: `\\c`',
    };
    const jsRefusesToo = new Set(['a*+', 'a++', 'a{2}*']);
    for (const [pattern, problem] of Object.entries(refused)) {
      if (!jsRefusesToo.has(pattern)) expect(() => new RegExp(pattern), pattern).not.toThrow();
      expect(re2Problem(pattern), pattern).toBe(problem);
      expect(re2js(pattern), pattern).toBeDefined();
    }
  });

  it('refuses what both refuse, in the words Go uses', () => {
    expect(re2Problem('(')).toBe('missing closing ): `(`');
    expect(re2Problem('a)')).toBe('unexpected ): `a)`');
    expect(re2Problem('[a')).toBe('missing closing ]: `[a`');
    expect(re2Problem('*a')).toBe('missing argument to repetition operator: `*`');
    expect(re2Problem('a\\')).toBe('trailing backslash at end of expression');
    expect(re2Problem('[z-a]')).toBe('invalid character class range: `z-a`');
    // Go's limits: a thousand levels of nesting, about 3.3 million compiled instructions.
    expect(re2Problem(`${'('.repeat(1001)}${')'.repeat(1001)}`)).toBe('expression nests too deeply');
    expect(re2Problem(`${'('.repeat(999)}${')'.repeat(999)}`)).toBeUndefined();
    expect(re2Problem(`(${'a'.repeat(3400)}){1000}`)).toBe('expression too large');
  });

  it('Go, not RE2/J, where they differ (the documented corners)', () => {
    // Go accepts a capture name given twice (Regexp.SubexpIndex documents it); RE2/J refuses.
    expect(re2Problem('(?P<x>a)(?P<x>b)')).toBeUndefined();
    expect(re2js('(?P<x>a)(?P<x>b)')).toMatch(/duplicate capture group name/);
    // RE2/J counts a compiled program larger than Go does: 1000 × 3002 instructions fit Go's limit.
    expect(re2Problem(`(${'a'.repeat(3000)}){1000}`)).toBeUndefined();
    expect(re2js(`(${'a'.repeat(3000)}){1000}`)).toMatch(/expression too large/);
    // Go has no binary properties in \p; RE2/J has (Emoji, White_Space...).
    expect(re2Problem('\\p{Emoji}')).toBe('invalid character class range: `\\p{Emoji}`');
    expect(re2js('\\p{Emoji}')).toBeUndefined();
    // Accepted by recent Go only, refused by the Go of Prometheus 2.x: kept out, portable spellings exist.
    for (const pattern of ['(?<n>x)', '\\p{Cn}', '\\p{LC}', '\\p{Toto}', '\\p{Kawi}']) {
      expect(re2Problem(pattern), pattern).toBeDefined();
      expect(re2js(pattern), pattern).toBeUndefined();
    }
  });

  /** Pieces of RE2's grammar and near misses; a pattern is any string of them. */
  const TOKENS = [
    ...['a', 'Z', '0', '7', 'é', '\u{1F600}', ' ', '-', ':', '<', '>', '=', '!', ',', '^', '$', '.', '|'],
    ...[
      '(',
      ')',
      '(?:',
      '(?i)',
      '(?i-s:',
      '(?-)',
      '(?',
      '(?P<n>',
      '(?P<',
      '(?P=n)',
      '(?=',
      '(?!',
      '(?<=',
      '(?#',
    ],
    ...[
      '*',
      '+',
      '?',
      '*?',
      '{',
      '}',
      '{2}',
      '{0}',
      '{1,3}',
      '{,2}',
      '{2,}',
      '{10}',
      '{100}',
      '{500}',
      '{1000}',
    ],
    ...['{1001}', '{3,2}', '{01}', '[', ']', '[^', '[:alpha:]', '[:^digit:]', '[:nope:]', '[[:word:]]'],
    ...[
      '\\',
      '\\d',
      '\\W',
      '\\s',
      '\\pL',
      '\\PN',
      '\\pé',
      '\\p{Greek}',
      '\\p{^Han}',
      '\\p{greek}',
      '\\p{Nope}',
      '\\p',
    ],
    ...[
      '\\p{',
      '\\b',
      '\\B',
      '\\A',
      '\\z',
      '\\Z',
      '\\Q',
      '\\E',
      '\\1',
      '\\0',
      '\\12',
      '\\8',
      '\\x41',
      '\\x{263a}',
    ],
    ...[
      '\\x{110000}',
      '\\x4',
      '\\x{}',
      '\\n',
      '\\t',
      '\\v',
      '\\e',
      '\\u0041',
      '\\k<n>',
      '\\.',
      '\\*',
      '\\-',
      '\\]',
    ],
    ...['\\[', '\\C', '\\_', '\\é', 'a-z', 'z-a', '[a-', '-]', '\\x41-\\x40', 'é-a', '[b-\\d]'],
  ];

  it('property: agrees with re2js on accept/refuse, and why, for strings of RE2 tokens', () => {
    fc.assert(
      fc.property(fc.array(fc.constantFrom(...TOKENS), { maxLength: 14 }), (tokens) => {
        const pattern = tokens.join('');
        const reference = re2js(pattern);
        fc.pre(!/duplicate capture group name/.test(reference ?? '')); // Go allows it: see above
        const mine = re2Problem(pattern);
        // `(?<`: Go before 1.22 refuses all of it (see above), RE2/J reads `(?<name>`.
        if (reference === undefined && mine === 'invalid or unsupported Perl syntax: `(?<`') return;
        // Both read left to right, so they refuse at the same place, for the same reason (Go's words).
        // (Go calls a bare `(?P<` unsupported syntax, RE2/J an invalid named capture: one reason here.)
        const reason = (message: string | undefined): string | undefined =>
          message
            ?.replace('error parsing regexp: ', '')
            .split(':')[0]
            ?.replace('invalid named capture', 'invalid or unsupported Perl syntax');
        expect(reason(mine), `${JSON.stringify(pattern)}: re2js ${reference}, prazo ${mine}`).toBe(
          reason(reference),
        );
      }),
      { numRuns: 1000 },
    );
  });

  it('property: a value oneOf-style escaped, or any plain string, compiles', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'grapheme', maxLength: 30 }), (value) => {
        const escaped = value.replace(/[\\^$.|?*+()[\]{}]/g, '\\$&');
        expect(re2Problem(escaped)).toBeUndefined();
      }),
      { numRuns: 300 },
    );
  });

  it("prazo's own regex matchers compile: the success matchers", () => {
    for (const label of ['prazo_outcome', 'http_response_status_code'])
      expect(re2Problem(successMatcher(label)[2]), label).toBeUndefined();
  });

  it('Was a defect: a selector whose regex RE2 refuses passed the config check', () => {
    // `{a=~"("}` read as label matchers, so the config loaded; promtool then refused the rule file,
    // and `prazo calibrate --prometheus` sent the query.
    const read = parseSelector('{a=~"("}');
    expect(read).toEqual({
      problem: 'the regex of a=~"(" is not one Prometheus compiles (RE2): missing closing ): `(`',
    });
    expect('problem' in parseSelector('{job="x", a!~"(?=b)"}')).toBe(true);
    expect(() => readOptions('test', PROMETHEUS_SERIES_OPTIONS, { selector: '{a=~"("}' })).toThrow(
      /selector.*missing closing \)/s,
    );
    expect(parseSelector('{a=~"(?i)x|\\\\pL", b!~"\\\\Qa.b\\\\E"}')).toEqual({
      matchers: [
        ['a', '=~', '(?i)x|\\pL'],
        ['b', '!~', '\\Qa.b\\E'],
      ],
    });
  });

  const dir = promtoolDir('prazo-re2-');
  it.skipIf(!hasPromtool)("promtool (Prometheus' own Go RE2) agrees on a handful of examples", () => {
    const examples = [
      '(?i)x',
      '(?P<n>x)',
      'a\\z',
      '\\Qa.b\\E',
      '[[:alpha:]]+',
      '\\pL',
      '(',
      '(?=a)',
      '(a)\\1',
      'a{1001}',
      'a*+',
      '(?<n>x)',
      '\\p{Letter}',
      '(?P<x>a)(?P<x>b)',
    ];
    for (const regex of examples) {
      const file = join(dir, 'rules.yaml');
      const expr = `${selector('m', [['a', '=~', regex]])} > 0`;
      writeFileSync(
        file,
        `groups:\n  - name: g\n    rules:\n      - record: r\n        expr: ${JSON.stringify(expr)}\n`,
      );
      let refused = false;
      try {
        execFileSync('promtool', ['check', 'rules', file], { stdio: 'pipe' });
      } catch {
        refused = true;
      }
      expect(
        re2Problem(regex) !== undefined,
        `${regex} (${quote(regex)}): promtool refused: ${refused}`,
      ).toBe(refused);
    }
  });
});
