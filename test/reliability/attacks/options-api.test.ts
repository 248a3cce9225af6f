import { describe, expect, it } from 'vitest';
import { createRetryBudget } from '../../../src/budget/index.js';
import { FakeClock } from '../../../src/clock/fake.js';
import * as config from '../../../src/config/index.js';
import { createDependency } from '../../../src/dependency/index.js';
import { isInvalidOptions } from '../../../src/errors/guards.js';
import { createHttpClient } from '../../../src/http/index.js';
import { ConcurrencyLimiter } from '../../../src/limit/limiter.js';
import { defineOptions, option } from '../../../src/options/declare.js';
import { checkCallOptions } from '../../../src/options/validator.js';
import * as declarations from '../../../src/options-entry.js';
import { RULES_DEPENDENCY } from '../../../src/rules/index.js';

/**
 * Attacks on `prazo/options`, the option declarations exported as data (SPEC C1–C7): what a caller's
 * code can do to them. A declaration is what the whole library validates with, so an edit made by
 * one caller (a mistake, a test that patches, a hostile dependency) must not change validation for
 * every other; and a schema a user declares with `defineOptions` must not change when the record it
 * was declared from does.
 */

/** Every object reachable from `value` that is not frozen (functions are code, not data: not walked). */
function unfrozen(value: unknown, path: string, seen = new Set<unknown>()): string[] {
  if (value === null || typeof value !== 'object' || seen.has(value)) return [];
  seen.add(value);
  const own = Object.isFrozen(value) ? [] : [path];
  return own.concat(...Object.entries(value).map(([key, inner]) => unfrozen(inner, `${path}.${key}`, seen)));
}

describe('prazo/options: the declarations are data no caller can edit', () => {
  it('Was a defect: every exported declaration is frozen all the way down (its `specs` record, a number’s `widen` and a string’s `pattern` were not)', () => {
    const exported = Object.entries({ ...declarations, ...config, RULES_DEPENDENCY }).filter(
      ([, v]) => v !== null && typeof v === 'object',
    );
    expect(exported.length).toBeGreaterThan(30);
    expect(exported.flatMap(([name, v]) => unfrozen(v, name))).toEqual([]);
  });

  it('Was a defect: deleting or replacing a spec of DEPENDENCY_OPTIONS throws, and createDependency still validates as declared', () => {
    const specs = declarations.DEPENDENCY_OPTIONS.specs as Record<string, unknown>;
    // ESM code is strict: a write to a frozen object throws rather than being ignored.
    expect(() => {
      delete specs.attempts;
    }).toThrow(TypeError);
    expect(() => {
      specs.p99Ms = option.number({ min: 0, max: 1 });
    }).toThrow(TypeError);
    const widen = (declarations.CALIBRATE_TIMEOUT_OPTIONS.specs.slack as { widen?: { max: number } }).widen!;
    expect(() => {
      widen.max = 1e9;
    }).toThrow(TypeError);
    const pattern = (config.MESH_IN_FILE.specs.service as { pattern?: { test: unknown } }).pattern!;
    expect(() => {
      pattern.test = () => true;
    }).toThrow(TypeError);
    // Before: "Cannot read properties of undefined (reading 'required')" from every createDependency.
    expect(createDependency({ name: 'after-an-attack', p99Ms: 100 }).timeouts.responseMs).toBe(140);
    let error: unknown;
    try {
      createDependency({ name: 'too-slow', p99Ms: 1e12 });
    } catch (e) {
      error = e;
    }
    expect(isInvalidOptions(error)).toBe(true);
  });

  it('Was a defect: a schema does not follow later edits of the record it was declared from', () => {
    const record: Record<string, ReturnType<typeof option.number>> = {
      size: option.number({ default: 1, min: 0, max: 10 }),
    };
    const schema = defineOptions(record);
    record.extra = option.number({ min: 0, max: 1 });
    delete record.size;
    expect(Object.keys(schema.specs)).toEqual(['size']);
    expect(schema.keys).toEqual(['size']);
    expect(schema.specs.size).toBeDefined();
  });
});

/** A Proxy whose every inspection throws (`Array.isArray`, a key list, a property read). */
function revoked(): object {
  const { proxy, revoke } = Proxy.revocable({}, {});
  revoke();
  return proxy;
}

/** An object whose `key` getter throws `thrown`. */
function throwing(key: string, thrown: unknown = new TypeError(`no ${key} for you`)): object {
  return Object.defineProperty({}, key, {
    enumerable: true,
    get() {
      throw thrown;
    },
  });
}

/** The problems of the InvalidOptionsError `fn` throws (anything else thrown fails the test). */
function problemsOf(fn: () => unknown): readonly string[] {
  try {
    fn();
  } catch (error) {
    if (isInvalidOptions(error)) return error.problems;
    throw error;
  }
  throw new Error('no error thrown');
}

