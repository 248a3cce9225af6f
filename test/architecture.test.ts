import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

/**
 * Keeps docs/ARCHITECTURE.md true: the layers it draws are the ones the code imports. A module may
 * import from its own layer or below, integrations never import each other, there is no runtime import
 * cycle, only the clock module reads time, and only prazo/otel touches OpenTelemetry.
 */

const ROOT = new URL('../src/', import.meta.url).pathname;

/** Lowest first. A folder may import from the same or a lower layer. */
const LAYERS: readonly (readonly string[])[] = [
  ['clock', 'signal', 'errors', 'options', 'deadline', 'testing'],
  ['latency', 'calibrate', 'slo', 'config'],
  ['budget', 'retry', 'hedge'],
  ['dependency'],
  ['http', 'server', 'grpc', 'pg'],
  ['otel', 'rules'],
  ['demo', 'drill', 'cli'],
];
const INTEGRATIONS = new Set(LAYERS[4]);
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
const folderOf = (file: string): string => relative(ROOT, file).split('/')[0]!.replace(/\.ts$/, '');

const files = sources(ROOT);
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
    const folders = new Set(files.map(folderOf).filter((f) => f !== 'index'));
    for (const folder of folders) expect(layerOf(folder), folder).toBeGreaterThanOrEqual(0);
  });

  it('imports only from the same layer or below, and integrations never from each other', () => {
    const wrong = edges
      .filter((e) => folderOf(e.from) !== 'index' && folderOf(e.to) !== folderOf(e.from))
      .filter((e) => {
        const a = folderOf(e.from);
        const b = folderOf(e.to);
        return layerOf(b) > layerOf(a) || (INTEGRATIONS.has(a) && INTEGRATIONS.has(b));
      })
      .map((e) => `${relative(ROOT, e.from)} -> ${relative(ROOT, e.to)}`);
    expect(wrong).toEqual([]);
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
    for (const folder of root) expect(layerOf(folder), folder).toBeLessThanOrEqual(3);
  });
});
