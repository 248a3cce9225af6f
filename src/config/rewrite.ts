import { isDeepStrictEqual } from 'node:util';
import {
  isMap,
  isPair,
  isScalar,
  type Node,
  type Pair,
  parseDocument,
  type Scalar,
  type YAMLMap,
} from 'yaml';
import { CONFIG_LIMITS } from './constants.js';
import type { Path } from './problem.js';

/**
 * Rewrites numbers of a config file in place (SPEC C7, X8: `prazo calibrate --prometheus --write`),
 * so that the change is a reviewable diff: only the digits of the values change. The file is read with
 * `yaml`'s Document API, which keeps every node's source range; each edit replaces exactly the source
 * text of one number scalar — comments, blank lines, quoting, flow or block style and key order are the
 * file's own bytes, untouched (re-serialising the Document would reflow them). JSON is YAML 1.2, so a
 * `.json` config is rewritten the same way.
 *
 * A number an entry does not have yet (a dependency declared with `kind:` only, whose p99 was never
 * measured) is added as one new line under the entry's `name` (block style, at the name's indentation
 * and line ending), or as `, p99Ms: 12` after it (flow style; `"p99Ms"` quoted where the keys are):
 * the diff is that one line, nothing else moves.
 *
 * The result is checked before it is returned: parsed again, it holds the same data as the original
 * with exactly the edited values changed (or added); anything else is an error, never a file
 * half-rewritten.
 */

/**
 * One number to change: its key path (`['dependencies', 2, 'p99Ms']`) and its new value. With `add`,
 * a key missing from its mapping is added (the mapping must exist).
 */
export interface NumberEdit {
  readonly path: Path;
  readonly value: number;
  readonly add?: boolean;
}

/** A number as YAML and JSON both read it: plain decimal, at most 6 decimals, no exponent for sane values. */
export function formatNumber(value: number): string {
  if (!Number.isFinite(value)) throw new RangeError(`not a finite number: ${value}`);
  const rounded = Number(value.toFixed(6));
  return String(rounded);
}

const pathText = (path: Path): string =>
  path.map((p, i) => (typeof p === 'number' ? `[${p}]` : i === 0 ? p : `.${p}`)).join('');

function setIn(data: unknown, path: Path, value: number): void {
  let node = data as Record<string | number, unknown>;
  for (const key of path.slice(0, -1)) node = node[key] as Record<string | number, unknown>;
  node[path[path.length - 1]!] = value;
}

/**
 * The text with each edited number replaced. Throws an `Error` naming the key when a path does not
 * lead to a number written in the file (an alias, a string, a missing key): a rewrite changes values
 * that are there, it never adds keys.
 */
export function rewriteNumbers(text: string, edits: readonly NumberEdit[]): string {
  const options = { uniqueKeys: false, merge: false, logLevel: 'silent' as const };
  const doc = parseDocument(text, options);
  if (doc.errors.length > 0) throw new Error(`cannot rewrite: ${doc.errors[0]!.message.split('\n')[0]}`);
  const spans: { start: number; end: number; text: string }[] = [];
  for (const edit of edits) {
    const node = doc.getIn(edit.path, true);
    if (node === undefined && edit.add === true) {
      spans.push(addedKey(text, doc.getIn(edit.path.slice(0, -1), true), edit));
      continue;
    }
    if (!isScalar(node) || typeof node.value !== 'number' || node.range == null) {
      throw new Error(`cannot rewrite ${pathText(edit.path)}: it is not a number written in the file`);
    }
    const [start, end] = node.range;
    const source = text.slice(start, end);
    if (!/^[-+]?(\.\d+|\d+(\.\d*)?)([eE][-+]?\d+)?$/.test(source)) {
      throw new Error(
        `cannot rewrite ${pathText(edit.path)}: ${JSON.stringify(source)} is not a plain number`,
      );
    }
    spans.push({ start, end, text: formatNumber(edit.value) });
  }
  spans.sort((a, b) => b.start - a.start);
  for (let i = 1; i < spans.length; i += 1) {
    if (spans[i]!.end > spans[i - 1]!.start || spans[i]!.start === spans[i - 1]!.start)
      throw new Error('cannot rewrite: two edits of one value');
  }
  let out = text;
  for (const s of spans) out = out.slice(0, s.start) + s.text + out.slice(s.end);
  // The proof: the same data, but for the edited values.
  const before = doc.toJS({ maxAliasCount: CONFIG_LIMITS.maxAliasCount }) as unknown;
  for (const edit of edits) setIn(before, edit.path, Number(formatNumber(edit.value)));
  const after = parseDocument(out, options);
  if (
    after.errors.length > 0 ||
    !isDeepStrictEqual(after.toJS({ maxAliasCount: CONFIG_LIMITS.maxAliasCount }), before)
  ) {
    throw new Error('cannot rewrite: the edited file would not read back as the same config');
  }
  return out;
}

/**
 * The text that adds `edit`'s key to the mapping `parent`: a line after the `name` pair in block
 * style (the name's indentation, the file's line ending, after any comment on that line), or
 * `, key: value` after the `name` value in flow style. An empty span (start = end) at that place.
 */
function addedKey(
  text: string,
  parent: unknown,
  edit: NumberEdit,
): { start: number; end: number; text: string } {
  const key = edit.path[edit.path.length - 1];
  if (!isMap(parent) || typeof key !== 'string' || !/^[A-Za-z][A-Za-z0-9_]*$/.test(key)) {
    throw new Error(`cannot rewrite ${pathText(edit.path)}: there is no mapping to add it to`);
  }
  const map = parent as YAMLMap;
  const anchor =
    map.items.find((p): p is Pair => isPair(p) && isScalar(p.key) && p.key.value === 'name') ??
    map.items.find((p): p is Pair => isPair(p) && isScalar(p.key) && isScalar(p.value));
  const keyNode = anchor?.key as Scalar | undefined;
  const valueNode = anchor?.value as Node | undefined;
  if (keyNode?.range == null || valueNode?.range == null) {
    throw new Error(`cannot rewrite ${pathText(edit.path)}: no key to add it after`);
  }
  const quoted =
    keyNode.type === 'QUOTE_DOUBLE' ? `"${key}"` : keyNode.type === 'QUOTE_SINGLE' ? `'${key}'` : key;
  const value = formatNumber(edit.value);
  if (map.flow === true) {
    const at = valueNode.range[1];
    return { start: at, end: at, text: `, ${quoted}: ${value}` };
  }
  const keyStart = keyNode.range[0];
  const indent = keyStart - (text.lastIndexOf('\n', keyStart - 1) + 1);
  const eol = text.indexOf('\n', valueNode.range[1]);
  if (eol < 0)
    return { start: text.length, end: text.length, text: `\n${' '.repeat(indent)}${quoted}: ${value}` };
  const crlf = eol > 0 && text[eol - 1] === '\r';
  const at = crlf ? eol - 1 : eol;
  return { start: at, end: at, text: `${crlf ? '\r\n' : '\n'}${' '.repeat(indent)}${quoted}: ${value}` };
}
