import { InvalidOptionsError } from '../errors/options.js';

export interface NumberRule<D extends number | undefined> {
  /** Used when the value is `undefined`. */
  readonly default: D;
  readonly min?: number;
  readonly max?: number;
  /** When true, the value must be an integer. */
  readonly integer?: boolean;
  /** When true, `min` itself is not allowed (an open lower bound). */
  readonly exclusiveMin?: boolean;
}

const describe = (value: unknown): string => {
  if (typeof value === 'string') return JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value);
  if (typeof value === 'number' || typeof value === 'boolean' || value == null) return String(value);
  return Array.isArray(value) ? 'an array' : `a ${typeof value}`;
};

const range = (rule: NumberRule<number | undefined>): string => {
  const lo = rule.min === undefined ? '' : `${rule.exclusiveMin ? '(' : '['}${rule.min}`;
  const hi = rule.max === undefined ? '' : `${rule.max}]`;
  if (lo && hi) return ` in ${lo}, ${hi}`;
  if (lo) return rule.exclusiveMin ? ` > ${rule.min}` : ` >= ${rule.min}`;
  return hi ? ` <= ${rule.max}` : '';
};

/**
 * Collects every problem with a set of options, then throws them together (guide: "validated once,
 * at construction, every problem reported together"). Reads return the default for a bad value so
 * validation can go on to the next field.
 */
export class OptionsValidator {
  readonly #context: string;
  readonly #problems: string[] = [];

  constructor(context: string) {
    this.#context = context;
  }

  get problems(): readonly string[] {
    return this.#problems;
  }

  /** Records a problem found by custom logic. */
  problem(message: string): void {
    this.#problems.push(message);
  }

  number<D extends number | undefined>(name: string, value: unknown, rule: NumberRule<D>): number | D {
    if (value === undefined) return rule.default;
    const kind = rule.integer ? 'an integer' : 'a finite number';
    const ok =
      typeof value === 'number' &&
      Number.isFinite(value) &&
      (!rule.integer || Number.isInteger(value)) &&
      (rule.min === undefined || (rule.exclusiveMin ? value > rule.min : value >= rule.min)) &&
      (rule.max === undefined || value <= rule.max);
    if (ok) return value as number;
    this.#problems.push(`\`${name}\` must be ${kind}${range(rule)}, got ${describe(value)}`);
    return rule.default;
  }

  boolean(name: string, value: unknown, fallback: boolean): boolean {
    if (value === undefined) return fallback;
    if (typeof value === 'boolean') return value;
    this.#problems.push(`\`${name}\` must be true or false, got ${describe(value)}`);
    return fallback;
  }

  string<D extends string | undefined>(
    name: string,
    value: unknown,
    fallback: D,
    pattern?: { test(s: string): boolean; describe: string },
  ): string | D {
    if (value === undefined) return fallback;
    if (typeof value === 'string' && value.length > 0 && (!pattern || pattern.test(value))) return value;
    const what = pattern ? pattern.describe : 'a non-empty string';
    this.#problems.push(`\`${name}\` must be ${what}, got ${describe(value)}`);
    return fallback;
  }

  oneOf<T extends string, D extends T | undefined>(
    name: string,
    value: unknown,
    allowed: readonly T[],
    fallback: D,
  ): T | D {
    if (value === undefined) return fallback;
    if (typeof value === 'string' && (allowed as readonly string[]).includes(value)) return value as T;
    this.#problems.push(`\`${name}\` must be one of ${allowed.join(', ')}, got ${describe(value)}`);
    return fallback;
  }

  /** Throws one {@link InvalidOptionsError} listing every problem, when there is any. */
  done(): void {
    if (this.#problems.length > 0) throw new InvalidOptionsError(this.#context, this.#problems);
  }
}
