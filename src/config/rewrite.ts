import { isDeepStrictEqual } from 'node:util';
import { isScalar, parseDocument } from 'yaml';
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
 * The result is checked before it is returned: parsed again, it holds the same data as the original
 * with exactly the edited values changed; anything else is an error, never a file half-rewritten.
 */

/** One number to change: its key path (`['dependencies', 2, 'p99Ms']`) and its new value. */
export interface NumberEdit {
  readonly path: Path;
  readonly value: number;
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
    if (spans[i]!.end > spans[i - 1]!.start) throw new Error('cannot rewrite: two edits of one value');
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
