import type { Clock } from '../clock/clock.js';

/**
 * The one declaration of a component's options (after Polly v8's options + constants): each option
 * is written once, as a property of a `defineOptions` literal — its name (the key), its type,
 * unit, default and range (the spec), and its documentation (the TSDoc comment on the key, which the
 * derived option type carries to the caller's editor). Everything else is read from that literal:
 *
 * - the public option type: `type RetryBudgetOptions = OptionsOf<typeof RETRY_BUDGET_OPTIONS>`;
 * - validation: `new OptionsValidator('createRetryBudget').read(RETRY_BUDGET_OPTIONS, options)`
 *   checks every key (unknown ones are rejected with a "did you mean"), applies the defaults, runs the
 *   schema's cross-field check, and reports every problem at once in one `InvalidOptionsError`;
 * - the config file: `prazo.config.yaml` reads a dependency with the executor's own declaration (in
 *   data mode: options only code can give — a clock, a function — are refused there);
 * - composition: a component built on another reuses its declarations. `createDependency` nests
 *   the budget's, hedge's and recorder's schemas and spreads the calibration's specs; a client on top
 *   of the executor spreads `DEPENDENCY_OPTIONS.specs` (or picks from it with `pickOptions`)
 *   and adds its own, so a bound or a default changes in one place for every entry point.
 *
 * A spec is plain data (kind, unit, default, bounds) plus a phantom type; it never runs code of its
 * own except the `test` of a `value` (is this a Clock?) and the schema's `check`.
 *
 * @example
 * export const POOL_OPTIONS = defineOptions({
 *   /** Connections in the pool. Integer [1, 10^6]. Required. *\/
 *   size: option.integer({ required: true, min: 1, max: 1e6 }),
 *   /** Arrival rate, req/s. Default 100; (0, 10^7]. *\/
 *   rps: option.number({ default: 100, unit: 'req/s', min: 0, exclusiveMin: true, max: 1e7 }),
 * });
 * export type PoolOptions = OptionsOf<typeof POOL_OPTIONS>; // { size: number; rps?: number }
 */

export type OptionPath = readonly (string | number)[];

export type OptionKind = 'number' | 'boolean' | 'string' | 'oneOf' | 'value' | 'nested';

/** Something a `value` or a nested option's alternative must be, in words, and how to tell. */
export interface ValueTest {
  /** "a Clock (now, epochNow, setTimer, clearTimer)": completes "`clock` must be ...". */
  readonly describe: string;
  readonly test: (value: unknown) => boolean;
}

/** A wider band for a number, allowed when the sibling boolean option `when` is set. */
export interface Widen {
  readonly when: string;
  readonly min?: number;
  readonly max?: number;
}

/**
 * One option. `T` is its type, `Req` whether it is required, `Def` whether it has a fixed default
 * (then `default` holds it, and a read returns it for an absent value).
 */
/** What a number option says of its values. */
export interface NumberRules {
  /** Unit, for documentation ("ms", "req/s"). */
  readonly unit?: string;
  readonly min?: number;
  readonly max?: number;
  /** `min` itself is not allowed (an open lower bound). */
  readonly exclusiveMin?: boolean;
  readonly integer?: boolean;
  /** A wider band allowed when the boolean option `when` is true (`slack` with `forceSlack`). */
  readonly widen?: Widen;
}

export interface OptionSpec<T = unknown, Req extends boolean = boolean, Def extends boolean = boolean>
  extends NumberRules {
  readonly kind: OptionKind;
  readonly required: Req;
  readonly default: Def extends true ? T : undefined;
  /** Strings: longest accepted. Default 200. */
  readonly maxLength?: number;
  /** Strings: a further rule, with its words ("a valid header name"). */
  readonly pattern?: ValueTest;
  /** `oneOf`: the accepted strings. */
  readonly values?: readonly string[];
  /** `value`: what only code can give (a function, an object with methods). */
  readonly value?: ValueTest;
  /** `nested`: the schema of the option's own options. */
  readonly schema?: OptionsSchema<Specs>;
  /** `nested`: what may stand instead of options: `true`/`false`, or a ready instance. */
  readonly alternative?: 'boolean' | ValueTest;
  /** Set on `value` specs: a config file (data mode) cannot give this option. */
  readonly codeOnly: boolean;
  /** Phantom: the option's type. Never set. */
  readonly '~type'?: T;
}

