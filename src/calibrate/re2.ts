/**
 * Whether Prometheus will compile a regex, judged by RE2's grammar as Go's `regexp/syntax` reads it
 * (`syntax.Parse(v, syntax.Perl)`, what Prometheus runs on the value of a `=~` or `!~` matcher).
 *
 * JavaScript's `RegExp` is the wrong judge, both ways: it accepts lookarounds (`(?=`, `(?<!`),
 * backreferences (`\1`, `\k<n>`), `\u0041`, repeat counts past 1000 and `a*+`'s relatives, all of which
 * RE2 refuses, and refuses `(?i)x`, `(?P<n>x)`, `\z`, `\Q…\E`, `[[:alpha:]]` and `\pL`, all of which
 * RE2 accepts. A selector prazo let through with such a regex came back later as a rule file promtool
 * refuses, or a query Prometheus answers with a 400; so the config loader asks this module instead.
 *
 * The check follows Go's parser step by step (its operand stack, its escapes, its repeat and nesting
 * limits), without building what the regex matches. Where Go releases disagree, it keeps what every Go
 * since 1.19 accepts — a rule file must load in the Prometheus the user runs, which prazo cannot know:
 * - `(?<name>x)` is refused (Go 1.22+ reads it; `(?P<name>x)` is the spelling all read);
 * - `\p{…}` takes Go 1.24's names, exact-case: `Any`, the general categories (`L`, `Lu`, …), the
 *   Unicode 13 scripts; Go 1.25's additions (`\p{Letter}`, `\p{ASCII}`, `Assigned`, `Cn`, `LC`, any
 *   case) and later scripts are refused.
 * Where RE2's other ports disagree with Go, Go wins: a capture name given twice is accepted (Go
 * allows it; RE2/J, C++ RE2 refuse), binary properties (`\p{Emoji}`) are refused (Go has none), and
 * the size limit is Go's count of instructions (RE2/J's comes out larger and refuses sooner).
 * Go's "expression too large" (about 3.3 million compiled instructions) and nesting depth (1000) are
 * counted on this module's own reading of the tree: Go skips the size count when a cheap estimate
 * says it fits and measures depth after its simplifications, so near those limits (only a body of
 * thousands of characters repeated a thousand times, or a thousand nested groups) it may refuse what
 * one Go build would still compile.
 */

/** Go's `maxRepeat`: the largest count in `x{n,m}`, and of the product of nested counts. */
const MAX_REPEAT = 1000;
/** Go's `maxSize`: 128 MB of 40-byte instructions. */
const MAX_SIZE = Math.floor((128 << 20) / 40);
/** Go's `maxHeight`. */
const MAX_HEIGHT = 1000;

const PERL_CLASSES = new Set(['d', 'D', 's', 'S', 'w', 'W']);
const POSIX_CLASSES = new Set(
  [
    'alnum',
    'alpha',
    'ascii',
    'blank',
    'cntrl',
    'digit',
    'graph',
    'lower',
    'print',
    'punct',
    'space',
    'upper',
    'word',
    'xdigit',
  ].flatMap((n) => [`[:${n}:]`, `[:^${n}:]`]),
);
/** Go's `unicode.Categories` before 1.25 (no `LC`, no `Cn`). */
const CATEGORIES =
  'C Cc Cf Co Cs L Ll Lm Lo Lt Lu M Mc Me Mn N Nd Nl No P Pc Pd Pe Pf Pi Po Ps S Sc Sk Sm So Z Zl Zp Zs';
