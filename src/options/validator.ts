import { quoteLine, thrownText } from '../errors/base.js';
import { InvalidOptionsError } from '../errors/options.js';
import {
  type AnySpec,
  isOptionsObject,
  type NumberRules,
  type OptionPath,
  type OptionsSchema,
  type Resolved,
  type Specs,
} from './declare.js';
import { closestName, foreignNameHint } from './suggest.js';

/** One problem: where (a key path below the options) and what (a predicate: "must be ...", "is required"). */
export interface OptionIssue {
  readonly path: OptionPath;
  readonly message: string;
  /** An unknown key: `message` is then only the hint ("; did you mean `attempts`?"), maybe empty. */
  readonly unknown?: boolean;
}

/** One issue as a line of an `InvalidOptionsError`: "`retryBudget.maxRatio` must be ..., got 20". */
export function formatIssue(issue: OptionIssue): string {
  const where = formatOptionPath(issue.path);
  if (issue.unknown) return `unknown option \`${where}\`${issue.message}`;
  return issue.path.length === 0 ? issue.message : `\`${where}\` ${issue.message}`;
}

/**
 * Where options come from. `code`: a caller's object (every option allowed). `data`: a config file,
 * where strings are trimmed and what only code can give (a clock, a function) is refused.
 */
export type OptionsMode = 'code' | 'data';

/** `retryBudget.maxRatio`, `dependencies[2].hedge`. */
export function formatOptionPath(path: OptionPath): string {
  let out = '';
  for (const seg of path) {
    out += typeof seg === 'number' ? `[${seg}]` : out === '' ? shownKey(seg) : `.${shownKey(seg)}`;
  }
  return out;
}

/** A key longer than this is shown cut (an unknown key is the caller's text, of any length). */
const MAX_SHOWN_KEY = 64;

/**
 * A key as a problem shows it: an unknown key is whatever the caller's object (or file) held, so a
 * megabyte-long one is cut, as a value is, and a newline or a terminal escape in it is escaped: one
 * problem stays one line of plain text.
 */
const shownKey = (key: string): string => quoteLine(key, MAX_SHOWN_KEY);

/** A single number's rule (a value outside a declared schema), its default with it. */
export interface NumberRule<D extends number | undefined>
  extends Pick<NumberRules, 'min' | 'max' | 'integer' | 'exclusiveMin'> {
  /** Used when the value is `undefined`. */
  readonly default: D;
}

const describe = (value: unknown): string => {
  if (typeof value === 'string') return JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value);
  if (typeof value === 'number' || typeof value === 'boolean' || value == null) return String(value);
  if (typeof value === 'function') return 'a function';
  if (kindOf(value) === 'array') return 'an array';
  return typeof value === 'object' ? 'an object' : `a ${typeof value}`;
};

/**
 * What a value is to the validator: options, an array, something else, or an object that cannot be
 * inspected at all (a revoked Proxy, whose every inspection throws): then the reason, as text.
 */
function kindOf(value: unknown): 'options' | 'array' | 'other' | { readonly unreadable: string } {
  try {
    if (isOptionsObject(value)) return 'options';
    return Array.isArray(value) ? 'array' : 'other';
  } catch (error) {
    return { unreadable: thrownText(error, 120) };
  }
}

/** Whether `test` passes `value`; a test that throws on it (a revoked Proxy, a throwing getter) fails it. */
function passes(test: (value: unknown) => boolean, value: unknown): boolean {
  try {
    return test(value);
  } catch {
    return false;
  }
}

/**
 * What `raw` gives, each value read once: its own keys (what the unknown-key check lists) and the
 * value of each declared key (own or inherited, as a class's getter). An options object that cannot
 * be read (a revoked Proxy) or a getter that throws is a problem of its own, never a TypeError out of
 * the validation; a getter is not asked twice (it could answer differently the second time).
 */
