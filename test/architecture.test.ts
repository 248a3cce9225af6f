import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

/**
 * Keeps docs/ARCHITECTURE.md true: the layers it draws are the ones the code imports. A module may
 * import from its own layer or below, integrations never import each other, there is no runtime import
 * cycle, only the clock module reads time, only prazo/otel touches OpenTelemetry, and each entry point
 * of the package loads only the packages its users have (SPEC P3, P4).
 */

const ROOT = new URL('../src/', import.meta.url).pathname;

/** Lowest first. A folder may import from the same or a lower layer. */
const LAYERS: readonly (readonly string[])[] = [
  ['clock', 'signal', 'errors', 'options', 'deadline', 'testing'],
  ['latency', 'calibrate', 'slo'],
  ['budget', 'retry', 'hedge', 'balance', 'limit', 'throttle'],
  ['dependency'],
  ['config'],
  ['http', 'server', 'grpc', 'connect', 'pg', 'mysql', 'redis'],
  ['otel', 'rules', 'mesh'],
  ['demo', 'drill', 'cli'],
];
const INTEGRATIONS = new Set(LAYERS[5]);
const layerOf = (folder: string): number => LAYERS.findIndex((l) => l.includes(folder));

const isSource = (f: string): boolean =>
  f.endsWith('.ts') && !/\.test(-helpers)?\.ts$/.test(f) && !f.endsWith('.test.ts');

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sources(path);
    return isSource(name) ? [path] : [];
  });
}

interface Edge {
  readonly from: string;
  readonly to: string;
  readonly typeOnly: boolean;
}

