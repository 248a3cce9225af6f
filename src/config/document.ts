import {
  isMap,
  isPair,
  isScalar,
  isSeq,
  LineCounter,
  type Node,
  type Pair,
  parseDocument,
  visit,
} from 'yaml';
import { CONFIG_LIMITS } from './constants.js';
import { type TooDeep, tooDeepAt } from './depth.js';
import type { Path, RawProblem } from './problem.js';

/**
 * The config file as YAML or JSON. YAML is parsed with `yaml`'s `parseDocument` + `LineCounter` so
 * every problem can point at its line; JSON is parsed as JSON (`JSON.parse`: what is not strict JSON
 * is an error at its line, not YAML that happens to read), and its tree is located through the same
 * YAML parser (JSON is YAML 1.2). Bounded in size, nesting depth (depth.ts) and alias expansion; one
 * leading byte order mark is dropped, for JSON as for YAML; duplicate keys and prototype
 * keys (`__proto__`, `constructor`, `prototype`) are refused before any value reaches a JS object.
 *
 * Duplicate keys are found here, with one `Set` per mapping: `yaml`'s own `uniqueKeys` compares every
 * key with every earlier one (40,000 keys took 21 s), so it is off.
 *
 * A hostile file can hold hundreds of thousands of problems (1 MB of `- a: ` is 200,000 parser
 * errors): each costs a constant amount to place (line starts found once, a binary search per
 * problem), and only the first `CONFIG_LIMITS.maxProblems` of each kind get a message and a frame;
 * the rest are counted (`omitted`). `yaml`'s own `prettyErrors` is off for the same reason: it cuts
 * each error's line out of the text again, which on one long line is quadratic (40,000 errors, 20 s).
 */

/** U+FEFF, the byte order mark: at the start of a file, a mark of its encoding. */
const BOM = 0xfeff;

/** Which language a config file is written in. */
export type ConfigFormat = 'yaml' | 'json';
export interface ParsedDocument {
  /** The plain data, or undefined when the file is not usable YAML. */
  readonly data: unknown;
  readonly problems: RawProblem[];
  /** Errors found but left out of `problems`, past `CONFIG_LIMITS.maxProblems` of their kind. */
  readonly omitted: number;
  /** 1-based line and column of the key at `path` (or of the nearest enclosing node). */
  locate(path: Path): { line: number; col: number };
}