function readGiven(
  raw: Record<string, unknown>,
  keys: readonly string[],
  unreadable: (key: string | undefined, reason: string) => void,
): Record<string, unknown> {
  // No prototype: an own `__proto__` key stays a key (and is reported unknown), as in `raw`.
  const given = Object.create(null) as Record<string, unknown>;
  let own: string[];
  try {
    own = Object.keys(raw);
  } catch (error) {
    unreadable(undefined, thrownText(error, 120));
    return given;
  }
  for (const key of own) given[key] = undefined;
  for (const key of keys) {
    try {
      const value = raw[key];
      if (value !== undefined || Object.hasOwn(given, key)) given[key] = value;
    } catch (error) {
      unreadable(key, thrownText(error, 120));
    }
  }
  return given;
}

const range = (rule: { min?: number; max?: number; exclusiveMin?: boolean }): string => {
  const lo = rule.min === undefined ? '' : `${rule.exclusiveMin ? '(' : '['}${rule.min}`;
  const hi = rule.max === undefined ? '' : `${rule.max}]`;
  if (lo && hi) return ` in ${lo}, ${hi}`;
  if (lo) return rule.exclusiveMin ? ` > ${rule.min}` : ` >= ${rule.min}`;
  return hi ? ` <= ${rule.max}` : '';
};

const DEFAULT_MAX_LENGTH = 200;

/** Unknown keys of one object reported one by one; past this, one line counts the rest. */
const MAX_UNKNOWN_REPORTED = 20;

/** The keys of `schema` and of the schemas nested in it, as dotted paths (for "did you mean"). */
function nestedKeys(schema: OptionsSchema<Specs>, prefix: string, out: string[], depth: number): string[] {
  for (const key of schema.keys) {
    const nested = schema.specs[key]!.schema;
    if (prefix !== '') out.push(`${prefix}${key}`);
    if (nested !== undefined && depth < 2) nestedKeys(nested, `${prefix}${key}.`, out, depth + 1);
  }
  return out;
}

/**
 * The nested option a misplaced or misspelt key meant: `histogram_file` → `histogram.file` (the whole
 * path), `maxRatio` given at the top → `retryBudget.maxRatio` (its last segment).
 */
function nestedName(key: string, paths: readonly string[]): string | undefined {
  const whole = closestName(key, paths);
  if (whole !== undefined) return whole;
  const byLast = new Map<string, string>();
  for (const path of paths) {
    const last = path.slice(path.lastIndexOf('.') + 1);
    if (!byLast.has(last)) byLast.set(last, path);
  }
  const last = closestName(key, byLast.keys());
  return last === undefined ? undefined : byLast.get(last);
}

/**
 * What follows "unknown option `key`": another library's name for a prazo concept (`timeout`,
 * `retries`), else the nearest known key, else (under `label`, when they are few) the keys there are.
 */
function unknownHint(key: string, known: readonly string[], near: string | undefined, label: string): string {
  const foreign = foreignNameHint(key, known);
  if (foreign !== undefined) return foreign;
  if (near !== undefined) return `; did you mean \`${near}\`?`;
  return label !== '' && known.length <= 16 ? ` (${label} here: ${known.join(', ')})` : '';
}

/**
 * Collects every problem with a set of options, then throws them together (guide: "validated once,
 * at construction, every problem reported together"). {@link OptionsValidator.read} checks a whole
 * options object against its declaration (see `declare.ts`); the single-value reads are for values
 * that are not options of a declared schema (a per-call argument). A bad value reads as its default
 * so validation can go on to the next field.
 */
export class OptionsValidator {
  readonly #context: string;
  readonly #mode: OptionsMode;
  readonly #issues: OptionIssue[] = [];

  constructor(context: string, mode: OptionsMode = 'code') {
    this.#context = context;
    this.#mode = mode;
  }

  /** Every problem so far, as one line each: "`retryBudget.maxRatio` must be ..., got 20". */
  get problems(): readonly string[] {
    return this.#issues.map(formatIssue);
  }

  /** Every problem so far, with its path. */
  get issues(): readonly OptionIssue[] {
    return this.#issues;
  }

  /**
   * Records a problem found by custom logic: a whole sentence, or (with `path`) a predicate about the
   * option at `path` ("must not exceed `maxMs` (5000)").
   */
  problem(message: string, path: OptionPath = []): void {
    this.#issues.push({ path, message });
  }

