import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Document, isMap, isPair, isSeq, stringify } from 'yaml';
import { DEPENDENCY_KINDS } from '../calibrate/kinds.js';
import { createDependency } from '../dependency/dependency.js';
import { InvalidOptionsError } from '../errors/index.js';
import { jsonErrorOffset } from './document.js';
import { checkConfigFile, checkConfigText, formatProblem, loadConfig } from './index.js';
import { problemCounts } from './load.js';
import { moreProblems } from './problem.js';

const EXAMPLE = new URL('../../examples/prazo.config.yaml', import.meta.url).pathname;
const noFiles = { readText: () => '' };
const lines = (text: string) => checkConfigText(text, noFiles).problems.map(formatProblem);

describe('the central config (SPEC C7)', () => {
  it('loads the shipped example: the seed chain and the POST /pedidos budget, without a problem', () => {
    const { config, problems } = checkConfigFile(EXAMPLE);
    expect(problems).toEqual([]);
    expect([...config!.dependencies.keys()]).toEqual(['orders', 'inventory', 'orders-db', 'supplier']);
    const supplier = config!.dependencies.get('supplier')!;
    expect(supplier.options.p99Ms).toBeCloseTo(64.29, 2); // from the healthy histogram
    expect(supplier.calibration).toMatchObject({ responseMs: 90, attempts: 2, warning: null });
    const pedidos = config!.endpoints.get('POST /pedidos')!;
    expect(pedidos.budget.totalSloMs).toBe(800);
    expect(pedidos.timeouts.components.find((c) => c.name === 'servico_estoque')).toMatchObject({
      responseMs: 119,
      attempts: 2,
    });
    expect(config!.service).toMatchObject({ name: 'orders', defaultMs: 2000, maxMs: 10000 });
    // runtime objects, straight into the library
    const inventory = createDependency(config!.dependencies.get('inventory')!.options);
    expect(inventory.timeouts.responseMs).toBe(119);
  });

  it('points every error at file, line and key, all in one pass', () => {
    const text = [
      'dependencies:', // 1
      '  - name: inventory', // 2
      '    p99Ms: -3', // 3
      '    attempts: 0', // 4
      '    retryBudget: { maxRatio: 20 }', // 5
      '  - name: supplier', // 6
      '    p99ms: 100', // 7
      'endpoints:', // 8
      '  - endpoint: GET /x', // 9
      '    total_slo_ms: 100', // 10
      '    components:', // 11
      '      - { name: a, kind: remote, slice_ms: 80 }', // 12
    ].join('\n');
    expect(lines(text)).toEqual([
      'prazo.config.yaml:3:5: error: dependencies[0].p99Ms: must be a finite number in (0, 86400000], got -3',
      'prazo.config.yaml:4:5: error: dependencies[0].attempts: must be an integer in [1, 10], got 0',
      'prazo.config.yaml:5:20: error: dependencies[0].retryBudget.maxRatio: must be a finite number in [0, 10], got 20',
      'prazo.config.yaml:6:5: error: dependencies[1]: needs `p99Ms` (the healthy p99 in ms), `histogram` (a file to measure it from), or `kind` (a starting value per kind of call until it is measured: in-process, same-zone-cache, same-zone-database, same-zone-service, cross-zone, cross-region, third-party-api)',
      'prazo.config.yaml:7:5: error: dependencies[1].p99ms: unknown key; did you mean `p99Ms`?',
      'prazo.config.yaml:11:5: error: endpoints[0].components: slices fall short of total_slo_ms by 20 ms: a 80 = 80, SLO 100',
    ]);
  });

  it('refuses prototype keys, duplicate keys and YAML syntax errors with their lines', () => {
    expect(lines('dependencies:\n  - name: x\n    p99Ms: 5\n    __proto__: { polluted: true }\n')).toEqual([
      'prazo.config.yaml:4:5: error: key `__proto__` is not allowed (prototype pollution)',
    ]);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(lines('constructor: 1\n')[0]).toContain('`constructor` is not allowed');
    expect(lines('a: 1\na: 2\n')[0]).toMatch(/^prazo\.config\.yaml:2:1: error: Map keys must be unique/);
    expect(lines('dependencies: [\n')[0]).toMatch(/^prazo\.config\.yaml:1:\d+: error: /);
    expect(lines('- just\n- a list\n')[0]).toContain('must hold a mapping');
  });

  const DEEP = 'lists and mappings nested deeper than 64 levels';
  const BY_FLOW = `${DEEP} (by \`[\` or \`{\`)`;
  const BY_BLOCK = `${DEEP} (by indentation, \`- \` or \`? \`)`;
  const deeper = (text: string, format?: 'json') =>
    checkConfigText(text, { ...noFiles, ...(format === undefined ? {} : { format }) })
      .problems.map(formatProblem)
      .filter((l) => l.includes('nested deeper'));
  const stairs = (n: number, line: (i: number) => string) =>
    `${Array.from({ length: n }, (_, i) => ' '.repeat(i) + line(i)).join('\n')} x\n`;

  it('refuses brackets nested past the limit before the YAML parser sees them, at a bounded cost', () => {
    // At the line and column of the bracket that opens level 65.
    expect(lines(`dependencies:\n${'['.repeat(20_000)}`)).toEqual([
      `prazo.config.yaml:2:65: error: ${BY_FLOW}`,
    ]);
    const big = '['.repeat(1_000_000);
    const started = process.hrtime.bigint();
    expect(lines(big)[0]).toContain('nested deeper than 64');
    expect(Number(process.hrtime.bigint() - started) / 1e6).toBeLessThan(1_000);
    expect(deeper(`x: ${'['.repeat(10)}1${']'.repeat(10)}\n`)).toEqual([]);
  });

  it('refuses block nesting past the limit (`- `, `? `, indentation) before the YAML parser sees it, at a bounded cost', () => {
    // 1000 levels overflow the parser's stack, and the parse after that aborts the process (V8 FATAL).
    expect(lines(`dependencies:\n  - ${'- '.repeat(1000)}x\n`)).toEqual([
      `prazo.config.yaml:2:131: error: ${BY_BLOCK}`,
    ]);
    expect(lines(`${'? '.repeat(1000)}x\n`)).toEqual([`prazo.config.yaml:1:131: error: ${BY_BLOCK}`]);
    expect(lines(stairs(1000, () => 'a:'))).toEqual([`prazo.config.yaml:66:66: error: ${BY_BLOCK}`]);
    expect(lines(stairs(1000, () => '-'))).toEqual([`prazo.config.yaml:66:66: error: ${BY_BLOCK}`]);
    // Anchors, tags and `---` do not end a line's run of `- `.
    expect(deeper(`--- ${'- !t &a '.repeat(100)}x\n`)).toHaveLength(1);
    // At the limit: parsed (and refused for what it holds, not for its depth).
    expect(deeper(`${'- '.repeat(64)}x\n`)).toEqual([]);
    expect(deeper(stairs(65, () => 'a:'))).toEqual([]);
    // Pretty-printed JSON as deep as the limit allows is not refused for its indentation: inside
    // brackets, lines are not block structure.
    expect(deeper(`${stairs(64, () => '{"a":').trimEnd()} 1${'}'.repeat(64)}\n`, 'json')).toEqual([]);
    // One pass: 1 MB of lines 60 levels deep, each climbing back to the root, and the last one too deep.
    const count = Math.floor((1024 * 1024) / 122) - 1;
    const wide = `${'- '.repeat(60)}x\n`.repeat(count) + `${'- '.repeat(65)}x\n`;
    // The `yaml` lexer reads it in about 0.4 s (a million tokens; parsing it would take 3 s more):
    // the bound is for a scan gone quadratic, which would take hours, not for a busy machine.
    const started = process.hrtime.bigint();
    expect(lines(wide)).toEqual([`prazo.config.yaml:${count + 1}:131: error: ${BY_BLOCK}`]);
    expect(Number(process.hrtime.bigint() - started) / 1e6).toBeLessThan(10_000);
  });

  it('brackets and block structure count together: one limit of 64 levels, said with what made it', () => {
    // Limited apart, 63 levels of each made 126, and both together could reach that much again.
    const both = (block: number, flow: number) =>
      `${'- '.repeat(block)}${'['.repeat(flow)}1${']'.repeat(flow)}\n`;
    expect(deeper(both(40, 24))).toEqual([]);
    expect(deeper(both(40, 25))).toEqual([
      `prazo.config.yaml:1:105: error: ${DEEP} (here 40 by indentation, \`- \` or \`? \` and 25 by \`[\` or \`{\`, which count together)`,
    ]);
    expect(deeper(both(1, 63))).toEqual([]);
    expect(deeper(both(1, 64))).toHaveLength(1);
    // Indentation under a flow collection's line counts; the collection's own lines do not (indented
    // past the line it opened on: less is an error that ends the collection).
    const under = (n: number) =>
      `${Array.from({ length: 40 }, (_, i) => `${' '.repeat(i)}a:`).join('\n')} {\n` +
      `${`${' '.repeat(42)}b: {\n`.repeat(n - 1)}${' '.repeat(42)}c: 1${'}'.repeat(n)}\n`;
    expect(deeper(under(25))).toEqual([]);
    expect(deeper(under(26))).toEqual([
      `prazo.config.yaml:65:46: error: ${DEEP} (here 39 by indentation, \`- \` or \`? \` and 26 by \`[\` or \`{\`, which count together)`,
    ]);
  });

  it('a `]` in a quoted string, a comment or a block scalar closes nothing, and a `[` there opens nothing', () => {
    // Read as brackets, `["]", ["]", …` was one level deep however deep it went (3,000: V8 FATAL).
    const closed = (item: string) => `x: ${`[${item}, `.repeat(100)}1${']'.repeat(100)}\n`;
    expect(deeper(closed('"]"'))).toEqual([`prazo.config.yaml:1:388: error: ${BY_FLOW}`]);
    expect(deeper(closed("']'"))).toEqual([`prazo.config.yaml:1:388: error: ${BY_FLOW}`]);
    expect(deeper(closed('"\\"]"'))).toHaveLength(1);
    expect(deeper(`x: [\n${'  [ # ]\n'.repeat(100)}`)).toEqual([`prazo.config.yaml:65:3: error: ${BY_FLOW}`]);
    // Text is text: brackets and dashes in strings, block scalars and comments are no structure.
    const text = [
      `note: |`,
      `  ${'['.repeat(100)}`,
      `  ${'- '.repeat(100)}x`,
      `other: "${'{'.repeat(100)}`,
      `  ${'[ '.repeat(100)}"`,
      `# ${'['.repeat(100)}`,
      `last: '${'['.repeat(100)}'`,
      '',
    ].join('\n');
    expect(deeper(text)).toEqual([]);
    expect(deeper(JSON.stringify({ a: '['.repeat(100), b: ['{'.repeat(100)] }), 'json')).toEqual([]);
  });

  it('the shipped example and every YAML sample of the docs are well within the limit', () => {
    const samples = [readFileSync(EXAMPLE, 'utf8')];
    for (const doc of ['config', 'mesh', 'observability']) {
      const md = readFileSync(new URL(`../../docs/${doc}.md`, import.meta.url), 'utf8');
      for (const m of md.matchAll(/```yaml\n([\s\S]*?)```/g)) samples.push(m[1]!);
    }
    expect(samples.length).toBeGreaterThan(5);
    for (const sample of samples) {
      expect(deeper(sample)).toEqual([]);
      // Even 56 levels further down, under keys: none is more than 8 levels deep.
      const keys = Array.from({ length: 56 }, (_, i) => `${'  '.repeat(i)}k${i}:`).join('\n');
      const indented = sample.replace(/^(?=.)/gm, '  '.repeat(56));
      expect(deeper(`${keys}\n${indented}`)).toEqual([]);
    }
  });

  /** `value` as YAML, its collections `flowLevel` levels down and deeper in flow style (`[…]`, `{…}`). */
  const inFlowFrom = (value: unknown, flowLevel: number): string => {
    const doc = new Document(value);
    const mark = (node: unknown, depth: number): void => {
      if (isMap(node) || isSeq(node)) {
        node.flow = depth >= flowLevel;
        for (const item of node.items) mark(isPair(item) ? item.value : item, depth + 1);
      }
    };
    mark(doc.contents, 0);
    return doc.toString();
  };

  it('property: a document nested d collections deep, in any mix of block and flow styles, is refused exactly when d passes 64', () => {
    // One path of d nested mappings and lists, with text around it that looks like structure.
    const tricky = fc.constantFrom('[', ']', '{', '}', '- x', '? y', '#', '"', "'", '[\n]', 'a: b', '\n- ]');
    const level = fc.record({
      list: fc.boolean(),
      before: fc.array(tricky, { maxLength: 2 }),
      after: fc.array(tricky, { maxLength: 1 }),
    });
    fc.assert(
      fc.property(
        fc.array(level, { minLength: 58, maxLength: 72 }),
        fc.nat({ max: 80 }),
        fc.boolean(),
        (levels, flowLevel, json) => {
          let value: unknown = 'leaf';
          for (const l of [...levels].reverse()) {
            const texts = (ts: string[]) => ts.map((t, i) => `${t} ${i}`);
            value = l.list
              ? [...texts(l.before), value, ...texts(l.after)]
              : Object.fromEntries([
                  ...texts(l.before).map((t, i) => [`b${i}`, t]),
                  ['k', value],
                  ...texts(l.after).map((t, i) => [`a${i}`, t]),
                ]);
          }
          const text = json ? JSON.stringify(value, null, 2) : inFlowFrom(value, flowLevel);
          const found = deeper(text, json ? 'json' : undefined);
          const d = levels.length;
          if (d <= 64) expect(found).toEqual([]);
          if (d >= 66) expect(found).toHaveLength(1);
        },
      ),
      { numRuns: 200 },
    );
  });

  it('blames an invalid dependency once, not again as unknown in the endpoints that name it', () => {
    const text = [
      'dependencies:',
      '  - name: a',
      '    p99Ms: -5',
      'endpoints:',
      '  - endpoint: GET /x',
      '    total_slo_ms: 100',
      '    components:',
      '      - { name: call, kind: remote, slice_ms: 60, dependency: a }',
      '      - { name: other, kind: remote, slice_ms: 40, dependency: ghost }',
      '',
    ].join('\n');
    const found = lines(text);
    expect(found.some((l) => l.includes('p99Ms'))).toBe(true);
    expect(found.some((l) => l.includes('unknown dependency a '))).toBe(false);
    expect(found.some((l) => l.includes('unknown dependency ghost'))).toBe(true);
  });

  it('parses a .json file as JSON: what is not strict JSON is an error at its line (#14)', () => {
    const json = (text: string) =>
      checkConfigText(text, { ...noFiles, file: 'x.json' }).problems.map(formatProblem);
    // Before: YAML read these as valid config (unquoted keys, a trailing comma, a comment).
    expect(json('{\n  dependencies: [ { "name": "a", "p99Ms": 10 } ]\n}\n')[0]).toMatch(
      /^x\.json:2:3: error: not valid JSON: /,
    );
    expect(json('{"dependencies": [\n  {"name": "a", "p99Ms": 10},\n]}')[0]).toMatch(
      /^x\.json:3:1: error: not valid JSON/,
    );
    expect(json('# comment\n{"dependencies": []}')[0]).toMatch(/^x\.json:1:1: error: not valid JSON/);
    expect(json('{"dependencies": [{"name": "a", "p99Ms": 10}]}')).toEqual([]);
    expect(json('{"dependencies": [],\n "dependencies": []}')).toEqual([
      'x.json:2:2: error: Map keys must be unique: `dependencies` is given twice',
    ]);
    expect(json('{"__proto__": {"polluted": 1}}')[0]).toContain('`__proto__` is not allowed');
    // The format can be forced, and a YAML file name stays YAML.
    expect(
      checkConfigText('dependencies: []', { ...noFiles, file: 'x.json', format: 'yaml' }).problems,
    ).toEqual([]);
    expect(checkConfigText('dependencies: []', { ...noFiles, file: 'x.yaml' }).problems).toEqual([]);
  });

  it('finds duplicate keys in linear time: 90,000 keys (the 1 MB limit) are one pass (#14)', () => {
    // Before: yaml's uniqueKeys compared each key with every earlier one (40k keys: 21 s).
    const keys = Array.from({ length: 90_000 }, (_, i) => `k${i}: 1`);
    keys.push('k5: 2');
    const text = `dependencies: []\n${keys.join('\n')}\n`;
    expect(text.length).toBeLessThan(1024 * 1024);
    const found = lines(text);
    expect(found[0]).toBe('prazo.config.yaml:90002:1: error: Map keys must be unique: `k5` is given twice');
    // Every problem with its line, the unknown keys bounded to a readable report.
    const unknown = lines('dependencies: []\n' + keys.slice(0, -1).join('\n'));
    expect(unknown).toHaveLength(21);
    expect(unknown[0]).toBe(
      'prazo.config.yaml:1:1: error: the options hold 89980 more unknown key(s), not listed',
    );
  });

  it('lists the first 100 problems in file order, then one line counting the rest (SPEC C7)', () => {
    // 130 duplicates of one key: 130 errors, at lines 3 to 132.
    const text = `dependencies: []\nservice:\n${'  maxMs: 1\n'.repeat(131)}`;
    const check = checkConfigText(text, noFiles);
    expect(check.config).toBeUndefined();
    expect(check.problems).toHaveLength(101);
    expect(check.problems.slice(0, 100).map((p) => p.line)).toEqual(
      Array.from({ length: 100 }, (_, i) => i + 4),
    );
    expect(check.problems.map(formatProblem).at(-1)).toBe(
      'prazo.config.yaml: error: … and 30 more (30 error(s), 0 warning(s)): only the first 100 problems are listed',
    );
    expect(problemCounts(check)).toEqual({ errors: 130, warnings: 0 });
    // 100 are listed whole, with nothing after them.
    const exact = checkConfigText(`dependencies: []\nservice:\n${'  maxMs: 1\n'.repeat(101)}`, noFiles);
    expect(exact.problems).toHaveLength(100);
    expect(exact.problems.at(-1)!.message).toMatch(/given twice/);
    // Only warnings left out: the line is a warning; an error among them makes it an error.
    expect(moreProblems('f.yaml', 100, 0, 3)).toMatchObject({ severity: 'warning', line: 0, key: '' });
    expect(formatProblem(moreProblems('f.yaml', 100, 2, 3))).toBe(
      'f.yaml: error: … and 5 more (2 error(s), 3 warning(s)): only the first 100 problems are listed',
    );
  });

  it('accepts JSON, with line numbers too', () => {
    const json = '{\n  "dependencies": [\n    { "name": "x", "p99Ms": 100, "slack": 9 }\n  ]\n}\n';
    expect(lines(json)).toEqual([
      'prazo.config.yaml:3:34: error: dependencies[0].slack: must be a finite number in [1.3, 1.5], got 9',
    ]);
    expect(checkConfigText('{"dependencies": [{"name": "x", "p99Ms": 100}]}', noFiles).config).toBeDefined();
  });

  it('refuses to calibrate on a degraded histogram (SPEC C4)', () => {
    const dir = mkdtempSync(join(tmpdir(), 'prazo-config-'));
    const degraded = readFileSync(
      new URL('../../examples/histograms/supplier-degraded.prom', import.meta.url),
    );
    writeFileSync(join(dir, 'h.prom'), degraded);
    writeFileSync(
      join(dir, 'prazo.config.yaml'),
      'dependencies:\n  - name: supplier\n    histogram: { file: h.prom }\n',
    );
    const { config, problems } = checkConfigFile(join(dir, 'prazo.config.yaml'));
    expect(config).toBeUndefined();
    expect(problems[0]!.line).toBe(3);
    expect(problems[0]!.message).toContain(
      'degraded window (error rate 5.8% above 2.0%; timeout rate 3.5% above 1.0%)',
    );
    expect(problems[0]!.message).toContain('refusing to calibrate');
  });

  it('warns about attempts that do not fit, infeasible deadlines, pools and budgets', () => {
    const text = [
      'dependencies:',
      '  - { name: a, p99Ms: 180, attempts: 3, defaultDeadlineMs: 600 }',
      '  - { name: b, p99Ms: 180, defaultDeadlineMs: 100 }',
      '  - { name: c, p99Ms: 1000, pool: { size: 50, rps: 100 } }',
    ].join('\n');
    expect(lines(text)).toEqual([
      'prazo.config.yaml:2:41: warning: dependencies[0].defaultDeadlineMs: deadline of 600 ms fits 2 attempt(s), not 3',
      'prazo.config.yaml:3:28: error: dependencies[1].defaultDeadlineMs: deadline of 100 ms fits 0 attempt(s), not 2: infeasible for this dependency, one attempt needs 282 ms (252 ms timeout + 30 ms overhead)',
      'prazo.config.yaml:4:5: warning: dependencies[2].attempts: deadline of 2000 ms fits 1 attempt(s), not 2',
      "prazo.config.yaml:4:29: warning: dependencies[2].pool: timeout of 1400 ms exceeds the 500 ms a pool of 50 tolerates at 100 req/s (Little's law: N / λ): a slow dependency would exhaust the pool",
    ]);
  });

  it("checks a fixed concurrency limit against Little's law where the file gives the rate (SPEC C6, X7)", () => {
    const text = [
      'dependencies:',
      '  - { name: low, p99Ms: 120, pool: { size: 100, rps: 200 }, concurrencyLimit: { maxInFlight: 8 } }',
      '  - { name: fits, p99Ms: 120, pool: { size: 100, rps: 200 }, concurrencyLimit: { maxInFlight: 30 } }',
      '  - { name: none, p99Ms: 120, pool: { size: 100, rps: 200 } }',
      '  - { name: adapt, p99Ms: 120, pool: { size: 100, rps: 200 }, concurrencyLimit: { adaptive: true } }',
      '  - { name: norate, p99Ms: 120, concurrencyLimit: { maxInFlight: 1 } }',
      '  - { name: over, p99Ms: 120, pool: { size: 20, rps: 100 }, concurrencyLimit: { maxInFlight: 25 } }',
    ].join('\n');
    const { config, problems } = checkConfigText(text, noFiles);
    expect(problems.map(formatProblem)).toEqual([
      "prazo.config.yaml:2:61: warning: dependencies[0].concurrencyLimit: limit 8 is below Little's law: 200 rps × 0.120 s = 24 in flight at p99; suggest 30 (× 1.25 for bursts, retries and hedges): calls would be refused with CONCURRENCY_LIMITED while the dependency is healthy",
      // 100 rps × 0.12 s = 12 → 15 suggested: 25 fits Little's law but not the pool of 20.
      'prazo.config.yaml:7:61: warning: dependencies[5].concurrencyLimit: limit 25 is above the pool of 20: 5 call(s) it admits would wait for a connection instead of failing fast; keep maxInFlight ≤ pool.size',
    ]);
    const c = (name: string) => config!.dependencies.get(name)!.concurrency;
    expect(c('low')).toEqual({ rps: 200, p99Ms: 120, inFlightAtP99: 24, suggested: 30, limit: 8 });
    expect(c('fits')).toMatchObject({ suggested: 30, limit: 30 });
    expect(c('none')).toMatchObject({ suggested: 30, limit: undefined });
    expect(c('adapt')).toMatchObject({ suggested: 30, limit: 'adaptive' });
    expect(c('norate')).toBeUndefined(); // no rate: nothing said
  });

  it('loadConfig throws one InvalidOptionsError listing every error; a missing file is a problem', () => {
    const dir = mkdtempSync(join(tmpdir(), 'prazo-config-'));
    const file = join(dir, 'bad.yaml');
    writeFileSync(
      file,
      'dependencies:\n  - { name: a }\n  - { name: a, p99Ms: 5 }\n  - { name: a, p99Ms: 6 }\n',
    );
    try {
      loadConfig(file);
      expect.unreachable();
    } catch (error) {
      expect(error).toBeInstanceOf(InvalidOptionsError);
      // Both duplicates, in the same pass as the first entry's own problem (issue 27: before, a
      // duplicate of an entry with errors was said only once those were fixed).
      expect((error as InvalidOptionsError).problems).toHaveLength(3);
      expect((error as InvalidOptionsError).problems[1]).toContain(
        ':3:7: error: dependencies[1].name: duplicate dependency a',
      );
      expect((error as InvalidOptionsError).problems[2]).toContain(
        ':4:7: error: dependencies[2].name: duplicate dependency a',
      );
    }
    expect(checkConfigFile(join(dir, 'nope.yaml')).problems[0]!.message).toContain('cannot read');
  });

  it('refuses a config path that is not a regular file (a FIFO, a directory) before reading it; a symlink to one is read', () => {
    const dir = mkdtempSync(join(tmpdir(), 'prazo-config-'));
    try {
      const fifo = join(dir, 'fifo.yaml');
      execFileSync('mkfifo', [fifo]);
      // A writer that comes after 3 s: were the FIFO opened blocking, the open would wait for it (and
      // fail the time bound) instead of hanging the test run for ever. Refused in time, it never comes.
      const writer = spawn(
        process.execPath,
        ['-e', "setTimeout(() => require('node:fs').writeFileSync(process.argv[1], ''), 3000)", fifo],
        { stdio: 'ignore' },
      );
      const started = process.hrtime.bigint();
      try {
        expect(checkConfigFile(fifo).problems.map((p) => p.message)).toEqual([
          `cannot read: ${fifo} is a FIFO (named pipe), not a regular file`,
        ]);
        expect(Number(process.hrtime.bigint() - started) / 1e6).toBeLessThan(2_000);
      } finally {
        writer.kill();
      }
      expect(checkConfigFile(dir).problems.map((p) => p.message)).toEqual([
        `cannot read: ${dir} is a directory (EISDIR), not a regular file`,
      ]);
      const file = join(dir, 'real.yaml');
      writeFileSync(file, 'dependencies:\n  - { name: a, p99Ms: 5 }\n');
      symlinkSync(file, join(dir, 'prazo.config.yaml'));
      expect(checkConfigFile(join(dir, 'prazo.config.yaml')).problems).toEqual([]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('bounds the file size and alias expansion', () => {
    expect(lines(`a: "${'x'.repeat(1024 * 1024)}"`)[0]).toContain('larger than');
    const bomb = ['a: &a [x, x, x, x, x, x, x, x, x, x]'];
    for (let i = 0; i < 8; i += 1)
      bomb.push(`${'b'.repeat(i + 1)}: &b${i} [${`*${i === 0 ? 'a' : `b${i - 1}`}, `.repeat(10)}x]`);
    expect(lines(bomb.join('\n'))[0]).toContain('cannot read the file');
  });

  it('rejects an unknown key anywhere, with the key it was meant to be (issue 14)', () => {
    const text = [
      'version: 1',
      'servce: { name: x }', // 2
      'service: { name: orders, maxMS: 2000 }', // 3
      'calibration: { maxErrorrate: 0.1 }', // 4
      'dependencies:',
      '  - name: a', // 6
      '    p99Ms: 10',
      '    attempt: 3', // 8
      '    retryBudget: { maxratio: 0.2 }', // 9
      '    hedge: { percentil: 0.9 }', // 10
      '    recorder: { windowMS: 1000 }', // 11
      '    backoff: { base_ms: 10 }', // 12
      '    histogram_file: x', // 13
      '    clock: now', // 14
      'endpoints:',
      '  - endpoint: GET /x', // 16
      '    total_slo: 100', // 17
      '    components:',
      '      - { name: a, kind: remote, slice: 100 }', // 19
    ].join('\n');
    const found = lines(text).filter((l) => l.includes(' error: '));
    expect(found).toEqual([
      'prazo.config.yaml:2:1: error: servce: unknown key; did you mean `service`?',
      'prazo.config.yaml:3:26: error: service.maxMS: unknown key; did you mean `maxMs`?',
      'prazo.config.yaml:4:16: error: calibration.maxErrorrate: unknown key; did you mean `maxErrorRate`?',
      'prazo.config.yaml:8:5: error: dependencies[0].attempt: unknown key; did you mean `attempts`?',
      'prazo.config.yaml:9:20: error: dependencies[0].retryBudget.maxratio: unknown key; did you mean `maxRatio`?',
      'prazo.config.yaml:10:14: error: dependencies[0].hedge.percentil: unknown key; did you mean `percentile`?',
      'prazo.config.yaml:11:17: error: dependencies[0].recorder.windowMS: unknown key; did you mean `windowMs`?',
      'prazo.config.yaml:12:16: error: dependencies[0].backoff.base_ms: unknown key; did you mean `baseMs`?',
      'prazo.config.yaml:13:5: error: dependencies[0].histogram_file: unknown key; did you mean `histogram.file`?',
      'prazo.config.yaml:14:5: error: dependencies[0].clock: can only be given in code, not in a config file',
      'prazo.config.yaml:16:5: error: endpoints[0].total_slo_ms: `total_slo_ms` must be a number of ms in (0, 3600000]',
      'prazo.config.yaml:17:5: error: endpoints[0].total_slo: unknown key; did you mean `total_slo_ms`?',
      'prazo.config.yaml:19:9: error: endpoints[0].components[0].slice_ms: `slice_ms` must be a number of ms > 0',
      'prazo.config.yaml:19:34: error: endpoints[0].components[0].slice: unknown key; did you mean `slice_ms`?',
    ]);
  });

  it('reads hedge.enabled, the executor options the file did not list before, and gives them to createDependency', () => {
    const text = [
      'dependencies:',
      '  - { name: a, p99Ms: 100, hedge: { enabled: false, percentile: 0.9 } }',
      '  - { name: b, p99Ms: 100, hedge: { percentile: 0.9 }, headerFormat: { grpcTimeout: true } }',
    ].join('\n');
    const { config, problems } = checkConfigText(text, noFiles);
    expect(problems).toEqual([]);
    expect(config!.dependencies.get('a')!.options.hedge).toBe(false);
    const b = config!.dependencies.get('b')!.options;
    expect(b).toEqual({
      name: 'b',
      p99Ms: 100,
      hedge: { percentile: 0.9 },
      headerFormat: { grpcTimeout: true },
    });
    expect(createDependency(b).timeouts.responseMs).toBe(140);
  });

  it('property: every dependency the loader accepts, createDependency accepts, with the same timeouts', () => {
    const num = (min: number, max: number) => {
      const double = fc.double({ min, max, noNaN: true });
      const [lo, hi] = [Math.ceil(min), Math.floor(max)];
      return lo > hi ? double : fc.oneof(double, fc.integer({ min: lo, max: hi }));
    };
    const dep = fc.record(
      {
        name: fc.constantFrom('a', 'inventory'),
        p99Ms: num(-1, 2000),
        kind: fc.constantFrom(...DEPENDENCY_KINDS),
        unusualP99: fc.boolean(),
        attempts: num(0, 11),
        slack: num(1.2, 1.6),
        forceSlack: fc.boolean(),
        defaultDeadlineMs: num(-1, 5000),
        connectCapMs: num(-1, 1000),
        overheadMs: num(-1, 100),
        retryBudget: fc.record(
          { windowMs: num(50, 4_000_000), maxRatio: num(-1, 11), minPerSecond: num(-1, 10) },
          { requiredKeys: [] },
        ),
        hedge: fc.oneof(
          fc.boolean(),
          fc.record(
            {
              percentile: num(0.4, 1),
              minDelayMs: num(-1, 50),
              maxDelayMs: num(-1, 100),
              enabled: fc.boolean(),
            },
            { requiredKeys: [] },
          ),
        ),
        backoff: fc.record({ baseMs: num(-1, 70_000), capMs: num(-1, 70_000) }, { requiredKeys: [] }),
        recorder: fc.record({ windowMs: num(1, 100_000), minSamples: num(0, 1000) }, { requiredKeys: [] }),
      },
      { requiredKeys: ['name', 'p99Ms'] },
    );
    let accepted = 0;
    fc.assert(
      fc.property(dep, (d) => {
        const { config } = checkConfigText(stringify({ dependencies: [d] }), noFiles);
        if (config === undefined) return;
        accepted += 1;
        const loaded = config.dependencies.get(d.name)!;
        expect(createDependency(loaded.options).timeouts).toEqual(loaded.calibration);
      }),
      { numRuns: 1000 },
    );
    expect(accepted).toBeGreaterThan(5);
  });
});

describe('strict JSON', () => {
  it('property: a text JSON.parse accepts has no error before its end; one found before the end, it refuses', () => {
    const valid = (text: string): boolean => {
      try {
        JSON.parse(text);
        return true;
      } catch {
        return false;
      }
    };
    const texts = fc.oneof(
      fc.json({ maxDepth: 4 }),
      fc.json({ maxDepth: 3 }).map((t) => `${t.slice(0, -1)},${t.slice(-1)}`),
      fc.string({ maxLength: 40 }),
      fc.stringMatching(/^[{}[\]",:0-9a-z\\ .+-eE]{0,40}$/),
    );
    fc.assert(
      fc.property(texts, (text) => {
        const offset = jsonErrorOffset(text);
        expect(offset).toBeLessThanOrEqual(text.length);
        if (valid(text)) expect(offset, text).toBe(text.length);
        if (offset < text.length) expect(valid(text), text).toBe(false);
      }),
      { numRuns: 5_000 },
    );
  });
});
