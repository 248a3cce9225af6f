import { re2Problem } from './re2.js';
import { isNamedOutcomeKey, OUTCOME_WORDS } from './sources/types.js';

/**
 * The few PromQL pieces the generators build, in one place so quoting is done right once: a label
 * value from the user's config (a dependency or endpoint name) is always a quoted string literal,
 * never spliced into the query text raw.
 */

export type MatchOp = '=' | '!=' | '=~' | '!~';
export type Matcher = readonly [label: string, op: MatchOp, value: string];

/**
 * A lone UTF-16 surrogate: JSON writes it `\ud800`, which Prometheus refuses ("escape sequence is an
 * invalid Unicode code point") — the whole query or rule file with it. No series holds one either: an
 * exporter writing UTF-8 puts U+FFFD in its place, so that is what a matcher must say.
 */
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;

/**
 * Characters JSON leaves raw that Prometheus cannot read raw: DEL, the C1 controls, BOM, U+FFFE/U+FFFF
 * (its YAML reader refuses a rule file holding one: "control characters are not allowed"), U+2028/
 * U+2029 (line breaks to that YAML 1.1 reader, which then cuts the expression), and U+FFFD itself (the
 * PromQL lexer reads it as a decoding error: "invalid UTF-8 rune"). Escaped, PromQL reads the same
 * character.
 */
const NOT_PRINTABLE = /[\u007f-\u009f\u2028\u2029\ufeff\ufffd-\uffff]/g;
const escapeUnicode = (ch: string): string => `\\u${ch.charCodeAt(0).toString(16).padStart(4, '0')}`;

/** A PromQL string literal (double-quoted, Go escapes; JSON's escapes are a subset PromQL accepts). */
export function quote(value: string): string {
  return JSON.stringify(value.replace(LONE_SURROGATE, '\ufffd')).replace(NOT_PRINTABLE, escapeUnicode);
}

/** An RE2 pattern matching exactly one of `values` (each escaped). */
export function oneOf(values: readonly string[]): string {
  return values.map((v) => v.replace(/[\\^$.|?*+()[\]{}]/g, '\\$&')).join('|');
}

/** `metric{label="value",...}`. */
export function selector(metric: string, matchers: readonly Matcher[] = []): string {
  if (matchers.length === 0) return metric;
  return `${metric}{${matchers.map(([label, op, value]) => `${label}${op}${quote(value)}`).join(',')}}`;
}

/** `rate(selector[window])`. */
export function rate(metric: string, matchers: readonly Matcher[], window: string): string {
  return `rate(${selector(metric, matchers)}[${window}])`;
}

/** `increase(selector[window])`: a counter's growth over the window (rate × window, extrapolated alike). */
export function increase(metric: string, matchers: readonly Matcher[], window: string): string {
  return `increase(${selector(metric, matchers)}[${window}])`;
}

/** `sum by (labels) (expr)`. */
export function sumBy(labels: readonly string[], expr: string): string {
  return `sum by (${labels.join(', ')}) (${expr})`;
}

/** `sum without (labels) (expr)`. */
export function sumWithout(labels: readonly string[], expr: string): string {
  return `sum without (${labels.join(', ')}) (${expr})`;
}

/** A threshold as PromQL reads it: 12 significant digits, never NaN or Infinity. */
export function num(value: number): string {
  if (!Number.isFinite(value)) throw new RangeError(`not a finite threshold: ${value}`);
  return String(Number(value.toPrecision(12)));
}

/** `histogram_quantile(q, expr)`. */
export function histogramQuantile(q: number, expr: string): string {
  return `histogram_quantile(${num(q)}, ${expr})`;
}

/** A label name, as PromQL and the exposition format spell it. */
export const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;
/** A metric name. */
export const METRIC_NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;

/** Labels a selector of a histogram's series must not name: the bucket bound and the metric name. */
const RESERVED_LABELS = new Set(['le', '__name__']);

const STRING_ESCAPES: Readonly<Record<string, string>> = {
  '\\': '\\',
  '"': '"',
  "'": "'",
  n: '\n',
  t: '\t',
  r: '\r',
  a: '\x07',
  b: '\b',
  f: '\f',
  v: '\v',
};

/**
 * Reads a PromQL label-matcher list, as a user writes it after a metric name: `{job="orders",
 * instance=~"pod-.*"}` (the braces may be left out). Strings are double- or single-quoted with Go's
 * escapes, or raw in backticks. The matchers come back as data, so every query prazo builds quotes them
 * again itself (`selector`): a config value is never spliced into a query raw. The regex of a `=~` or
 * `!~` matcher must be one Go's RE2 compiles, as Prometheus does (`re2Problem`): a regex it refuses
 * would come back as a rule file promtool refuses or a query Prometheus answers with an error.
 * Returns the problem in words instead of throwing.
 */