/** Go's `unicode.Scripts` at Unicode 13 (Go 1.16 to 1.20; later releases add scripts, never remove). */
const SCRIPTS =
  'Adlam Ahom Anatolian_Hieroglyphs Arabic Armenian Avestan Balinese Bamum Bassa_Vah Batak Bengali ' +
  'Bhaiksuki Bopomofo Brahmi Braille Buginese Buhid Canadian_Aboriginal Carian Caucasian_Albanian Chakma ' +
  'Cham Cherokee Chorasmian Common Coptic Cuneiform Cypriot Cyrillic Deseret Devanagari Dives_Akuru Dogra ' +
  'Duployan Egyptian_Hieroglyphs Elbasan Elymaic Ethiopic Georgian Glagolitic Gothic Grantha Greek ' +
  'Gujarati Gunjala_Gondi Gurmukhi Han Hangul Hanifi_Rohingya Hanunoo Hatran Hebrew Hiragana ' +
  'Imperial_Aramaic Inherited Inscriptional_Pahlavi Inscriptional_Parthian Javanese Kaithi Kannada ' +
  'Katakana Kayah_Li Kharoshthi Khitan_Small_Script Khmer Khojki Khudawadi Lao Latin Lepcha Limbu ' +
  'Linear_A Linear_B Lisu Lycian Lydian Mahajani Makasar Malayalam Mandaic Manichaean Marchen ' +
  'Masaram_Gondi Medefaidrin Meetei_Mayek Mende_Kikakui Meroitic_Cursive Meroitic_Hieroglyphs Miao Modi ' +
  'Mongolian Mro Multani Myanmar Nabataean Nandinagari New_Tai_Lue Newa Nko Nushu Nyiakeng_Puachue_Hmong ' +
  'Ogham Ol_Chiki Old_Hungarian Old_Italic Old_North_Arabian Old_Permic Old_Persian Old_Sogdian ' +
  'Old_South_Arabian Old_Turkic Oriya Osage Osmanya Pahawh_Hmong Palmyrene Pau_Cin_Hau Phags_Pa ' +
  'Phoenician Psalter_Pahlavi Rejang Runic Samaritan Saurashtra Sharada Shavian Siddham SignWriting ' +
  'Sinhala Sogdian Sora_Sompeng Soyombo Sundanese Syloti_Nagri Syriac Tagalog Tagbanwa Tai_Le Tai_Tham ' +
  'Tai_Viet Takri Tamil Tangut Telugu Thaana Thai Tibetan Tifinagh Tirhuta Ugaritic Vai Wancho ' +
  'Warang_Citi Yezidi Yi Zanabazar_Square';
const UNICODE_NAMES = new Set(['Any', ...CATEGORIES.split(' '), ...SCRIPTS.split(' ')]);
const MAX_RUNE = 0x10ffff;

/** One node of the tree Go builds, reduced to what its limits look at. */
interface Node {
  readonly kind:
    | 'literal'
    | 'single'
    | 'capture'
    | 'star'
    | 'plus'
    | 'quest'
    | 'repeat'
    | 'concat'
    | 'alternate';
  /** Runes of a literal (Go merges adjacent ones into one node). */
  readonly runes?: number;
  readonly min?: number;
  readonly max?: number;
  readonly subs?: readonly Node[];
}

/** A refusal, as Go words it (`invalid escape sequence`, `missing closing )`...), and the text at fault. */
class Refused {
  constructor(
    readonly code: string,
    readonly expr: string,
  ) {}
}

const isDigit = (c: string | undefined): boolean => c !== undefined && c >= '0' && c <= '9';
const isOctal = (c: string | undefined): boolean => c !== undefined && c >= '0' && c <= '7';
const isAlnum = (c: string): boolean => /^[0-9A-Za-z]$/.test(c);
const unhex = (c: string | undefined): number =>
  c !== undefined && /^[0-9A-Fa-f]$/.test(c) ? Number.parseInt(c, 16) : -1;

/** Go's `repeatIsValid`: nested counts multiply to at most `n` copies of the innermost thing. */
function repeatIsValid(node: Node, n: number): boolean {
  let left = n;
  if (node.kind === 'repeat') {
    let m = node.max!;
    if (m === 0) return true;
    if (m < 0) m = node.min!;
    if (m > left) return false;
    if (m > 0) left = Math.floor(left / m);
  }
  return (node.subs ?? []).every((sub) => repeatIsValid(sub, left));
}

