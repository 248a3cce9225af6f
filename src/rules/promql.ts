/**
 * The few PromQL pieces the generators build, in one place so quoting is done right once: a label
 * value from the user's config (a dependency or endpoint name) is always a quoted string literal,
 * never spliced into the query text raw.
 */

export type MatchOp = '=' | '!=' | '=~' | '!~';
export type Matcher = readonly [label: string, op: MatchOp, value: string];

/** A PromQL string literal (double-quoted, Go escapes; JSON's escapes are a subset PromQL accepts). */
export function quote(value: string): string {
  return JSON.stringify(value);
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