const IMPORT = /^(import|export)\s+(type\s+)?[^'";]*?from\s+'(\.[^']+)'/gm;
/**
 * Entry points that only gather names from below (the root, and `prazo/options`, the declarations of
 * the core's options): files beside the folders, above the layers they gather from, not in one.
 */
const GATHERING_ENTRIES = new Set(['index.ts', 'options-entry.ts']);

const folderOf = (file: string): string => relative(ROOT, file).split('/')[0]!.replace(/\.ts$/, '');

const files = sources(ROOT);

/** Every import of a file, relative or bare, runtime or type-only (`import type`, `export type`). */
const ANY_IMPORT =
  /^(?:import|export)\s+(type\s+)?[^'";]*?from\s+'([^']+)'|^import\s+'([^']+)'|\bimport\('([^']+)'\)/gm;
interface Import {
  readonly specifier: string;
  readonly typeOnly: boolean;
}
const importsOf = new Map<string, Import[]>(
  files.map((file) => [
    file,
    [...readFileSync(file, 'utf8').matchAll(ANY_IMPORT)].map((m) => ({
      specifier: (m[2] ?? m[3] ?? m[4])!,
      typeOnly: m[1] !== undefined,
    })),
  ]),
);

/** The packages (bare specifiers, `node:` aside) an entry file reaches, at run time or in its types. */
function packagesReached(entry: string, runtimeOnly: boolean): Set<string> {
  const packages = new Set<string>();
  const seen = new Set<string>();
  const visit = (file: string): void => {
    if (seen.has(file)) return;
    seen.add(file);
    for (const { specifier, typeOnly } of importsOf.get(file) ?? []) {
      if (runtimeOnly && typeOnly) continue;
      if (specifier.startsWith('.')) visit(normalize(join(dirname(file), specifier)).replace(/\.js$/, '.ts'));
      else if (!specifier.startsWith('node:'))
        packages.add(
          specifier.startsWith('@') ? specifier.split('/').slice(0, 2).join('/') : specifier.split('/')[0]!,
        );
    }
  };
  visit(join(ROOT, entry));
  return packages;
}

/** The package's entry points, as `package.json` exports them, mapped back to their source files. */
const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as {
  exports: Record<string, string | { types: string; default: string }>;
};
const ENTRIES = Object.entries(pkg.exports)
  .filter(([, t]) => typeof t !== 'string')
  .map(([subpath, t]) => ({
    subpath,
    source: (t as { default: string }).default.replace(/^\.\/dist\//, '').replace(/\.js$/, '.ts'),
  }));
const edges: Edge[] = files.flatMap((from) =>
  [...readFileSync(from, 'utf8').matchAll(IMPORT)].map((m) => ({
    from,
    to: normalize(join(dirname(from), m[3]!)).replace(/\.js$/, '.ts'),
    typeOnly: m[2] !== undefined,
  })),
);

describe('architecture (docs/ARCHITECTURE.md)', () => {
  it('finds the source tree', () => {
    expect(files.length).toBeGreaterThan(100);
    expect(edges.length).toBeGreaterThan(200);
  });

  it('puts every folder of src/ in exactly one layer', () => {
    const folders = new Set(files.filter((f) => !GATHERING_ENTRIES.has(relative(ROOT, f))).map(folderOf));
    for (const folder of folders) expect(layerOf(folder), folder).toBeGreaterThanOrEqual(0);
  });

  it('imports only from the same layer or below, and integrations never from each other', () => {
    const wrong = edges
      .filter((e) => !GATHERING_ENTRIES.has(relative(ROOT, e.from)) && folderOf(e.to) !== folderOf(e.from))
      .filter((e) => {
        const a = folderOf(e.from);
        const b = folderOf(e.to);
        return layerOf(b) > layerOf(a) || (INTEGRATIONS.has(a) && INTEGRATIONS.has(b));
      })
      .map((e) => `${relative(ROOT, e.from)} -> ${relative(ROOT, e.to)}`);
    expect(wrong).toEqual([]);
  });

  it('keeps options/ the kernel every component builds on: it imports only clock/ and errors/', () => {
    const up = edges
      .filter(
        (e) => folderOf(e.from) === 'options' && !['options', 'clock', 'errors'].includes(folderOf(e.to)),
      )
      .map((e) => `${relative(ROOT, e.from)} -> ${relative(ROOT, e.to)}`);
    expect(up).toEqual([]);
  });

  it('lets every module outside src/dependency reach the executor only through its public seam, never its internals (#25)', () => {
    // The executor's face for integrations: createDependency, openCall and unmanagedPlan
    // (dependency.ts), the types, the events, the option declarations (and resolveDeadline), the trace
    // seam, and transport.ts (executorOf, the Transport interface). Its classes (execution.ts,
    // attempt.ts) and its plan's internals (core.ts, notify.ts, outcome.ts) are src/dependency's own:
    // not only for the integrations (prazo/http, gRPC, the stores) but for prazo/config's watcher (it
    // prepares updates through `executorOf(d).prepare`), prazo/otel (its tracer goes on the plan's
    // `events`) and the demo.
    const seam = new Set([
      'dependency.ts',
      'types.ts',
      'events.ts',
      'options.ts',
      'trace.ts',
      'transport.ts',
      'index.ts',
    ]);
    const wrong = [...importsOf]
      .filter(([file]) => folderOf(file) !== 'dependency')
      .flatMap(([file, imports]) =>
        imports
          .filter((i) => i.specifier.startsWith('.'))
          .map((i) => normalize(join(dirname(file), i.specifier)).replace(/\.js$/, '.ts'))
          .filter((to) => folderOf(to) === 'dependency' && !seam.has(relative(join(ROOT, 'dependency'), to)))
          .map((to) => `${relative(ROOT, file)} -> ${relative(ROOT, to)}`),
      );
    expect(wrong).toEqual([]);
    // The executor's classes are final: nothing outside src/dependency extends them.
    const subclasses = files
      .filter((f) => folderOf(f) !== 'dependency')
      .filter((f) => /\bextends\s+(Execution|Attempt)\b/.test(readFileSync(f, 'utf8')))
      .map((f) => relative(ROOT, f));
    expect(subclasses).toEqual([]);
    // And the seam exists: the transport interface and the executor's handle (transport.ts), the
    // door a transport's call goes through and the one unmanaged plan (dependency.ts).
    const transport = readFileSync(join(ROOT, 'dependency/transport.ts'), 'utf8');
    for (const name of ['interface Transport', 'function executorOf'])
      expect(transport, name).toContain(name);
    const door = readFileSync(join(ROOT, 'dependency/dependency.ts'), 'utf8');
    for (const name of ['function openCall', 'function unmanagedPlan']) expect(door, name).toContain(name);
  });

  it('has no runtime import cycle', () => {
    const graph = new Map<string, string[]>();
    for (const e of edges) if (!e.typeOnly) graph.set(e.from, [...(graph.get(e.from) ?? []), e.to]);
    const state = new Map<string, 1 | 2>();
    const cycles: string[] = [];
    const visit = (node: string, path: string[]): void => {
      state.set(node, 1);
      for (const next of graph.get(node) ?? []) {
        if (state.get(next) === 1)
          cycles.push([...path, node, next].map((p) => relative(ROOT, p)).join(' -> '));
        else if (!state.has(next)) visit(next, [...path, node]);
      }
      state.set(node, 2);
    };
    for (const file of files) if (!state.has(file)) visit(file, []);
    expect(cycles).toEqual([]);
  });

  it('reads time only in src/clock, and OpenTelemetry only in src/otel', () => {
    const rawTime = /Date\.now\(\)|new Date\(|performance\.now\(\)|[^.\w]setTimeout\(|[^.\w]setInterval\(/;
    const offenders = files.filter((f) => folderOf(f) !== 'clock' && rawTime.test(readFileSync(f, 'utf8')));
    expect(offenders.map((f) => relative(ROOT, f))).toEqual([]);
    const otel = files.filter(
      (f) => folderOf(f) !== 'otel' && readFileSync(f, 'utf8').includes("'@opentelemetry/"),
    );
    expect(otel.map((f) => relative(ROOT, f))).toEqual([]);
  });

  it('keeps the root entry free of optional peers and heavy integrations', () => {
    const root = edges.filter((e) => relative(ROOT, e.from) === 'index.ts').map((e) => folderOf(e.to));
    for (const folder of root) expect(layerOf(folder), folder).toBeLessThanOrEqual(layerOf('config'));
  });

  it('maps every entry point of package.json to a source file', () => {
    expect(ENTRIES.map((e) => e.subpath)).toEqual(
      expect.arrayContaining(['.', './calibrate', './config', './retry', './rules', './server', './fastify']),
    );
    for (const e of ENTRIES) expect(files, e.subpath).toContain(join(ROOT, e.source));
  });

  it('loads per entry point only the packages its users have: no yaml, undici or peer in the root', () => {
    // What each entry may load at run time; everything else (optional peers above all) is absent.
    const allowed: Record<string, readonly string[]> = {
      '.': ['@datadog/sketches-js'],
      './calibrate': ['@datadog/sketches-js'],
      './config': ['@datadog/sketches-js', 'yaml'],
      './options': ['@datadog/sketches-js'],
      './retry': ['@datadog/sketches-js'],
      './rules': ['@datadog/sketches-js', 'yaml'],
      './server': ['@datadog/sketches-js'],
      './fastify': ['@datadog/sketches-js'],
      './testing': [],
    };
    for (const [subpath, packages] of Object.entries(allowed)) {
      const entry = ENTRIES.find((e) => e.subpath === subpath)!;
      const reached = [...packagesReached(entry.source, true)].filter((p) => !packages.includes(p));
      expect(reached, `${subpath} loads`).toEqual([]);
    }
    // The root and the calibration entry do not even mention undici or a peer in their types.
    for (const subpath of ['.', './calibrate', './retry', './testing']) {
      const entry = ENTRIES.find((e) => e.subpath === subpath)!;
      const typed = [...packagesReached(entry.source, false)].filter((p) => p !== '@datadog/sketches-js');
      expect(typed, `${subpath} names in its types`).toEqual([]);
    }
  });

  it('lets an Express user compile prazo/server without fastify, and generate rules without OpenTelemetry', () => {
    const server = ENTRIES.find((e) => e.subpath === './server')!;
    const serverTypes = packagesReached(server.source, false);
    expect([...serverTypes].filter((p) => p === 'fastify' || p === 'express')).toEqual([]);
    const rules = ENTRIES.find((e) => e.subpath === './rules')!;
    expect([...packagesReached(rules.source, false)].filter((p) => p.startsWith('@opentelemetry/'))).toEqual(
      [],
    );
    const fastify = ENTRIES.find((e) => e.subpath === './fastify')!;
    expect(packagesReached(fastify.source, true).has('fastify')).toBe(false); // types only: no runtime import
    expect(packagesReached(fastify.source, false).has('fastify')).toBe(true);
  });
});