// biome-ignore lint/suspicious/noExplicitAny: the constraint must accept every spec, whatever its type
export type AnySpec = OptionSpec<any, boolean, boolean>;
export type Specs = { readonly [key: string]: AnySpec };

export type ValueOf<X> = X extends OptionSpec<infer T, boolean, boolean> ? T : never;
export type IsRequired<X> = X extends OptionSpec<unknown, true, boolean> ? true : false;
export type ResolvedValue<X> =
  X extends OptionSpec<infer T, infer R, infer D>
    ? R extends true
      ? T
      : D extends true
        ? T
        : T | undefined
    : never;

/**
 * The option type a schema declares: required keys as required properties, the others optional. Each
 * property keeps the TSDoc of its spec.
 */
export type OptionsOf<X extends { readonly specs: Specs }> = {
  readonly [K in keyof X['specs'] as IsRequired<X['specs'][K]> extends true ? K : never]: ValueOf<
    X['specs'][K]
  >;
} & {
  readonly [K in keyof X['specs'] as IsRequired<X['specs'][K]> extends true ? never : K]?: ValueOf<
    X['specs'][K]
  >;
};

/** What a read returns: every key, its default applied (undefined when absent and without one). */
export type Resolved<S extends Specs> = { readonly [K in keyof S]: ResolvedValue<S[K]> };

/** The fixed defaults of a schema, by key (the "constants" half of Polly's options + constants). */
export type Defaults<S extends Specs> = {
  readonly [K in keyof S as S[K] extends OptionSpec<unknown, boolean, true> ? K : never]: ValueOf<S[K]>;
};

/** Reports a cross-field problem at `path` (a key, or a path below the schema). */
export type Report = (path: string | OptionPath, message: string) => void;

/** What a cross-field check sees besides the values. */
export interface CheckContext {
  /** The options as given. */
  readonly given: Readonly<Record<string, unknown>>;
  /** True when every one of `keys` read cleanly (a failed one holds its default among the values). */
  valid(...keys: string[]): boolean;
}

/**
 * A check across fields (`defaultMs` must not exceed `maxMs`), run with the resolved values after the
 * fields are read, whether or not they all read cleanly (every problem is reported in one pass): it
 * asks `valid(...)` for the fields it compares.
 */
export type Check<S extends Specs> = (values: Resolved<S>, report: Report, context: CheckContext) => void;

export interface OptionsSchema<S extends Specs> {
  readonly specs: S;
  readonly keys: readonly (keyof S & string)[];
  readonly defaults: Defaults<S>;
  /** The cross-field check (none: does nothing). */
  check(values: Resolved<S>, report: Report, context: CheckContext): void;
}

/** Declares a component's options; see the module documentation. */
export function defineOptions<const S extends Specs>(specs: S, check?: Check<S>): OptionsSchema<S> {
  const keys = Object.freeze(Object.keys(specs)) as readonly (keyof S & string)[];
  const defaults: Record<string, unknown> = {};
  for (const key of keys) if (specs[key]!.default !== undefined) defaults[key] = specs[key]!.default;
  return Object.freeze({
    // A frozen copy: the caller's record stays theirs, and no one can add, remove or replace a spec
    // of a schema the whole library validates with.
    specs: Object.freeze({ ...specs }),
    keys,
    defaults: Object.freeze(defaults) as Defaults<S>,
    check: check ?? (() => {}),
  });
}

/** A schema of some of `schema`'s options (its check is not carried over: give the new one its own). */
export function pickOptions<S extends Specs, K extends keyof S & string>(
  schema: OptionsSchema<S>,
  keys: readonly K[],
  check?: Check<Pick<S, K>>,
): OptionsSchema<Pick<S, K>> {
  const picked = {} as Record<string, AnySpec>;
  for (const key of keys) picked[key] = schema.specs[key]!;
  return defineOptions(picked as Pick<S, K>, check);
}

