import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { join, relative } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { entryPoints, REPO } from './api-report.js';
import { buildProjects, type Compiled } from './tsc-build.js';

/**
 * The published declarations, as a TypeScript user's compiler reads them (#26 item 3): they name no
 * package of prazo's own `dependencies` (a user compiling with `skipLibCheck: false` would have to
 * check that package's types too: `@datadog/sketches-js`'s import `protobufjs` and failed, 8 errors,
 * through prazo/http), and every entry point compiles with `skipLibCheck: false`, with the typed
 * per-call option of prazo/http and the typed Express request, while a misspelt per-call option is a
 * compile error with tsc's "did you mean". In this repository (the package resolves itself by name,
 * next to its dev dependencies); `consumer.test.ts` does the same from the packed tarball. Both
 * projects compile in one `tsc -b` (`tsc-build.ts`: each its own program and diagnostics, the parsed
 * declarations shared), started before the first test.
 */

const dir = join(REPO, '.tmp', `declarations-${process.pid}`);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const pkg = JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')) as {
  dependencies: Record<string, string>;
  peerDependencies: Record<string, string>;
};

/** The `.d.ts` files the package ships (package.json `files` leaves out the tools' declarations). */
function shipped(folder: string): string[] {
  return readdirSync(folder, { withFileTypes: true }).flatMap((e) => {
    const path = join(folder, e.name);
    if (e.isDirectory()) return ['cli', 'demo', 'drill'].includes(e.name) ? [] : shipped(path);
    return e.name.endsWith('.d.ts') ? [path] : [];
  });
}

const SPECIFIER = /(?:from\s+|import\s*\(\s*|declare module\s+)['"]([^'"]+)['"]/g;
const packageOf = (s: string): string =>
  s
    .split('/')
    .slice(0, s.startsWith('@') ? 2 : 1)
    .join('/');

describe('the published declarations (#26 item 3)', () => {
  it("name no package of prazo's dependencies: only node's modules and optional peers", () => {
    const builtins = new Set(builtinModules);
    const named = new Map<string, string[]>();
    for (const file of shipped(join(REPO, 'dist'))) {
      for (const [, s] of readFileSync(file, 'utf8').matchAll(SPECIFIER)) {
        if (s!.startsWith('.') || s!.startsWith('node:') || builtins.has(s!)) continue;
        const name = packageOf(s!);
        named.set(name, [...(named.get(name) ?? []), relative(REPO, file)]);
      }
    }
    // Before: dist/latency/sketch.d.ts imported @datadog/sketches-js (reached from prazo/http).
    const dependencies = [...named].filter(([name]) => name in pkg.dependencies);
    expect(dependencies).toEqual([]);
    const notPeers = [...named.keys()].filter((name) => !(name in pkg.peerDependencies));
    expect(notPeers).toEqual([]);
  });

  const entries = entryPoints().map((e) => e.specifier);
  const app = `${entries.map((e, i) => `import * as e${i} from '${e}';`).join('\n')}
import express from 'express';
import { Agent, request } from 'undici';
export const all = [${entries.map((_, i) => `e${i}`).join(', ')}];

// prazo/http's per-call option, typed by its augmentation of undici's dispatch options.
const dispatcher = new Agent();
export const call = request('http://127.0.0.1:1/', { dispatcher, prazo: { deadline: 800, idempotencyKey: true } });

// Express's Request carries the deadline fields (prazo/server), on a route with params, no cast.
const router = express();
router.get('/orders/:id', (req, res) => {
  const left: number = req.deadline.remainingMs();
  const aborted: boolean = req.prazoSignal.aborted;
  res.json({ id: req.params.id, left, aborted });
});
`;
  const typo = `import { request } from 'undici';
import 'prazo/http';
export const call = request('http://127.0.0.1:1/', { prazo: { dedline: 800 } });
`;
  const config = (file: string): string =>
    JSON.stringify({
      compilerOptions: {
        strict: true,
        skipLibCheck: false,
        module: 'nodenext',
        moduleResolution: 'nodenext',
        target: 'ES2022',
        types: ['node'],
        noEmit: true,
      },
      files: [file],
    });
  let compiled: Promise<Map<string, Compiled>>;
  beforeAll(() => {
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'app.mts'), app);
    writeFileSync(join(dir, 'tsconfig.app.json'), config('app.mts'));
    writeFileSync(join(dir, 'typo.mts'), typo);
    writeFileSync(join(dir, 'tsconfig.typo.json'), config('typo.mts'));
    compiled = buildProjects(dir, ['tsconfig.app.json', 'tsconfig.typo.json']);
  });

  it('every entry point compiles with skipLibCheck false, with the typed per-call option and Express request', async () => {
    const result = (await compiled).get('tsconfig.app.json')!;
    expect(result.output).toBe('');
    expect(result.code).toBe(0);
  }, 120_000);

  it("a misspelt per-call option does not compile: tsc's did-you-mean", async () => {
    const result = (await compiled).get('tsconfig.typo.json')!;
    expect(result.code).not.toBe(0);
    expect(result.output).toContain('TS2561');
    expect(result.output).toContain("Did you mean to write 'deadline'?");
  }, 120_000);
});
