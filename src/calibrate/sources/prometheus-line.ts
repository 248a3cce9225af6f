import { SourceError } from './types.js';

/**
 * One sample line of the Prometheus text exposition format (0.0.4, and the OpenMetrics subset a
 * scrape shows): `name{label="value",...} value [timestamp]`, with an optional OpenMetrics exemplar
 * (` # {...} value`) ignored. Labels land in a `Map`, never in a plain object (no prototype keys).
 */
export interface PromSample {
  readonly name: string;
  readonly labels: ReadonlyMap<string, string>;
  readonly value: number;
}

const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*/;
const LABEL = /^[a-zA-Z_][a-zA-Z0-9_]*/;
const ESCAPES: Readonly<Record<string, string>> = { '\\': '\\', '"': '"', n: '\n' };

/**
 * Prometheus float syntax: decimal/exponent, or ±Inf / NaN. A decimal past the largest float (`1e400`)
 * is no number, as Go's ParseFloat says (ErrRange) and `histogram_quantile` skips such a bucket: read
 * as Infinity, `le="1e400"` merged into the `+Inf` bucket and counted its calls twice.
 */
export function parsePromFloat(raw: string): number | undefined {
  const s = raw.trim();
  if (/^[+-]?inf$/i.test(s)) return s.startsWith('-') ? Number.NEGATIVE_INFINITY : Number.POSITIVE_INFINITY;
  if (/^nan$/i.test(s)) return Number.NaN;
  if (!/^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/.test(s)) return undefined;
  const value = Number(s);
  return Number.isFinite(value) ? value : undefined;
}

function readLabels(
  line: string,
  start: number,
  lineNo: number,
): { labels: Map<string, string>; end: number } {
  const labels = new Map<string, string>();
  let i = start + 1; // past "{"
  const fail = (what: string): never => {
    throw new SourceError(lineNo, `malformed labels: ${what}`);
  };
  for (;;) {
    while (line[i] === ' ') i += 1;
    if (line[i] === '}') return { labels, end: i + 1 };
    const key = LABEL.exec(line.slice(i, i + 256))?.[0] ?? fail('expected a label name');
    i += key.length;
    while (line[i] === ' ') i += 1;
    if (line[i] !== '=' || line[i + 1] !== '"') fail(`expected ="…" after ${key}`);
    i += 2;
    let value = '';
    for (;;) {
      const ch = line[i];
      if (ch === undefined) fail('unterminated label value');
      if (ch === '"') break;
      if (ch === '\\') {
        const esc = ESCAPES[line[i + 1] ?? ''];
        if (esc === undefined) fail('bad escape in label value');
        value += esc;
        i += 2;
      } else {
        value += ch;
        i += 1;
      }
    }
    i += 1;
    if (labels.has(key)) fail(`duplicate label ${key}`);
    labels.set(key, value);
    while (line[i] === ' ') i += 1;
    if (line[i] === ',') i += 1;
    else if (line[i] !== '}') fail('expected , or }');
  }
}

/** Parses a non-comment, non-blank line; throws `SourceError` naming the line on bad syntax. */
export function parsePromLine(line: string, lineNo: number): PromSample {
  const name = NAME.exec(line)?.[0];
  if (name === undefined) throw new SourceError(lineNo, 'expected a metric name');
  let rest = line.slice(name.length);
  let labels: ReadonlyMap<string, string> = new Map();
  if (rest.startsWith('{')) {
    const read = readLabels(line, name.length, lineNo);
    labels = read.labels;
    rest = line.slice(read.end);
  }
  const exemplar = rest.indexOf(' # ');
  if (exemplar >= 0) rest = rest.slice(0, exemplar);
  const parts = rest.trim().split(/[ \t]+/);
  if (parts.length < 1 || parts.length > 2 || parts[0] === '') {
    throw new SourceError(lineNo, `expected "value [timestamp]" after ${name}`);
  }
  const value = parsePromFloat(parts[0]!);
  if (value === undefined)
    throw new SourceError(lineNo, `not a number: ${JSON.stringify(parts[0]!.slice(0, 40))}`);
  if (parts[1] !== undefined && parsePromFloat(parts[1]) === undefined) {
    throw new SourceError(lineNo, 'malformed timestamp');
  }
  return { name, labels, value };
}
