import { isMap, isPair, isScalar, isSeq, LineCounter, type Node, parseDocument, visit } from 'yaml';
import { CONFIG_LIMITS } from './constants.js';
import type { Path, RawProblem } from './problem.js';

/**
 * The config file as YAML (JSON is YAML 1.2, so `.json` files go through the same parser and get the
 * same line numbers). Parsed with `yaml`'s `parseDocument` + `LineCounter` so every problem can point
 * at its line; bounded in size and alias expansion; duplicate keys and prototype keys (`__proto__`,
 * `constructor`, `prototype`) are refused before any value reaches a JS object.
 */
export interface ParsedDocument {
  /** The plain data, or undefined when the file is not usable YAML. */
  readonly data: unknown;
  readonly problems: RawProblem[];
  /** 1-based line and column of the key at `path` (or of the nearest enclosing node). */
  locate(path: Path): { line: number; col: number };
}

export function parseConfigText(text: string): ParsedDocument {
  const problems: RawProblem[] = [];
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
    return { data: undefined, problems, locate: () => ({ line: 0, col: 0 }) };
  }
  const tooDeep = flowTooDeepAt(text, CONFIG_LIMITS.maxFlowDepth);
  if (tooDeep !== undefined) {
    problems.push({
      path: [],
      line: lineOf(text, tooDeep),
      message: `brackets nested deeper than ${CONFIG_LIMITS.maxFlowDepth} levels`,
      severity: 'error',
    });
    return { data: undefined, problems, locate: () => ({ line: 0, col: 0 }) };
  }
  // logLevel silent: the parser must not print to the host's stderr; its warnings become problems.
  const doc = parseDocument(text, {
    lineCounter,
    uniqueKeys: true,
    merge: false,
    prettyErrors: true,
    logLevel: 'silent',
  });
  const located: Array<{ line: number; message: string }> = [];
  for (const e of [...doc.errors, ...doc.warnings]) {
    located.push({ line: e.linePos?.[0]?.line ?? 0, message: e.message.split('\n')[0]! });
  }
  const forbidden = new Set<string>(CONFIG_LIMITS.forbiddenKeys);
  visit(doc, {
    Pair(_, pair) {
      if (pair.key !== null && !isScalar(pair.key)) {
        const { line } = atOffset((pair.key as Node).range?.[0]);
        located.push({ line, message: 'keys must be plain scalars, not lists or mappings' });
      } else if (isScalar(pair.key) && forbidden.has(String(pair.key.value))) {
        const { line } = atOffset(pair.key.range?.[0]);
        located.push({
          line,
          message: `key \`${String(pair.key.value)}\` is not allowed (prototype pollution)`,
        });
      }
    },
  });
  const locate = (path: Path) => atOffset(nodeAt(doc.contents as Node | null, path));
  if (located.length > 0) {
    for (const l of located) problems.push({ path: [], line: l.line, message: l.message, severity: 'error' });
    return { data: undefined, problems, locate };
  }
  try {
    const data = doc.toJS({ maxAliasCount: CONFIG_LIMITS.maxAliasCount });
    return { data, problems, locate };
  } catch (error) {
    problems.push({
      path: [],
      message: `cannot read the file: ${(error as Error).message}`,
      severity: 'error',
    });
    return { data: undefined, problems, locate };
  }
}

/** Offset of the key (for map entries) or the item (for list entries) at `path`, else the deepest found. */
function nodeAt(root: Node | null, path: Path): number | undefined {
  let node: unknown = root;
  let offset = (root as Node | null)?.range?.[0];
  for (const seg of path) {
    if (isMap(node)) {
      const pair = node.items.find(
        (p) => isPair(p) && isScalar(p.key) && String(p.key.value) === String(seg),
      );
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

/** Offset of the first `[`/`{` that opens level `limit + 1`, or undefined. One pass, no allocation. */
function flowTooDeepAt(text: string, limit: number): number | undefined {
  let depth = 0;
  for (let i = 0; i < text.length; i += 1) {
    const c = text.charCodeAt(i);
    if (c === 0x5b || c === 0x7b) {
      depth += 1;
      if (depth > limit) return i;
    } else if ((c === 0x5d || c === 0x7d) && depth > 0) depth -= 1;
  }
  return undefined;
}

/** 1-based line of an offset. */
function lineOf(text: string, offset: number): number {
  let line = 1;
  for (let i = 0; i < offset; i += 1) if (text.charCodeAt(i) === 0x0a) line += 1;
  return line;
}
