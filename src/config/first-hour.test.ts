import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { DEPENDENCY_KINDS, implausibleP99, KIND_PROFILES, startingP99Ms } from '../calibrate/kinds.js';
import { createDependency } from '../dependency/dependency.js';
import { InvalidOptionsError } from '../errors/options.js';
import { checkConfigText } from './load.js';
import { formatProblem } from './problem.js';
import { rewriteNumbers } from './rewrite.js';

const noFiles = { readText: () => '' };

describe('starting values per kind of call (SPEC C8, issue 27)', () => {
  it('the table: published figures and sums of them', () => {
    expect(Object.fromEntries(DEPENDENCY_KINDS.map((k) => [k, startingP99Ms(k)]))).toEqual({
      'in-process': 0.25,
      'same-zone-cache': 10,
      'same-zone-database': 10,
      'same-zone-service': 10,
      'cross-zone': 12,
      'cross-region': 160,
      'third-party-api': 460,
    });
  });

  it('every kind loads alone, assumed, and createDependency takes its options with the same timeouts', () => {
    for (const kind of DEPENDENCY_KINDS) {
      const { config, problems } = checkConfigText(
        `dependencies:\n  - { name: x, kind: ${kind} }\n`,
        noFiles,
      );
      expect(problems.map((p) => [p.severity, p.key])).toEqual([['warning', 'dependencies[0].kind']]);
      const d = config!.dependency('x');
      expect(d.assumed).toEqual({ kind, p99Ms: startingP99Ms(kind), basis: KIND_PROFILES[kind].basis });
      expect(d.options.p99Ms).toBe(startingP99Ms(kind));
      expect(d.options).not.toHaveProperty('kind');
      expect(createDependency(d.options).timeouts).toEqual(d.calibration);
      // The executor carries the mark until a measured p99 replaces it (a p99-measured event).
      expect(d.options.p99Assumed).toBe(true);
      expect(createDependency(d.options).p99Assumed).toBe(true);
    }
  });

  it('a measured p99 wins over the kind, and is not assumed; the kind then bounds what is plausible', () => {
    const load = (entry: string) => checkConfigText(`dependencies:\n  - ${entry}\n`, noFiles);
    const measured = load('{ name: x, kind: cross-region, p99Ms: 95 }');
    expect(measured.problems).toEqual([]);
    expect(measured.config!.dependency('x').assumed).toBeUndefined();
    expect(measured.config!.dependency('x').options.p99Assumed).toBeUndefined();
    expect(measured.config!.dependency('x').kind).toBe('cross-region');
    const fast = (extra: string) => load(`{ name: x, p99Ms: 0.4${extra} }`).problems.map(formatProblem);
    expect(fast('')[0]).toContain('dependencies[0].p99Ms: p99 0.4 ms is below 1 ms');
    expect(fast(', kind: same-zone-cache')).toEqual([]);
    expect(fast(', kind: in-process')).toEqual([]);
    expect(fast(', kind: same-zone-database')[0]).toContain('faster than a same-zone-database call can be');
    expect(fast(', unusualP99: true')).toEqual([]);
    const slow = load('{ name: x, p99Ms: 700000, defaultDeadlineMs: 2000000 }').problems.map(formatProblem);
    expect(slow[0]).toContain('is above 10 minutes');
    // Neither measured nor a kind: says the three ways out.
    expect(load('{ name: x }').problems[0]!.message).toContain(
      'or `kind` (a starting value per kind of call',
    );
  });

  it('property: implausibleP99 is silent exactly within [kind floor, 10 min]', () => {
    const kinds = fc.constantFrom(undefined, ...DEPENDENCY_KINDS);
    fc.assert(
      fc.property(fc.double({ min: 1e-6, max: 1e7, noNaN: true }), kinds, (p99, kind) => {
        const floor = kind === undefined ? 1 : KIND_PROFILES[kind].minP99Ms;
        const plausible = p99 >= floor && p99 <= 600_000;
        expect(implausibleP99(p99, kind) === undefined).toBe(plausible);
      }),
    );
  });
});

