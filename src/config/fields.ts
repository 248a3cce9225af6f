import type { Path, RawProblem } from './problem.js';

/**
 * Typed reads of plain data with a path per problem (the config's small schema language). Each read
 * returns `undefined` when the value is missing or wrong, after recording why; reading goes on so
 * that every problem of the file is reported in one pass.
 */
export interface NumberSpec {
  readonly min?: number;
  readonly max?: number;
  readonly exclusiveMin?: boolean;
  readonly integer?: boolean;
  readonly required?: boolean;
  /** Unit for messages, e.g. "ms". */
  readonly unit?: string;
}

export const isRecord = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

const show = (v: unknown): string => {
  if (typeof v === 'string') return JSON.stringify(v.length > 40 ? `${v.slice(0, 40)}…` : v);
  if (v === null || typeof v !== 'object') return String(v);
  return Array.isArray(v) ? 'a list' : 'a mapping';
};

export class Fields {
  constructor(readonly problems: RawProblem[]) {}

  error(path: Path, message: string): void {
    this.problems.push({ path, message, severity: 'error' });
  }

  warning(path: Path, message: string): void {
    this.problems.push({ path, message, severity: 'warning' });
  }

  number(o: Record<string, unknown>, key: string, at: Path, spec: NumberSpec = {}): number | undefined {
    const v = o[key];
    if (v === undefined) {
      if (spec.required) this.error([...at, key], 'is required');
      return undefined;
    }
    const ok =
      typeof v === 'number' &&
      Number.isFinite(v) &&
      (!spec.integer || Number.isInteger(v)) &&
      (spec.min === undefined || (spec.exclusiveMin ? v > spec.min : v >= spec.min)) &&
      (spec.max === undefined || v <= spec.max);
    if (ok) return v;
    const lo = spec.min === undefined ? '' : spec.exclusiveMin ? `(${spec.min}` : `[${spec.min}`;
    const hi = spec.max === undefined ? '' : `${spec.max}]`;
    const range = lo && hi ? ` in ${lo}, ${hi}` : lo ? ` ${spec.exclusiveMin ? '>' : '>='} ${spec.min}` : '';
    const unit = spec.unit ? ` (${spec.unit})` : '';
    this.error(
      [...at, key],
      `must be ${spec.integer ? 'an integer' : 'a number'}${range}${unit}, got ${show(v)}`,
    );
    return undefined;
  }

  boolean(o: Record<string, unknown>, key: string, at: Path): boolean | undefined {
    const v = o[key];
    if (v === undefined || typeof v === 'boolean') return v;
    this.error([...at, key], `must be true or false, got ${show(v)}`);
    return undefined;
  }

  string(
    o: Record<string, unknown>,
    key: string,
    at: Path,
    required = false,
    maxLength = 200,
  ): string | undefined {
    const v = o[key];
    if (v === undefined) {
      if (required) this.error([...at, key], 'is required');
      return undefined;
    }
    if (typeof v === 'string' && v.trim() !== '' && v.length <= maxLength) return v.trim();
    this.error([...at, key], `must be a non-empty string of at most ${maxLength} characters, got ${show(v)}`);
    return undefined;
  }

  oneOf<T extends string>(
    o: Record<string, unknown>,
    key: string,
    at: Path,
    allowed: readonly T[],
  ): T | undefined {
    const v = o[key];
    if (v === undefined) return undefined;
    if (typeof v === 'string' && (allowed as readonly string[]).includes(v)) return v as T;
    this.error([...at, key], `must be one of ${allowed.join(', ')}, got ${show(v)}`);
    return undefined;
  }

  /** A mapping at `key` (or undefined when absent). */
  record(o: Record<string, unknown>, key: string, at: Path): Record<string, unknown> | undefined {
    const v = o[key];
    if (v === undefined) return undefined;
    if (isRecord(v)) return v;
    this.error([...at, key], `must be a mapping, got ${show(v)}`);
    return undefined;
  }

  /** Warns about keys outside `allowed`, suggesting a near one (case, `_`, or one typo away). */
  unknownKeys(o: Record<string, unknown>, at: Path, allowed: readonly string[]): void {
    const norm = (k: string) => k.toLowerCase().replaceAll('_', '');
    for (const key of Object.keys(o)) {
      if (allowed.includes(key)) continue;
      const near =
        allowed.find((a) => norm(a) === norm(key)) ??
        allowed.find((a) => a.length >= 4 && editDistance(norm(a), norm(key)) <= 1);
      this.warning([...at, key], `unknown key${near ? `; did you mean \`${near}\`?` : ' (ignored)'}`);
    }
  }
}

/** Levenshtein distance, bounded inputs (config keys). */
function editDistance(a: string, b: string): number {
  if (Math.abs(a.length - b.length) > 1 || a.length > 64 || b.length > 64) return 2;
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i += 1) {
    const cur = [i];
    for (let j = 1; j <= b.length; j += 1) {
      cur[j] = Math.min(prev[j]! + 1, cur[j - 1]! + 1, prev[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    prev = cur;
  }
  return prev[b.length]!;
}