/** Go's `calcSize` and `calcHeight` over the tree, refusing any node past the limits. */
function checkLimits(root: Node): void {
  const walk = (node: Node): { size: number; height: number } => {
    const subs = (node.subs ?? []).map(walk);
    const sub = subs[0]?.size ?? 0;
    let size: number;
    switch (node.kind) {
      case 'literal':
        size = node.runes!;
        break;
      case 'capture':
      case 'star':
        size = 2 + sub;
        break;
      case 'plus':
      case 'quest':
        size = 1 + sub;
        break;
      case 'concat':
        size = subs.reduce((s, x) => s + x.size, 0);
        break;
      case 'alternate':
        size = subs.reduce((s, x) => s + x.size, 0) + subs.length - 1;
        break;
      case 'repeat':
        if (node.max === -1) size = node.min === 0 ? 2 + sub : 1 + node.min! * sub;
        else size = node.max! * sub + (node.max! - node.min!);
        break;
      default:
        size = 0;
    }
    size = Math.max(1, size);
    const height = 1 + subs.reduce((h, x) => Math.max(h, x.height), 0);
    if (size > MAX_SIZE) throw new Refused('expression too large', '');
    if (height > MAX_HEIGHT) throw new Refused('expression nests too deeply', '');
    return { size, height };
  };
  walk(root);
}

/** A group being read: its finished alternatives and the concatenation in progress. */
interface Frame {
  readonly alternatives: Node[][];
  current: Node[];
  /** Whether the group captures (a node of its own) or only groups (`(?:…)`, `(?i:…)`). */
  readonly capture: boolean;
}

function concat(items: readonly Node[]): Node {
  if (items.length === 0) return { kind: 'single' }; // Go's OpEmptyMatch
  if (items.length === 1) return items[0]!;
  if (items.every((n) => n.kind === 'literal'))
    return { kind: 'literal', runes: items.reduce((s, n) => s + n.runes!, 0) };
  return { kind: 'concat', subs: items };
}

function close(frame: Frame): Node {
  const branches = [...frame.alternatives, frame.current].map(concat);
  const body = branches.length === 1 ? branches[0]! : { kind: 'alternate' as const, subs: branches };
  return frame.capture ? { kind: 'capture', subs: [body] } : body;
}

/**
 * Parses `pattern` as Go's `regexp/syntax` does with the `Perl` flags; throws {@link Refused}. The
 * pattern is read by code points (a lone surrogate is U+FFFD, as prazo's PromQL quoting writes it).
 */