export function parseConfigText(source: string, format: ConfigFormat = 'yaml'): ParsedDocument {
  // One byte order mark is the encoding's, not the content's: editors on Windows write it, and
  // JSON.parse refuses it. Dropped for both languages alike; a second one is refused for both (the
  // `yaml` lexer would drop it too, JSON.parse would name an invisible character).
  const text = source.charCodeAt(0) === BOM ? source.slice(1) : source;
  const problems: RawProblem[] = [];
  if (text.charCodeAt(0) === BOM) {
    problems.push({
      path: [],
      line: 1,
      col: 1,
      message:
        'the file starts with two byte order marks (U+FEFF, invisible in most editors): keep one at most',
      severity: 'error',
    });
    return { data: undefined, problems, omitted: 0, locate: () => ({ line: 0, col: 0 }) };
  }
  const lineCounter = new LineCounter();
  const atOffset = (offset: number | undefined) => {
    if (offset === undefined) return { line: 0, col: 0 };
    const pos = lineCounter.linePos(offset);
    return { line: pos.line, col: pos.col };
  };
  if (text.length > CONFIG_LIMITS.maxBytes) {
    problems.push({
      path: [],
      message: `file larger than ${CONFIG_LIMITS.maxBytes} bytes`,
      severity: 'error',
    });
    return { data: undefined, problems, omitted: 0, locate: () => ({ line: 0, col: 0 }) };
  }
  let index: Lines | undefined;
  const lines = (): Lines => (index ??= new Lines(text));
  const tooDeep = tooDeepAt(text, CONFIG_LIMITS.maxDepth);
  if (tooDeep !== undefined) {
    const line = lines().lineOf(tooDeep.offset);
    const col = tooDeep.offset - lines().start(line) + 1;
    problems.push({ path: [], line, col, message: tooDeepMessage(tooDeep), severity: 'error' });
    return { data: undefined, problems, omitted: 0, locate: () => ({ line: 0, col: 0 }) };
  }
  // logLevel silent: the parser must not print to the host's stderr; its warnings become problems.
  // No stack traces while it runs: it builds an Error per problem, and capturing 200,000 stacks was
  // half the time of a hostile file; only their messages and offsets are read.
  const stackTraceLimit = Error.stackTraceLimit;
  Error.stackTraceLimit = 0;
  let doc: ReturnType<typeof parseDocument>;
  try {
    doc = parseDocument(text, {
      lineCounter,
      uniqueKeys: false,
      merge: false,
      prettyErrors: false,
      logLevel: 'silent',
    });
  } finally {
    Error.stackTraceLimit = stackTraceLimit;
  }
  const located: Located[] = [];
  const cap = CONFIG_LIMITS.maxProblems;
  let omitted = 0;
  let json: { data: unknown } | undefined;
  if (format === 'json') {
    json = parseJson(text, lines, located);
  } else {
    // In the parser's order, which is the file's: the first ones are the ones to read.
    const found = [...doc.errors, ...doc.warnings];
    for (const e of found.slice(0, cap)) located.push(yamlProblem(lines(), e.pos[0], e.message));
    omitted += Math.max(0, found.length - cap);
  }
  // Key problems, in document order, up to the cap; located without a frame (their key says where).
  let keyProblems = 0;
  const keyProblem = (offset: number | undefined, message: () => string): void => {
    keyProblems += 1;
    if (keyProblems > cap) {
      omitted += 1;
      return;
    }
    located.push({ ...atOffset(offset), message: message() });
  };
  const forbidden = new Set<string>(CONFIG_LIMITS.forbiddenKeys);
  visit(doc, {
    Map(_, map) {
      const seen = new Set<string>();
      for (const pair of map.items) {
        if (!isScalar(pair.key)) continue;
        const key = String(pair.key.value);
        if (!seen.has(key)) {
          seen.add(key);
          continue;
        }
        keyProblem(
          pair.key.range?.[0],
          () => `Map keys must be unique: \`${key.slice(0, 64)}\` is given twice`,
        );
      }
    },
    Pair(_, pair) {
      if (pair.key !== null && !isScalar(pair.key)) {
        keyProblem((pair.key as Node).range?.[0], () => 'keys must be plain scalars, not lists or mappings');
      } else if (isScalar(pair.key) && forbidden.has(String(pair.key.value))) {
        const key = String(pair.key.value);
        keyProblem(pair.key.range?.[0], () => `key \`${key}\` is not allowed (prototype pollution)`);
      }
    },
  });
  const locate = (path: Path) => atOffset(nodeAt(doc.contents as Node | null, path));
  if (located.length > 0) {
    for (const l of located) {
      const at = l.col === undefined ? {} : { col: l.col };
      const frame = l.frame === undefined ? {} : { frame: l.frame };
      problems.push({ path: [], line: l.line, ...at, message: l.message, severity: 'error', ...frame });
    }
    return { data: undefined, problems, omitted, locate };
  }
  if (json !== undefined) return { data: json.data, problems, omitted, locate };
  try {
    const data = doc.toJS({ maxAliasCount: CONFIG_LIMITS.maxAliasCount });
    return { data, problems, omitted, locate };
  } catch (error) {
    problems.push({
      path: [],
      message: `cannot read the file: ${(error as Error).message}`,
      severity: 'error',
    });
    return { data: undefined, problems, omitted, locate };
  }
}

/** JSON.parse's verdict: the data, or the syntax error at its line (undefined then). */
function parseJson(text: string, lines: () => Lines, located: Located[]): { data: unknown } | undefined {
  try {
    return { data: JSON.parse(text) as unknown };
  } catch (error) {
    const message = (error as Error).message.split('\n')[0]!.slice(0, 200);
    located.push(yamlProblem(lines(), jsonErrorOffset(text), `not valid JSON: ${message}`));
    return undefined;
  }
}

/** A problem the parser found at a line (and column), with the lines around it to show. */
interface Located {
  readonly line: number;
  readonly col?: number;
  readonly message: string;
  readonly frame?: string;
}