// ---------------------------------------------------------------------------------------------------
// Builders. Each returns a frozen spec; `required: true` and `default` are read into the type.

interface Common {
  readonly required?: boolean;
}
type Req<O> = O extends { readonly required: true } ? true : false;
type Def<O> = O extends { readonly default: infer D } ? (undefined extends D ? false : true) : false;

export interface NumberInit extends Common, NumberRules {
  readonly default?: number;
}

export interface StringInit extends Common {
  readonly default?: string;
  readonly maxLength?: number;
  readonly pattern?: ValueTest;
}

/**
 * A spec, frozen with what it holds (a number's `widen`, a string's `pattern`): declarations are
 * exported as data (`prazo/options`, the config's and the rules' schemas), and one that a caller could
 * edit would change validation for every caller.
 */
const spec = (kind: OptionKind, init: object, extra: object = {}): AnySpec => {
  const own: Record<string, object> = {};
  for (const key of ['widen', 'pattern'] as const) {
    const inner = (init as Record<string, unknown>)[key];
    if (inner !== null && typeof inner === 'object') own[key] = Object.freeze({ ...inner });
  }
  return Object.freeze({
    required: false,
    default: undefined,
    codeOnly: false,
    ...init,
    ...own,
    ...extra,
    kind,
  }) as AnySpec;
};

/**
 * A real `AbortSignal`: `instanceof` alone takes `Object.create(AbortSignal.prototype)`, on which
 * every use (`aborted`, `addEventListener`) throws ERR_INVALID_THIS, out of a call that accepted it.
 * Node's own getter checks the brand.
 */