describe('rewriteNumbers adds a missing number as one line (issue 27)', () => {
  const add = (text: string, index = 0) =>
    rewriteNumbers(text, [{ path: ['dependencies', index, 'p99Ms'], value: 42.5, add: true }]);

  it('block style: under the name, its indentation and line ending, after its comment', () => {
    expect(add('dependencies:\r\n  - name: a # first\r\n    kind: cross-zone\r\n')).toBe(
      'dependencies:\r\n  - name: a # first\r\n    p99Ms: 42.5\r\n    kind: cross-zone\r\n',
    );
    expect(add('dependencies:\n- name: a\n  kind: cross-zone')).toBe(
      'dependencies:\n- name: a\n  p99Ms: 42.5\n  kind: cross-zone',
    );
    expect(add('dependencies:\n  - kind: cross-zone\n    name: a')).toBe(
      'dependencies:\n  - kind: cross-zone\n    name: a\n    p99Ms: 42.5',
    );
  });

  it('flow style and JSON: after the name, quoted as the keys are', () => {
    expect(add('dependencies: [{ name: a, kind: cross-zone }]\n')).toBe(
      'dependencies: [{ name: a, p99Ms: 42.5, kind: cross-zone }]\n',
    );
    const json =
      '{\n  "dependencies": [\n    {\n      "name": "a",\n      "kind": "cross-zone"\n    }\n  ]\n}\n';
    const out = add(json);
    expect(out).toBe(json.replace('"name": "a",', '"name": "a", "p99Ms": 42.5,'));
    expect(JSON.parse(out).dependencies[0]).toEqual({ name: 'a', p99Ms: 42.5, kind: 'cross-zone' });
  });

  it('replaces an existing number in place; refuses a path with no mapping to add to', () => {
    expect(add('dependencies:\n  - name: a\n    p99Ms: 9 # old\n')).toBe(
      'dependencies:\n  - name: a\n    p99Ms: 42.5 # old\n',
    );
    expect(() => add('dependencies: []\n')).toThrow('there is no mapping to add it to');
    expect(() =>
      rewriteNumbers('dependencies:\n  - name: a\n', [{ path: ['dependencies', 0, 'p99Ms'], value: 1 }]),
    ).toThrow('it is not a number written in the file');
  });

  it('property: the added key reads back, everything else the same', () => {
    const entry = fc.record({
      name: fc.stringMatching(/^[a-z][a-z0-9-]{0,20}$/),
      kind: fc.constantFrom(...DEPENDENCY_KINDS),
      attempts: fc.integer({ min: 1, max: 3 }),
    });
    fc.assert(
      fc.property(fc.array(entry, { minLength: 1, maxLength: 4 }), fc.boolean(), (entries, flow) => {
        const lines = entries.map((e) =>
          flow
            ? `  - { name: ${e.name}, kind: ${e.kind}, attempts: ${e.attempts} } # c`
            : `  - name: ${e.name} # c\n    kind: ${e.kind}\n    attempts: ${e.attempts}`,
        );
        const text = `# top\ndependencies:\n${lines.join('\n')}\n`;
        const i = entries.length - 1;
        const out = add(text, i);
        const data = parse(out) as { dependencies: Record<string, unknown>[] };
        expect(data.dependencies[i]).toEqual({ ...entries[i], p99Ms: 42.5 });
        expect(data.dependencies.slice(0, i)).toEqual(entries.slice(0, i));
        expect(out.split('\n').length - text.split('\n').length).toBe(flow ? 0 : 1);
      }),
    );
  });
});

describe('other libraries’ names, in code too (issue 27)', () => {
  it('createDependency({ timeout, retries }) says p99Ms and attempts, with why', () => {
    let error: unknown;
    try {
      createDependency({ name: 'x', p99Ms: 10, timeout: 500, retries: 3 } as never);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(InvalidOptionsError);
    const problems = (error as InvalidOptionsError).problems;
    expect(problems[0]).toMatch(
      /^unknown option `timeout`; did you mean `p99Ms`\? prazo has no fixed timeout/,
    );
    expect(problems[1]).toMatch(
      /^unknown option `retries`; did you mean `attempts`\? `attempts` counts every attempt/,
    );
  });
});