describe('options that cannot be read are problems, not a TypeError out of the validation', () => {
  // Was a defect (fixed): the validator read what it was given unguarded (`Array.isArray`, the keys,
  // each value, a value's own test), so a revoked Proxy or a getter that throws, anywhere in the
  // options, threw a bare TypeError out of every factory: "Cannot perform 'IsArray' on a proxy that
  // has been revoked".
  it('Was a defect: createDependency with a revoked Proxy as the options, as `hedge`, `concurrencyLimit`, `retryBudget`', () => {
    expect(problemsOf(() => createDependency(revoked() as never))[0]).toMatch(
      /^options cannot be read: TypeError: .*revoked/,
    );
    for (const key of ['hedge', 'concurrencyLimit', 'retryBudget'] as const) {
      expect(
        problemsOf(() => createDependency({ name: 'a', p99Ms: 100, [key]: revoked() } as never)),
      ).toEqual([expect.stringMatching(new RegExp(`^\`${key}\` cannot be read: TypeError: .*revoked`))]);
    }
    expect(problemsOf(() => createRetryBudget(revoked() as never))).toHaveLength(1);
  });

  it('Was a defect: a getter that throws is a problem at its key, listed with the others, and read once', () => {
    let reads = 0;
    const options = Object.defineProperty({ name: 'a', attempts: 0 }, 'p99Ms', {
      enumerable: true,
      get() {
        reads += 1;
        throw new Error('no p99\nfor you');
      },
    });
    expect(problemsOf(() => createDependency(options as never))).toEqual([
      '`p99Ms` cannot be read: Error: no p99\\x0afor you',
      expect.stringMatching(/^`attempts` must be an integer/),
    ]);
    expect(reads).toBe(1);
    const unprintable = Object.create(null) as object;
    expect(problemsOf(() => createRetryBudget(throwing('maxRatio', unprintable) as never))).toEqual([
      '`maxRatio` cannot be read: a value that cannot be shown',
    ]);
  });

  it('Was a defect: a per-call options object that cannot be read is INVALID_OPTIONS (checkCallOptions), not the caller’s own error', () => {
    const schema = defineOptions({ deadlineMs: option.number({ min: 0, max: 10 }) });
    expect(problemsOf(() => checkCallOptions('execute', schema, revoked()))).toEqual([
      expect.stringMatching(/^options cannot be read/),
    ]);
    expect(problemsOf(() => checkCallOptions('execute', schema, throwing('deadlineMs')))).toEqual([
      '`deadlineMs` cannot be read: TypeError: no deadlineMs for you',
    ]);
    // Still nothing allocated or thrown for a clean object.
    expect(() => checkCallOptions('execute', schema, { deadlineMs: 5 })).not.toThrow();
  });
});

describe('createHttpClient options that cannot be read (prazo/http reads its options key by key)', () => {
  // Was a defect (fixed): createHttpClient read its options unguarded (`Object.keys`, each key,
  // `Array.isArray(origins)`), so a revoked Proxy as the options or as `origins`, or a getter that
  // throws, threw a bare TypeError out of it.
  it('Was a defect: a revoked Proxy as the options or as `origins`, or a throwing getter, is an InvalidOptionsError', () => {
    expect(problemsOf(() => createHttpClient(revoked() as never))[0]).toMatch(
      /^options cannot be read: TypeError: .*revoked/,
    );
    expect(
      problemsOf(() => createHttpClient({ name: 'a', p99Ms: 100, origins: revoked() } as never)).join('\n'),
    ).toMatch(/origins/);
    const options = Object.defineProperty({ name: 'a', origin: 'http://127.0.0.1:1' }, 'p99Ms', {
      enumerable: true,
      get() {
        throw Object.create(null);
      },
    });
    expect(problemsOf(() => createHttpClient(options as never))).toContain(
      '`p99Ms` cannot be read: a value that cannot be shown',
    );
  });
});

describe('what is not an options object, or not what it claims', () => {
  // Was a defect (fixed): a Date, a RegExp, a Promise or a buffer passed as options was read as `{}`
  // (none of their state is a property): every default applied without a word.
  it('Was a defect: a Date, RegExp, Promise or buffer as options is refused, not read as `{}`', () => {
    for (const value of [new Date(0), /x/, Promise.resolve(), new ArrayBuffer(8), new Uint8Array(4)]) {
      expect(problemsOf(() => createRetryBudget(value as never))).toEqual([
        'options must be an object, got an object',
      ]);
      expect(
        problemsOf(() => createDependency({ name: 'a', p99Ms: 100, hedge: value } as never)).join('\n'),
      ).toMatch(/^`hedge` must be/);
    }
  });

  // Was a defect (fixed): `Object.create(AbortSignal.prototype)` passed `instanceof AbortSignal`, was
  // accepted as a call's signal, and the call then rejected with Node's ERR_INVALID_THIS TypeError.
  it('Was a defect: a fake AbortSignal (its prototype, not its brand) is refused as a call signal', async () => {
    const dep = createDependency({ name: 'a', p99Ms: 100, clock: new FakeClock() });
    const fake = Object.create(AbortSignal.prototype) as AbortSignal;
    const error = await dep
      .execute(async () => 'sent', { signal: fake, idempotent: true })
      .catch((e: unknown) => e);
    expect(isInvalidOptions(error)).toBe(true);
    expect(
      await dep.execute(async () => 'sent', { signal: new AbortController().signal, idempotent: true }),
    ).toBe('sent');
  });

  // Was a defect (fixed): the adaptive limit's default start (20) was checked against a `max` the
  // caller gave: `adaptive: { max: 10 }` was refused ("initial (20) must lie in [min, max]") although
  // the caller never named `initial`. A default now starts inside the caller's range.
  it('Was a defect: `adaptive: { max: 10 }` is accepted and starts at 10; an `initial` given outside the range is still refused', () => {
    expect(() =>
      createDependency({ name: 'a', p99Ms: 100, concurrencyLimit: { adaptive: { max: 10 } } }),
    ).not.toThrow();
    expect(new ConcurrencyLimiter({ adaptive: { max: 10 } }, new FakeClock()).limit).toBe(10);
    expect(new ConcurrencyLimiter({ adaptive: { min: 50 } }, new FakeClock()).limit).toBe(50);
    expect(new ConcurrencyLimiter({ adaptive: true }, new FakeClock()).limit).toBe(20);
    expect(
      problemsOf(() =>
        createDependency({ name: 'a', p99Ms: 100, concurrencyLimit: { adaptive: { max: 10, initial: 20 } } }),
      ).join('\n'),
    ).toMatch(/initial.*must lie in/);
  });
});
