import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { entryPoints, REPO } from './api-report.js';

/**
 * Each entry point of the built package, loaded by name in a fresh Node process as a user's code
 * loads it (SPEC P2, P3, P4): what it loads at run time, watched by a module resolve hook (an import
 * of `prazo` must not load yaml, undici or any optional peer), and that `require()` gives the very
 * same module as `import` (one copy of each class and of the ambient deadline: no dual package).
 */

const dir = mkdtempSync(join(tmpdir(), 'prazo-load-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A resolve hook that logs every URL resolved, installed with `--import`. */
const HOOK = `import { appendFileSync } from 'node:fs';
export async function resolve(specifier, context, next) {
  const r = await next(specifier, context);
  appendFileSync(process.env.PRAZO_LOAD_LOG, r.url + '\\n');
  return r;
}`;
const REGISTER = `data:text/javascript,${encodeURIComponent(
  `import { register } from 'node:module'; register(${JSON.stringify(`data:text/javascript,${encodeURIComponent(HOOK)}`)});`,
)}`;

const node = (args: readonly string[], env: Record<string, string> = {}): string =>
  execFileSync(process.execPath, [...args], {
    cwd: REPO, // `prazo` resolves to this package by its own name (self-reference through `exports`)
    encoding: 'utf8',
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });

/** The packages (from node_modules) an import of `specifier` resolves, in a fresh process. */
function packagesLoadedBy(specifier: string): string[] {
  const log = join(dir, `${specifier.replace(/\W/g, '_')}.log`);
  node(['--import', REGISTER, '--input-type=module', '-e', `await import(${JSON.stringify(specifier)});`], {
    PRAZO_LOAD_LOG: log,
  });
  const packages = new Set<string>();
  for (const url of readFileSync(log, 'utf8').split('\n')) {
    const m = /\/node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(url);
    if (m) packages.add(m[1]!);
  }
  return [...packages].sort();
}

describe('what each entry point loads at run time (SPEC P3, P4)', () => {
  const sketch = '@datadog/sketches-js';
  const expected: Record<string, readonly string[]> = {
    prazo: [sketch],
    'prazo/calibrate': [],
    'prazo/config': [sketch, 'yaml'],
    'prazo/options': [sketch],
    'prazo/retry': [],
    'prazo/rules': ['yaml'],
    'prazo/http': [sketch, 'undici'],
    'prazo/server': [],
    'prazo/fastify': [],
    'prazo/pg': [],
    'prazo/mysql': [],
    'prazo/redis': [],
    'prazo/testing': [],
  };

  it('the hook sees what it should (a load of yaml is seen)', () => {
    expect(packagesLoadedBy('yaml')).toEqual(['yaml']);
  });

  for (const [specifier, packages] of Object.entries(expected)) {
    it(`${specifier} loads ${packages.length === 0 ? 'no package' : packages.join(', ')}, nothing else`, () => {
      expect(packagesLoadedBy(specifier)).toEqual([...packages].sort());
    });
  }

  it('the integrations with a peer load that peer and nothing of the others', () => {
    const grpc = packagesLoadedBy('prazo/grpc');
    expect(grpc).toContain('@grpc/grpc-js');
    const otel = packagesLoadedBy('prazo/otel');
    expect(otel).toContain('@opentelemetry/api');
    // prazo/connect loads Connect (and its own peer, @bufbuild/protobuf), not a transport of it.
    const connect = packagesLoadedBy('prazo/connect');
    expect(connect).toContain('@connectrpc/connect');
    expect(connect).not.toContain('@connectrpc/connect-node');
    expect(connect).not.toContain('@grpc/grpc-js');
    for (const loaded of [grpc, otel, connect])
      for (const other of [
        'yaml',
        'undici',
        'express',
        'fastify',
        'pg',
        'mysql2',
        'mariadb',
        'ioredis',
        'redis',
      ])
        expect(loaded).not.toContain(other);
  });

  it('covers every entry point of package.json', () => {
    const all = entryPoints().map((e) => e.specifier);
    expect([...Object.keys(expected), 'prazo/grpc', 'prazo/otel', 'prazo/connect'].sort()).toEqual(
      [...all].sort(),
    );
  });
});

describe('CommonJS: require() of every entry point (SPEC P2)', () => {
  const specifiers = entryPoints().map((e) => e.specifier);

  it('require(entry) gives the same module as import(entry), for every entry point', () => {
    const script = `
      const specifiers = ${JSON.stringify(specifiers)};
      (async () => {
        const out = {};
        for (const s of specifiers) {
          const required = require(s);
          const imported = await import(s);
          const names = Object.keys(imported).filter((k) => k !== 'default').sort();
          out[s] = {
            names: names.length,
            same: names.every((k) => required[k] === imported[k]),
            requiredNames: Object.keys(required).filter((k) => k !== '__esModule' && k !== 'default').length,
          };
        }
        process.stdout.write(JSON.stringify(out));
      })().catch((e) => { console.error(e); process.exit(1); });`;
    const result = JSON.parse(node(['--input-type=commonjs', '-e', script])) as Record<
      string,
      { names: number; same: boolean; requiredNames: number }
    >;
    for (const s of specifiers) {
      expect(result[s]!.names, s).toBeGreaterThan(0);
      expect(result[s]!.requiredNames, s).toBe(result[s]!.names);
      expect(result[s]!.same, `${s}: require and import must give the same objects`).toBe(true);
    }
  });

  it('one ambient deadline whichever way it was loaded: runWithDeadline (require) seen by currentDeadline (import)', () => {
    const script = `
      const { Deadline, runWithDeadline } = require('prazo');
      import('prazo').then(({ currentDeadline, Deadline: D2 }) => {
        const d = Deadline.after(1000);
        const seen = runWithDeadline(d, () => currentDeadline());
        process.stdout.write(JSON.stringify({ same: seen === d, classes: Deadline === D2 }));
      });`;
    expect(JSON.parse(node(['--input-type=commonjs', '-e', script]))).toEqual({ same: true, classes: true });
  });
});