  /**
   * Runs `build` (another component's constructor, which validates its own options): its
   * InvalidOptionsError's problems join this list, each after `prefix`, and undefined is returned;
   * any other error is thrown on.
   */
  absorb<R>(build: () => R, prefix = ''): R | undefined {
    try {
      return build();
    } catch (error) {
      if (!(error instanceof InvalidOptionsError)) throw error;
      for (const p of error.problems) this.problem(`${prefix}${p}`);
      return undefined;
    }
  }

  /**
   * Reads `raw` as the options `schema` declares, at `at` below the top: rejects unknown keys (with a
   * "did you mean"), checks each value against its spec, applies defaults, then runs the schema's
   * cross-field check when its fields read cleanly. `undefined` reads as no options at all.
   */
  read<S extends Specs>(schema: OptionsSchema<S>, raw: unknown, at: OptionPath = []): Resolved<S> {
    let given: Record<string, unknown> = {};
    const failed = new Set<string>();
    const kind = raw === undefined ? 'none' : kindOf(raw);
    const top = at.length === 0 ? 'options ' : '';
    if (kind === 'options') {
      given = readGiven(raw as Record<string, unknown>, schema.keys, (key, reason) => {
        if (key === undefined) this.problem(`${top}cannot be read: ${reason}`, at);
        else {
          this.problem(`cannot be read: ${reason}`, [...at, key]);
          failed.add(key);
        }
      });
    } else if (typeof kind === 'object') {
      this.problem(`${top}cannot be read: ${kind.unreadable}`, at);
    } else if (kind !== 'none') {
      const what = this.#mode === 'data' ? 'a mapping' : 'an object';
      this.problem(`${top}must be ${what}, got ${describe(raw)}`, at);
    }
    this.#unknownKeys(
      given,
      (key) => Object.hasOwn(schema.specs, key),
      (key) => this.#unknown(schema as unknown as OptionsSchema<Specs>, key),
      at,
    );
    const values: Record<string, unknown> = {};
    for (const key of schema.keys) {
      if (failed.has(key)) {
        values[key] = schema.specs[key]!.default;
        continue;
      }
      const before = this.#issues.length;
      values[key] = this.#field(schema.specs[key]!, given[key], [...at, key], given);
      if (this.#issues.length > before) failed.add(key);
    }
    const report = (path: string | OptionPath, message: string): void =>
      this.problem(message, [...at, ...(typeof path === 'string' ? [path] : path)]);
    const valid = (...keys: string[]): boolean => keys.every((k) => !failed.has(k));
    schema.check(values as Resolved<S>, report, { given, valid });
    return values as Resolved<S>;
  }

  /**
   * `raw` read once, for options read key by key rather than through a declaration: its own keys,
   * and the value of each of `keys` (own or inherited). An object that cannot be read (a revoked
   * Proxy) or a getter that throws is a problem, at its key, and reads as absent ({@link read} reads
   * what it is given the same way).
   */
  snapshot(raw: object, keys: Iterable<string>, at: OptionPath = []): Record<string, unknown> {
    return readGiven(raw as Record<string, unknown>, [...keys], (key, reason) =>
      key === undefined
        ? this.problem(`${at.length === 0 ? 'options ' : ''}cannot be read: ${reason}`, at)
        : this.problem(`cannot be read: ${reason}`, [...at, key]),
    );
  }