export function parseSelector(text: string): { matchers: Matcher[] } | { problem: string } {
  let s = text.trim();
  if (s.startsWith('{')) {
    if (!s.endsWith('}')) return { problem: 'a selector that opens with `{` must close with `}`' };
    s = s.slice(1, -1);
  }
  const matchers: Matcher[] = [];
  let i = 0;
  const space = (): void => {
    while (i < s.length && /\s/.test(s[i]!)) i += 1;
  };
  const fail = (what: string): { problem: string } => ({ problem: `${what} at character ${i + 1}` });
  for (;;) {
    space();
    if (i >= s.length) break;
    const name = /^[a-zA-Z_][a-zA-Z0-9_]*/.exec(s.slice(i, i + 256))?.[0];
    if (name === undefined) return fail('expected a label name');
    if (RESERVED_LABELS.has(name)) return fail(`\`${name}\` cannot be matched here (prazo sets it)`);
    i += name.length;
    space();
    const op = (['=~', '!~', '!=', '='] as const).find((o) => s.startsWith(o, i));
    if (op === undefined) return fail(`expected =, !=, =~ or !~ after ${name}`);
    i += op.length;
    space();
    const delimiter = s[i];
    if (delimiter !== '"' && delimiter !== "'" && delimiter !== '`')
      return fail(`expected a quoted value after ${name}${op}`);
    i += 1;
    let value = '';
    for (;;) {
      const ch = s[i];
      if (ch === undefined) return fail('unterminated string');
      i += 1;
      if (ch === delimiter) break;
      if (ch === '\\' && delimiter !== '`') {
        const esc = s[i];
        if (esc !== undefined && STRING_ESCAPES[esc] !== undefined) {
          value += STRING_ESCAPES[esc];
          i += 1;
        } else if (esc === 'u' && /^[0-9a-fA-F]{4}$/.test(s.slice(i + 1, i + 5))) {
          value += String.fromCharCode(Number.parseInt(s.slice(i + 1, i + 5), 16));
          i += 5;
        } else return fail('unknown escape in a string');
      } else if (ch === '\n' && delimiter !== '`') return fail('a line break inside a string');
      else value += ch;
    }
    if (op === '=~' || op === '!~') {
      // Prometheus compiles the value with Go's RE2, not JavaScript's RegExp (see re2.ts).
      const problem = re2Problem(value);
      if (problem !== undefined)
        return {
          problem: `the regex of ${name}${op}${quote(value)} is not one Prometheus compiles (RE2): ${problem}`,
        };
    }
    matchers.push([name, op, value]);
    space();
    if (i >= s.length) break;
    if (s[i] !== ',') return fail('expected , between matchers');
    i += 1;
  }
  return { matchers };
}

/**
 * The matcher of the successful calls of a histogram whose `label` says how each call ended (see
 * `OUTCOME_WORDS`): outcome words match `success|ok`; a status matches anything but a timeout, an
 * error or a cancellation. Case-insensitive, like `classifyOutcome`.
 */
export function successMatcher(label: string): Matcher {
  if (isNamedOutcomeKey(label)) return [label, '=~', `(?i)${OUTCOME_WORDS.named.success}`];
  const { timeout, error, cancelled } = OUTCOME_WORDS.status;
  return [label, '!~', `(?i)${timeout}|${error}|${cancelled}`];
}

const DURATION_UNITS_MS: Readonly<Record<string, number>> = {
  y: 365 * 86_400_000,
  w: 7 * 86_400_000,
  d: 86_400_000,
  h: 3_600_000,
  m: 60_000,
  s: 1_000,
  ms: 1,
};

/**
 * A Prometheus duration (`7d`, `1h30m`, `90s`, `500ms`; units y w d h m s ms, largest first) in ms, or
 * undefined for anything else. A plain number is not a duration (is `60` seconds or minutes?).
 */
export function parseDuration(text: string): number | undefined {
  const s = text.trim();
  if (s === '' || s.length > 64 || !/^(\d+(ms|[ywdhms]))+$/.test(s)) return undefined;
  let total = 0;
  let previous = Number.POSITIVE_INFINITY;
  for (const [, digits, unit] of s.matchAll(/(\d+)(ms|[ywdhms])/g)) {
    const size = DURATION_UNITS_MS[unit!]!;
    if (size >= previous) return undefined; // `1m1h`, `1h1h`: units go from largest to smallest, once
    previous = size;
    total += Number(digits) * size;
  }
  return Number.isSafeInteger(total) ? total : undefined;
}

/** A duration in ms as PromQL writes it in a range selector (`[3600000ms]` is exact; `[1h]` reads better). */
export function formatDuration(ms: number): string {
  for (const unit of ['d', 'h', 'm', 's'] as const) {
    const size = DURATION_UNITS_MS[unit]!;
    if (ms >= size && ms % size === 0) return `${ms / size}${unit}`;
  }
  return `${Math.round(ms)}ms`;
}