export function isAbortSignal(value: unknown): value is AbortSignal {
  if (!(value instanceof AbortSignal)) return false;
  try {
    Reflect.get(AbortSignal.prototype, 'aborted', value);
    return true;
  } catch {
    return false;
  }
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  value !== null && typeof value === 'object';

const hasMethods =
  (...names: string[]) =>
  (value: unknown): boolean =>
    isObject(value) && names.every((n) => typeof value[n] === 'function');

export const option = Object.freeze({
  /** A finite number, within bounds. */
  number<const O extends NumberInit>(init: O): OptionSpec<number, Req<O>, Def<O>> {
    return spec('number', init) as OptionSpec<number, Req<O>, Def<O>>;
  },
  /** An integer, within bounds. */
  integer<const O extends Omit<NumberInit, 'integer'>>(init: O): OptionSpec<number, Req<O>, Def<O>> {
    return spec('number', init, { integer: true }) as OptionSpec<number, Req<O>, Def<O>>;
  },
  /** `true` or `false`. */
  boolean<const O extends Common & { readonly default?: boolean }>(
    init: O = {} as O,
  ): OptionSpec<boolean, Req<O>, Def<O>> {
    return spec('boolean', init) as OptionSpec<boolean, Req<O>, Def<O>>;
  },
  /** A non-empty string (trimmed in data mode), at most `maxLength` characters. */
  string<const O extends StringInit>(init: O = {} as O): OptionSpec<string, Req<O>, Def<O>> {
    return spec('string', init) as OptionSpec<string, Req<O>, Def<O>>;
  },
  /** One of a few strings. */
  oneOf<const T extends string, const O extends Common & { readonly default?: NoInfer<T> }>(
    values: readonly T[],
    init: O = {} as O,
  ): OptionSpec<T, Req<O>, Def<O>> {
    return spec('oneOf', init, { values: Object.freeze([...values]) }) as OptionSpec<T, Req<O>, Def<O>>;
  },
  /** Something only code can give: a function, an instance. Never read from a config file. */
  value<T>(describe: string, test: (value: unknown) => boolean): OptionSpec<T, false, false> {
    return spec('value', {}, { value: Object.freeze({ describe, test }), codeOnly: true }) as OptionSpec<
      T,
      false,
      false
    >;
  },
  /** A value of its own shape, which a config file may give too (`epochMs: "x-deadline" | false`). */
  matching<T>(describe: string, test: (value: unknown) => boolean): OptionSpec<T, false, false> {
    return spec('value', {}, { value: Object.freeze({ describe, test }) }) as OptionSpec<T, false, false>;
  },
  /** The same spec, optional (a file may give the value another way). */
  optional<T, D extends boolean>(s: OptionSpec<T, boolean, D>): OptionSpec<T, false, D> {
    return Object.freeze({ ...s, required: false }) as OptionSpec<T, false, D>;
  },
  /** The same spec, required. */
  required<T>(s: OptionSpec<T, boolean, false>): OptionSpec<T, true, false> {
    return Object.freeze({ ...s, required: true }) as OptionSpec<T, true, false>;
  },
  /** A function. */
  fn<F extends (...args: never[]) => unknown>(describe = 'a function'): OptionSpec<F, false, false> {
    return option.value<F>(describe, (v) => typeof v === 'function');
  },
  /** A `Clock` (default: the system clock, applied by the component). */
  clock(): OptionSpec<Clock, false, false> {
    return option.value<Clock>(
      'a Clock (now, epochNow, setTimer, clearTimer)',
      hasMethods('now', 'epochNow', 'setTimer', 'clearTimer'),
    );
  },
  /** An `AbortSignal`. */
  signal(): OptionSpec<AbortSignal, false, false> {
    return option.value<AbortSignal>('an AbortSignal', isAbortSignal);
  },
  /** A nested options object, read with its own schema. */
  nested<S extends Specs>(schema: OptionsSchema<S>): OptionSpec<OptionsOf<OptionsSchema<S>>, false, false> {
    return spec('nested', {}, { schema }) as OptionSpec<OptionsOf<OptionsSchema<S>>, false, false>;
  },
  /** `true`, `false`, or nested options (`hedge: true` or `hedge: { percentile: 0.9 }`). */
  toggle<S extends Specs>(
    schema: OptionsSchema<S>,
  ): OptionSpec<boolean | OptionsOf<OptionsSchema<S>>, false, false> {
    return spec('nested', {}, { schema, alternative: 'boolean' }) as OptionSpec<
      boolean | OptionsOf<OptionsSchema<S>>,
      false,
      false
    >;
  },
  /** A ready instance (`retryBudget: sharedBudget`), or nested options to build one. */
  instanceOr<I, S extends Specs>(
    instance: ValueTest,
    schema: OptionsSchema<S>,
  ): OptionSpec<I | OptionsOf<OptionsSchema<S>>, false, false> {
    return spec('nested', {}, { schema, alternative: Object.freeze({ ...instance }) }) as OptionSpec<
      I | OptionsOf<OptionsSchema<S>>,
      false,
      false
    >;
  },
  /** Whether `value` has every one of `names` as a function (the structural test of a value). */
  hasMethods,
});

/** Whether `value` is a plain options object (not null, not an array, not a Map/Set collection). */
export function isOptionsObject(value: unknown): value is Record<string, unknown> {
  if (!isObject(value)) return false;
  // An object literal (or one made without a prototype), as per-call options nearly always are: no
  // collection, at the cost of one read instead of nine `instanceof` on every call.
  const proto = Object.getPrototypeOf(value);
  if (proto === Object.prototype || proto === null) return !Array.isArray(value);
  return (
    !Array.isArray(value) &&
    // A collection's entries are no properties, and a date, a pattern, a promise or a buffer has none
    // either: read as options each would be `{}`, every default applied without a word.
    !(
      value instanceof Map ||
      value instanceof Set ||
      value instanceof WeakMap ||
      value instanceof WeakSet ||
      value instanceof Date ||
      value instanceof RegExp ||
      value instanceof Promise ||
      value instanceof ArrayBuffer ||
      ArrayBuffer.isView(value)
    )
  );
}