  /**
   * Reports every key of `raw` that is not in `known`, as {@link read} reports undeclared ones (the
   * same "did you mean", the same cap): for options read key by key rather than from a declaration.
   */
  unknownKeys(raw: Record<string, unknown>, known: ReadonlySet<string>, at: OptionPath = []): void {
    const list = [...known];
    this.#unknownKeys(
      raw,
      (key) => known.has(key),
      (key) => unknownHint(key, list, closestName(key, known), ''),
      at,
    );
  }

  #unknownKeys(
    given: Record<string, unknown>,
    isKnown: (key: string) => boolean,
    hint: (key: string) => string,
    at: OptionPath,
  ): void {
    let unknown = 0;
    for (const key of Object.keys(given)) {
      if (isKnown(key)) continue;
      unknown += 1;
      if (unknown <= MAX_UNKNOWN_REPORTED)
        this.#issues.push({ path: [...at, key], message: hint(key), unknown: true });
    }
    if (unknown > MAX_UNKNOWN_REPORTED) {
      const more = unknown - MAX_UNKNOWN_REPORTED;
      this.problem(
        `${at.length === 0 ? 'the options hold' : 'holds'} ${more} more unknown key(s), not listed`,
        at,
      );
    }
  }

  /** The hint of an undeclared key of `schema` (a nested key's whole path counts as near). */
  #unknown(schema: OptionsSchema<Specs>, key: string): string {
    const known = this.#mode === 'data' ? schema.keys.filter((k) => !schema.specs[k]!.codeOnly) : schema.keys;
    const near = closestName(key, schema.keys) ?? nestedName(key, nestedKeys(schema, '', [], 0));
    return unknownHint(key, known, near, this.#mode === 'data' ? 'keys' : 'options');
  }

  #field(s: AnySpec, value: unknown, path: OptionPath, siblings: Record<string, unknown>): unknown {
    if (value === undefined) {
      if (s.required) this.problem('is required', path);
      return s.default;
    }
    switch (s.kind) {
      case 'number': {
        const wide = s.widen !== undefined && siblings[s.widen.when] === true;
        return this.#number(wide ? { ...s, min: s.widen!.min, max: s.widen!.max } : s, value, path);
      }
      case 'boolean':
        return this.#boolean(value, path, s.default);
      case 'string':
        return this.#string(s, value, path);
      case 'oneOf':
        return this.#oneOf(s.values!, value, path, s.default);
      case 'value':
        if (this.#mode === 'data' && s.codeOnly) {
          this.problem('can only be given in code, not in a config file', path);
          return undefined;
        }
        if (passes(s.value!.test, value)) return value;
        this.problem(`must be ${s.value!.describe}`, path);
        return undefined;
      case 'nested':
        return this.#nested(s, value, path);
    }
  }

  #number(rule: NumberRule<number | undefined>, value: unknown, path: OptionPath): unknown {
    const kind = rule.integer ? 'an integer' : 'a finite number';
    const ok =
      typeof value === 'number' &&
      Number.isFinite(value) &&
      (!rule.integer || Number.isInteger(value)) &&
      (rule.min === undefined || (rule.exclusiveMin ? value > rule.min : value >= rule.min)) &&
      (rule.max === undefined || value <= rule.max);
    if (ok) return value;
    this.problem(`must be ${kind}${range(rule)}, got ${describe(value)}`, path);
    return rule.default;
  }

  #boolean(value: unknown, path: OptionPath, fallback: unknown): unknown {
    if (typeof value === 'boolean') return value;
    this.problem(`must be true or false, got ${describe(value)}`, path);
    return fallback;
  }

  #string(s: AnySpec, value: unknown, path: OptionPath): unknown {
    const maxLength = s.maxLength ?? DEFAULT_MAX_LENGTH;
    const text = typeof value === 'string' && this.#mode === 'data' ? value.trim() : value;
    const ok =
      typeof text === 'string' &&
      text.length > 0 &&
      text.length <= maxLength &&
      (s.pattern === undefined || s.pattern.test(text));
    if (ok) return text;
    const what = s.pattern?.describe ?? `a string of 1 to ${maxLength} characters`;
    this.problem(`must be ${what}, got ${describe(value)}`, path);
    return s.default;
  }

  #oneOf(allowed: readonly string[], value: unknown, path: OptionPath, fallback: unknown): unknown {
    if (typeof value === 'string' && allowed.includes(value)) return value;
    const near = typeof value === 'string' ? closestName(value, allowed) : undefined;
    const hint = near === undefined ? '' : ` (did you mean \`${near}\`?)`;
    this.problem(`must be one of ${allowed.join(', ')}, got ${describe(value)}${hint}`, path);
    return fallback;
  }

  #nested(s: AnySpec, value: unknown, path: OptionPath): unknown {
    const alt = s.alternative;
    if (alt === 'boolean' && typeof value === 'boolean') return value;
    if (alt !== undefined && alt !== 'boolean' && this.#mode === 'code' && passes(alt.test, value))
      return value;
    const kind = kindOf(value);
    if (kind === 'options') {
      this.read(s.schema!, value, path);
      return value; // as given: the component the options are for applies its own defaults
    }
    if (typeof kind === 'object') {
      this.problem(`cannot be read: ${kind.unreadable}`, path);
      return undefined;
    }
    const instead = alt === undefined ? '' : alt === 'boolean' ? 'true, false or ' : `${alt.describe} or `;
    const what = this.#mode === 'data' ? 'a mapping' : 'an options object';
    this.problem(`must be ${instead}${what}, got ${describe(value)}`, path);
    return undefined;
  }

  // Single values (arguments that are not options of a declared schema).

  number<D extends number | undefined>(name: string, value: unknown, rule: NumberRule<D>): number | D {
    if (value === undefined) return rule.default;
    return this.#number(rule, value, [name]) as number | D;
  }

  boolean(name: string, value: unknown, fallback: boolean): boolean {
    if (value === undefined) return fallback;
    return this.#boolean(value, [name], fallback) as boolean;
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
    this.problem(`must be ${what}, got ${describe(value)}`, [name]);
    return fallback;
  }

  oneOf<T extends string, D extends T | undefined>(
    name: string,
    value: unknown,
    allowed: readonly T[],
    fallback: D,
  ): T | D {
    if (value === undefined) return fallback;
    return this.#oneOf(allowed, value, [name], fallback) as T | D;
  }

  /** Throws one {@link InvalidOptionsError} listing every problem, when there is any. */
  done(): void {
    if (this.#issues.length > 0) throw new InvalidOptionsError(this.#context, this.problems);
  }
}