/**
 * A parser's problem at `offset`, at a line that exists and with its code frame. The `yaml` parser's
 * own message ends in ` at line 5, column 1:` followed by its frame: cut at the first line, that left
 * a sentence ending on a colon and no frame. And a problem at the very end of a file that ends with
 * a newline (an unclosed quote) sits on the empty line after the last one: line 8 of a 7-line file.
 * Both are fixed here: the position is moved back onto the last character of the file, and the frame
 * is built from the text (at most 120 characters of a line, the line before when the caret is at the
 * start of one).
 */
function yamlProblem(lines: Lines, offset: number | undefined, raw: string): Located {
  const message = raw
    .split('\n')[0]!
    .replace(/ at line \d+, column \d+:?$/, '')
    .slice(0, 300);
  if (offset === undefined || offset < 0) return { line: 0, message };
  // At the end, or on the line breaks that end the file: back onto its last character.
  const at = offset >= lines.contentEnd ? Math.max(0, lines.contentEnd - 1) : offset;
  const line = lines.lineOf(at);
  const col = at - lines.start(line) + 1;
  return { line, col, message, frame: frameAt(lines, line, col) };
}

const FRAME_WIDTH = 120;

/** `  5 | p99Ms: 40` and a caret line under column `col`; the line before too when `col` is its start. */
function frameAt(lines: Lines, line: number, col: number): string {
  const width = String(line).length;
  const gutter = (n: number | ''): string => `${String(n).padStart(width)} | `;
  const current = lines.text(line, FRAME_WIDTH);
  const out: string[] = [];
  if (line > 1 && /^\s*$/.test(current.slice(0, col - 1)))
    out.push(`${gutter(line - 1)}${lines.text(line - 1, FRAME_WIDTH)}`);
  out.push(`${gutter(line)}${current}`);
  const caretCol = Math.min(col, FRAME_WIDTH + 1);
  out.push(`${gutter('')}${' '.repeat(caretCol - 1)}^`);
  return out.join('\n');
}

/**
 * Where each line of a text starts, found in one pass, so that a problem's line is a binary search:
 * counting the line breaks before each of 200,000 problems, or scanning back and forth along a 1 MB
 * line for each, made the check quadratic.
 */
class Lines {
  readonly #text: string;
  /** Offset of the first character of each line; line 1 starts at 0. */
  readonly #starts: number[] = [0];
  /** Offset just past the last character that is not a line break. */
  readonly contentEnd: number;

  constructor(text: string) {
    this.#text = text;
    for (let i = text.indexOf('\n'); i >= 0; i = text.indexOf('\n', i + 1)) this.#starts.push(i + 1);
    let end = text.length;
    while (end > 0 && (text[end - 1] === '\n' || text[end - 1] === '\r')) end -= 1;
    this.contentEnd = end;
  }

  /** 1-based line of an offset. */
  lineOf(offset: number): number {
    const starts = this.#starts;
    let lo = 0;
    let hi = starts.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (starts[mid]! <= offset) lo = mid;
      else hi = mid - 1;
    }
    return lo + 1;
  }

  /** Offset where 1-based `line` starts. */
  start(line: number): number {
    return this.#starts[line - 1] ?? this.#text.length;
  }

  /** 1-based `line` without its line break, its first `width` characters and `…` when longer. */
  text(line: number, width: number): string {
    const from = this.start(line);
    let end = line < this.#starts.length ? this.#starts[line]! - 1 : this.#text.length;
    if (end > from && this.#text[end - 1] === '\r') end -= 1;
    return end - from > width ? `${this.#text.slice(from, from + width)}…` : this.#text.slice(from, end);
  }
}

const WS = new Set([0x20, 0x09, 0x0a, 0x0d]);

/**
 * Where strict JSON (RFC 8259) first goes wrong in `text`: `JSON.parse` says why but, on Node 20, not
 * always where. One linear pass; nesting is already bounded (CONFIG_LIMITS.maxDepth) before this runs.
 */
