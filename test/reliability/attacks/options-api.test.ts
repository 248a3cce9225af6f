import { describe, expect, it } from 'vitest';
import * as config from '../../../src/config/index.js';
import { createDependency } from '../../../src/dependency/index.js';
import { isInvalidOptions } from '../../../src/errors/guards.js';
import { defineOptions, option } from '../../../src/options/declare.js';
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