/**
 * Validates `raw` against `schema` for `context` (a public function's name) and returns the resolved
 * values, or throws one `InvalidOptionsError` listing every problem.
 */
export function readOptions<S extends Specs>(
  context: string,
  schema: OptionsSchema<S>,
  raw: unknown,
): Resolved<S> {
  const v = new OptionsValidator(context);
  const values = v.read(schema, raw);
  v.done();
  return values;
}

/**
 * Whether `value` passes `spec` (given, not undefined): the validator's rules for the kinds per-call
 * options use, without allocating. A nested spec passes when its object does; any other kind is left
 * to the validator.
 */
function accepts(spec: AnySpec, value: unknown): boolean {
  switch (spec.kind) {
    case 'boolean':
      return typeof value === 'boolean';
    case 'number':
      return (
        typeof value === 'number' &&
        Number.isFinite(value) &&
        (spec.integer !== true || Number.isInteger(value)) &&
        (spec.min === undefined || (spec.exclusiveMin ? value > spec.min : value >= spec.min)) &&
        (spec.max === undefined || value <= spec.max)
      );
    case 'value':
      return spec.value!.test(value);
    case 'nested':
      return isOptionsObject(value) && clean(spec.schema!, value);
    default:
      return false;
  }
}

/** True when every key of `raw` is declared by `schema` and every value given passes its spec. */
function clean(schema: OptionsSchema<Specs>, raw: Record<string, unknown>): boolean {
  const specs = schema.specs;
  for (const key in raw) {
    if (!Object.hasOwn(specs, key)) return false;
    const value = raw[key];
    if (value !== undefined && !accepts(specs[key]!, value)) return false;
  }
  return true;
}

/**
 * Checks options given per call on a hot path (`dependency.execute`'s, prazo/http's per-call options,
 * a deadline's clock, a classifier's flags) against their declaration: one loop over the given keys
 * that allocates nothing while every key is declared and every value passes; otherwise the validator
 * reads the whole object and throws one `InvalidOptionsError` listing every problem (an unknown key
 * with its "did you mean"), or one that cannot be read (a revoked Proxy, a getter that throws).
 */
export function checkCallOptions<S extends Specs>(
  context: string,
  schema: OptionsSchema<S>,
  raw: unknown,
): void {
  if (raw === undefined) return;
  try {
    if (isOptionsObject(raw) && clean(schema as unknown as OptionsSchema<Specs>, raw)) return;
  } catch {
    // Unreadable (a revoked Proxy, a getter that throws): the full read says where, as a problem.
  }
  readOptions(context, schema, raw);
}