export function jsonErrorOffset(text: string): number {
  let i = 0;
  const space = (): void => {
    while (i < text.length && WS.has(text.charCodeAt(i))) i += 1;
  };
  const fail = (): never => {
    throw i;
  };
  const string = (): void => {
    i += 1;
    for (;;) {
      if (i >= text.length) fail();
      const c = text.charCodeAt(i);
      if (c === 0x22) {
        i += 1;
        return;
      }
      if (c < 0x20) fail();
      if (c !== 0x5c) i += 1;
      else if ('"\\/bfnrt'.includes(text[i + 1] ?? 'x')) i += 2;
      else if (text[i + 1] === 'u' && /^[0-9a-fA-F]{4}$/.test(text.slice(i + 2, i + 6))) i += 6;
      else fail();
    }
  };
  const number = (): void => {
    const m = /^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?/.exec(text.slice(i, i + 400));
    if (m === null) fail();
    i += m![0].length;
  };
  const word = (w: string): void => {
    if (!text.startsWith(w, i)) fail();
    i += w.length;
  };
  const sequence = (close: string, item: () => void): void => {
    i += 1;
    space();
    if (text[i] === close) {
      i += 1;
      return;
    }
    for (;;) {
      item();
      space();
      if (text[i] === close) {
        i += 1;
        return;
      }
      if (text[i] !== ',') fail();
      i += 1;
    }
  };
  const member = (): void => {
    space();
    if (text[i] !== '"') fail();
    string();
    space();
    if (text[i] !== ':') fail();
    i += 1;
    value();
  };
  function value(): void {
    space();
    const c = text[i];
    if (c === '{') sequence('}', member);
    else if (c === '[') sequence(']', value);
    else if (c === '"') string();
    else if (c === 't') word('true');
    else if (c === 'f') word('false');
    else if (c === 'n') word('null');
    else if (c === '-' || (c !== undefined && c >= '0' && c <= '9')) number();
    else fail();
  }
  try {
    value();
    space();
    return i;
  } catch (offset) {
    return Math.min(offset as number, text.length);
  }
}

/**
 * Finding a key in a mapping: a scan for the first few lookups (a file with a handful of problems
 * does not pay for an index of 100,000 keys), then an index of the mapping's pairs, so that locating
 * many problems stays linear.
 */
const SCANS_BEFORE_INDEX = 8;
const lookups = new WeakMap<object, { scans: number; index?: Map<string, Pair> }>();

function pairOf(map: { items: readonly unknown[] }, key: string): Pair | undefined {
  let state = lookups.get(map);
  if (state === undefined) {
    state = { scans: 0 };
    lookups.set(map, state);
  }
  if (state.index === undefined && state.scans < SCANS_BEFORE_INDEX) {
    state.scans += 1;
    return map.items.find((p): p is Pair => isPair(p) && isScalar(p.key) && String(p.key.value) === key);
  }
  if (state.index === undefined) {
    const index = new Map<string, Pair>();
    for (const p of map.items) {
      if (isPair(p) && isScalar(p.key) && !index.has(String(p.key.value))) index.set(String(p.key.value), p);
    }
    state.index = index;
  }
  return state.index.get(key);
}

/** Offset of the key (for map entries) or the item (for list entries) at `path`, else the deepest found. */
function nodeAt(root: Node | null, path: Path): number | undefined {
  let node: unknown = root;
  let offset = (root as Node | null)?.range?.[0];
  for (const seg of path) {
    if (isMap(node)) {
      const pair = pairOf(node, String(seg));
      if (pair === undefined) return offset;
      offset = (pair.key as Node).range?.[0] ?? offset;
      node = pair.value;
    } else if (isSeq(node) && typeof seg === 'number') {
      const item = node.items[seg] as Node | undefined;
      if (item === undefined) return offset;
      offset = item.range?.[0] ?? offset;
      node = item;
    } else {
      return offset;
    }
  }
  return offset;
}

/**
 * Which limit, and what made the nesting that deep: "lists and mappings nested deeper than 64 levels
 * (here 40 by indentation, `- ` or `? ` and 25 by `[` or `{`, which count together)".
 */
function tooDeepMessage({ block, flow }: TooDeep): string {
  const byBlock = 'indentation, `- ` or `? `';
  const byFlow = '`[` or `{`';
  const how =
    block === 0
      ? `by ${byFlow}`
      : flow === 0
        ? `by ${byBlock}`
        : `here ${block} by ${byBlock} and ${flow} by ${byFlow}, which count together`;
  return `lists and mappings nested deeper than ${CONFIG_LIMITS.maxDepth} levels (${how})`;
}