function parse(pattern: string): void {
  const s = Array.from(pattern, (c) => (c.length === 1 && c >= '\ud800' && c <= '\udfff' ? '\ufffd' : c));
  let i = 0;
  const rest = (from = i): string => s.slice(from).join('');
  const text = (from: number, to = i): string => s.slice(from, to).join('');
  /** Where the pair `a` `b` first occurs from `from` on, or -1. */
  const find = (a: string, b: string, from: number): number => {
    for (let j = from; j + 1 < s.length; j += 1) if (s[j] === a && s[j + 1] === b) return j;
    return -1;
  };
  const stack: Frame[] = [{ alternatives: [], current: [], capture: false }];
  const top = (): Frame => stack[stack.length - 1]!;
  const push = (node: Node): void => {
    top().current.push(node);
  };
  const literal = (): void => push({ kind: 'literal', runes: 1 });
  const single = (): void => push({ kind: 'single' });
  let lastRepeat = -1;

  /** Go's `parseEscape` at `i` (on the backslash): the rune it means. */
  const readEscape = (): number => {
    const start = i;
    i += 1;
    const c = s[i];
    if (c === undefined) throw new Refused('trailing backslash at end of expression', '');
    i += 1;
    const cp = c.codePointAt(0)!;
    if (cp < 0x80 && !isAlnum(c)) return cp;
    if (c >= '1' && c <= '7' && !isOctal(s[i])) throw new Refused('invalid escape sequence', text(start));
    if (c >= '0' && c <= '7') {
      let r = cp - 0x30;
      for (let k = 1; k < 3 && isOctal(s[i]); k += 1) {
        r = r * 8 + (s[i]!.codePointAt(0)! - 0x30);
        i += 1;
      }
      return r;
    }
    if (c === 'x') {
      if (s[i] === '{') {
        i += 1;
        let r = 0;
        let digits = 0;
        for (;;) {
          const d = s[i];
          if (d === undefined) throw new Refused('invalid escape sequence', text(start));
          i += 1;
          if (d === '}') break;
          const v = unhex(d);
          if (v < 0) throw new Refused('invalid escape sequence', text(start));
          r = r * 16 + v;
          if (r > MAX_RUNE) throw new Refused('invalid escape sequence', text(start));
          digits += 1;
        }
        if (digits === 0) throw new Refused('invalid escape sequence', text(start));
        return r;
      }
      const x = unhex(s[i]);
      const y = unhex(s[i + 1]);
      if (s[i] !== undefined) i += 1;
      if (s[i] !== undefined) i += 1;
      if (x < 0 || y < 0) throw new Refused('invalid escape sequence', text(start));
      return x * 16 + y;
    }
    const named: Record<string, number> = { a: 7, f: 12, n: 10, r: 13, t: 9, v: 11 };
    if (named[c] !== undefined) return named[c]!;
    throw new Refused('invalid escape sequence', text(start));
  };

  /** Go's `parseUnicodeClass` at `i` (on `\p` or `\P`). */
  const unicodeClass = (): void => {
    const start = i;
    i += 2;
    let name: string;
    if (s[i] === '{') {
      const end = s.indexOf('}', i);
      if (end < 0) throw new Refused('invalid character class range', rest(start));
      name = text(i + 1, end);
      i = end + 1;
    } else {
      name = s[i] ?? '';
      if (s[i] !== undefined) i += 1;
    }
    if (name.startsWith('^')) name = name.slice(1);
    if (!UNICODE_NAMES.has(name)) throw new Refused('invalid character class range', text(start));
  };

  /** Go's `parseClass` at `i` (on `[`). */
  const charClass = (): void => {
    const start = i;
    i += 1;
    if (s[i] === '^') i += 1;
    let first = true;
    while (s[i] !== ']' || first) {
      first = false;
      if (s[i] === '[' && s[i + 1] === ':' && s.length - i > 2) {
        const end = find(':', ']', i + 2);
        if (end >= 0) {
          const name = text(i, end + 2);
          if (!POSIX_CLASSES.has(name)) throw new Refused('invalid character class range', name);
          i = end + 2;
          continue;
        }
      }
      if (s[i] === '\\' && (s[i + 1] === 'p' || s[i + 1] === 'P')) {
        unicodeClass();
        continue;
      }
      if (s[i] === '\\' && PERL_CLASSES.has(s[i + 1] ?? '')) {
        i += 2;
        continue;
      }
      const from = i;
      const classChar = (): number => {
        const c = s[i];
        if (c === undefined) throw new Refused('missing closing ]', text(start));
        if (c === '\\') return readEscape();
        i += 1;
        return c.codePointAt(0)!;
      };
      const lo = classChar();
      if (s[i] === '-' && s[i + 1] !== undefined && s[i + 1] !== ']') {
        i += 1;
        const hi = classChar();
        if (hi < lo) throw new Refused('invalid character class range', text(from));
      }
    }
    i += 1;
    single();
  };

  /** Go's `parsePerlFlags` at `i` (on `(?`). */
  const perlFlags = (): void => {
    const start = i;
    if (s[i + 2] === 'P' && s[i + 3] === '<' && s.length - i > 4) {
      const end = s.indexOf('>', i);
      if (end < 0) throw new Refused('invalid named capture', rest(start));
      const name = text(i + 4, end);
      if (!/^[A-Za-z0-9_]+$/.test(name)) throw new Refused('invalid named capture', text(start, end + 1));
      i = end + 1;
      stack.push({ alternatives: [], current: [], capture: true });
      return;
    }
    i += 2;
    let negated = false;
    let sawFlag = false;
    while (i < s.length) {
      const c = s[i]!;
      i += 1;
      if (c === 'i' || c === 'm' || c === 's' || c === 'U') sawFlag = true;
      else if (c === '-' && !negated) {
        negated = true;
        sawFlag = false;
      } else if ((c === ':' || c === ')') && (!negated || sawFlag)) {
        if (c === ':') stack.push({ alternatives: [], current: [], capture: false });
        return;
      } else break;
    }
    throw new Refused('invalid or unsupported Perl syntax', text(start));
  };

  /** Go's `repeat`: applies the operator read from `start` to the operand on top. */
  const repeat = (start: number, kind: 'star' | 'plus' | 'quest' | 'repeat', min = 0, max = 0): void => {
    if (s[i] === '?') i += 1; // non-greedy
    if (lastRepeat >= 0) throw new Refused('invalid nested repetition operator', text(lastRepeat));
    const current = top().current;
    const operand = current.pop();
    if (operand === undefined) throw new Refused('missing argument to repetition operator', text(start));
    const node: Node = { kind, min, max, subs: [operand] };
    if (kind === 'repeat' && (min >= 2 || max >= 2) && !repeatIsValid(node, MAX_REPEAT))
      throw new Refused('invalid repeat count', text(start));
    current.push(node);
  };

  /** Go's `parseRepeat` at `i` (on `{`): the counts, or undefined when `{` is a literal. */
  const counts = (): { min: number; max: number; end: number } | undefined => {
    let j = i + 1;
    const int = (): number | undefined => {
      if (!isDigit(s[j])) return undefined;
      if (s[j] === '0' && isDigit(s[j + 1])) return undefined; // no leading zeros
      const from = j;
      while (isDigit(s[j])) j += 1;
      return Number(text(from, j)); // past 1000 either way: refused below, as Go does
    };
    const min = int();
    if (min === undefined || j >= s.length) return undefined;
    let max = min;
    if (s[j] === ',') {
      j += 1;
      if (j >= s.length) return undefined;
      if (s[j] === '}') max = -1;
      else {
        const m = int();
        if (m === undefined) return undefined;
        max = m;
      }
    }
    if (s[j] !== '}') return undefined;
    return { min, max, end: j + 1 };
  };

  while (i < s.length) {
    const start = i;
    let repeated = -1;
    const c = s[i]!;
    if (c === '(') {
      if (s[i + 1] === '?') perlFlags();
      else {
        stack.push({ alternatives: [], current: [], capture: true });
        i += 1;
      }
    } else if (c === '|') {
      const frame = top();
      frame.alternatives.push(frame.current);
      frame.current = [];
      i += 1;
    } else if (c === ')') {
      if (stack.length < 2) throw new Refused('unexpected )', pattern);
      const node = close(stack.pop()!);
      push(node);
      i += 1;
    } else if (c === '^' || c === '$' || c === '.') {
      single();
      i += 1;
    } else if (c === '[') charClass();
    else if (c === '*' || c === '+' || c === '?') {
      i += 1;
      repeat(start, c === '*' ? 'star' : c === '+' ? 'plus' : 'quest');
      repeated = start;
    } else if (c === '{') {
      const read = counts();
      if (read === undefined) {
        literal();
        i += 1;
      } else {
        i = read.end;
        const { min, max } = read;
        if (min < 0 || min > MAX_REPEAT || max > MAX_REPEAT || (max >= 0 && min > max))
          throw new Refused('invalid repeat count', text(start));
        repeat(start, 'repeat', min, max);
        repeated = start;
      }
    } else if (c === '\\') {
      const next = s[i + 1];
      if (next === 'A' || next === 'b' || next === 'B' || next === 'z') {
        single();
        i += 2;
      } else if (next === 'C') throw new Refused('invalid escape sequence', '\\C');
      else if (next === 'Q') {
        const end = find('\\', 'E', i + 2);
        for (let k = i + 2; k < (end < 0 ? s.length : end); k += 1) literal();
        i = end < 0 ? s.length : end + 2;
      } else if (next === 'p' || next === 'P') {
        unicodeClass();
        single();
      } else if (next !== undefined && PERL_CLASSES.has(next)) {
        single();
        i += 2;
      } else {
        readEscape();
        literal();
      }
    } else {
      literal();
      i += 1;
    }
    lastRepeat = repeated;
  }
  if (stack.length !== 1) throw new Refused('missing closing )', pattern);
  checkLimits(close(stack[0]!));
}

/**
 * Why Prometheus (Go's RE2) would refuse `pattern` as the regex of a `=~`/`!~` matcher, in Go's words
 * (`missing closing ): \`(\``), or undefined when it compiles.
 */
export function re2Problem(pattern: string): string | undefined {
  try {
    parse(pattern);
    return undefined;
  } catch (error) {
    if (!(error instanceof Refused)) throw error;
    return error.expr === '' ? error.code : `${error.code}: \`${error.expr}\``;
  }
}
