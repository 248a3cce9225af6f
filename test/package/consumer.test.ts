import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statfsSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { entryPoints, REPO } from './api-report.js';
import { buildProjects, type Compiled } from './tsc-build.js';

/**
 * A new user's first hour, in CI (SPEC P2, P3): the package as `npm pack` makes it, installed with
 * `npm install <tarball>` into fresh projects outside this repository (so nothing resolves through our
 * own node_modules), next to Express 4, Express 5, Fastify 4 and Fastify 5 from the registry. Each
 * project is compiled by `tsc` with `skipLibCheck: false` for `node16`, `nodenext` and `bundler`, in
 * ESM (`.mts`) and CommonJS (`.cts`, through require(esm)), and run: a real request through prazo's
 * middleware on loopback answers with the deadline it read. The Express projects have no fastify
 * installed: prazo/server's types must not need it. Their routes read `req.deadline` typed through
 * `Express.Request`, without a cast, and take the config's `service` block as it is; one more project
 * (types only) imports every entry point next to every peer the declarations name, with prazo/http's
 * typed per-call option, and a misspelt per-call option must fail to compile (#26).
 *
 * `PRAZO_CONSUMER_NODES` (paths of node binaries, `:`-separated) runs the built projects on other
 * Node lines too; by default, on the Node running the tests.
 *
 * Everything starts in `beforeAll` and each test awaits its own part: the projects install at once;
 * each project's module modes compile in one `tsc -b` as soon as it is installed (`tsc-build.ts`: one
 * program per mode with its own diagnostics, the parsed declarations shared), two projects at a time
 * (the machine has 2 cores); its programs run as soon as they are compiled.
 */

const run = promisify(execFile);
const NODES = (process.env.PRAZO_CONSUMER_NODES ?? process.execPath).split(':').filter(Boolean);

interface Variant {
  readonly name: string;
  readonly framework: 'express' | 'fastify';
  readonly dependencies: readonly string[];
  /** The TypeScript module modes it is compiled for. */
  readonly configs: readonly (keyof typeof CONFIGS)[];
  /** Types only: every entry point with every peer its declarations name; nothing is run. */
  readonly typesOnly?: boolean;
}

/**
 * One program, written once and emitted as ESM (`app.mts`) and CommonJS (`app.cts`). It uses the
 * root entry, a subpath middleware for real (a request with `grpc-timeout: 800m` answers with the
 * deadline the handler saw, an expired one gets 504, a route failing with a deadline error 504) and
 * prints what it found. `MODULE` is replaced by how it checks its own module format.
 */
function program(framework: Variant['framework'], format: 'esm' | 'cjs'): string {
  const moduleCheck =
    format === 'cjs'
      ? "if (typeof require !== 'function' || typeof module === 'undefined') throw new Error('not CommonJS');"
      : "if (typeof require !== 'undefined') throw new Error('not ESM');";
  const common = `import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { calibrateTimeout, currentDeadline, Deadline, DeadlineExceededError, isDeadlineExceeded, isPrazoError } from 'prazo';
import { classifyFailure } from 'prazo/retry';
import { FakeClock } from 'prazo/testing';
${moduleCheck}
const format: string = ${JSON.stringify(format)};

interface Answer { status: number; body: { remainingMs?: number; ambient?: boolean; error?: string } }
async function get(origin: string, path: string, headers: Record<string, string>): Promise<Answer> {
  const res = await fetch(origin + path, { headers });
  return { status: res.status, body: (await res.json()) as Answer['body'] };
}
function check(ok: boolean, what: string): void {
  if (!ok) throw new Error('check failed: ' + what);
}
async function probe(origin: string): Promise<Record<string, unknown>> {
  const fresh = await get(origin, '/deadline', { 'grpc-timeout': '800m' });
  check(fresh.status === 200, 'status ' + fresh.status);
  check(fresh.body.remainingMs !== undefined && fresh.body.remainingMs > 0 && fresh.body.remainingMs <= 800, 'remaining ' + fresh.body.remainingMs);
  check(fresh.body.ambient === true, 'the handler runs inside the ambient deadline');
  const expired = await get(origin, '/deadline', { 'x-deadline-epoch-ms': String(Date.now() - 1000) });
  check(expired.status === 504 && expired.body.error === 'DEADLINE_EXCEEDED', 'expired ' + JSON.stringify(expired));
  const failed = await get(origin, '/fail', {});
  check(failed.status === 504, 'a route failing with DeadlineExceededError answers 504, got ' + failed.status);
  return { fresh: fresh.body.remainingMs, expired: expired.status, failed: failed.status };
}
function core(): Record<string, unknown> {
  const clock = new FakeClock();
  const d = Deadline.after(1000, { clock });
  clock.advance(400);
  const error = new DeadlineExceededError({ dependency: 'x' });
  return {
    remaining: d.remainingMs(),
    guards: isPrazoError(error) && isDeadlineExceeded(error),
    responseMs: calibrateTimeout({ p99Ms: 180 }).responseMs,
    retryable: classifyFailure({ statusCode: 503 }).retryable,
    noAmbient: currentDeadline() === undefined,
  };
}
void createServer;
`;
  const express = `import express from 'express';
import { deadlineErrorHandler, deadlineMiddleware } from 'prazo/server';

async function main(): Promise<void> {
  const app = express();
  // The config's service block as it is (name included).
  const service = { name: 'checkout', defaultMs: 1500, maxMs: 5000 };
  app.use(deadlineMiddleware(service));
  // req.deadline and req.prazoSignal are typed through Express.Request (prazo/server), params or not.
  app.get('/deadline', (req, res) => {
    const { deadline } = req;
    res.json({ remainingMs: deadline.remainingMs(), ambient: currentDeadline() === deadline });
  });
  app.get('/orders/:id', (req, res) => {
    res.json({ id: req.params.id, aborted: req.prazoSignal.aborted, remainingMs: req.deadline.remainingMs() });
  });
  app.get('/fail', () => {
    throw new DeadlineExceededError({ dependency: 'inventory' });
  });
  app.use(deadlineErrorHandler());
  const server = app.listen(0, '127.0.0.1');
  await new Promise<void>((resolve) => server.once('listening', () => resolve()));
  try {
    const origin = 'http://127.0.0.1:' + (server.address() as AddressInfo).port;
    process.stdout.write(JSON.stringify({ format, core: core(), probe: await probe(origin) }));
  } finally {
    server.close();
  }
}
main().catch((error: unknown) => { console.error(error); process.exitCode = 1; });
`;
  const fastify = `import Fastify from 'fastify';
import { fastifyDeadline } from 'prazo/fastify';

async function main(): Promise<void> {
  const app = Fastify();
  await app.register(fastifyDeadline, { defaultMs: 1500, maxMs: 5000 });
  // request.deadline is typed by prazo/fastify's augmentation of FastifyRequest.
  app.get('/deadline', async (request) => ({ remainingMs: request.deadline.remainingMs(), ambient: currentDeadline() === request.deadline }));
  app.get('/fail', async () => {
    throw new DeadlineExceededError({ dependency: 'inventory' });
  });
  await app.listen({ port: 0, host: '127.0.0.1' });
  try {
    const origin = 'http://127.0.0.1:' + (app.server.address() as AddressInfo).port;
    process.stdout.write(JSON.stringify({ format, core: core(), probe: await probe(origin) }));
  } finally {
    await app.close();
  }
}
main().catch((error: unknown) => { console.error(error); process.exitCode = 1; });
`;
  return common + (framework === 'express' ? express : fastify);
}

/**
 * Every entry point imported in one file, with prazo/http's per-call option typed by its undici
 * augmentation (#26): compiled with `skipLibCheck: false` in a project that has every peer whose
 * types the declarations name, so no dependency's types may leak into them.
 */
function everyEntry(specifiers: readonly string[]): string {
  return `${specifiers.map((e, i) => `import * as e${i} from '${e}';`).join('\n')}
import { Agent, request } from 'undici';
import express from 'express';
export const all = [${specifiers.map((_, i) => `e${i}`).join(', ')}];
const dispatcher = new Agent();
export const call = request('http://127.0.0.1:1/', { dispatcher, prazo: { deadline: 800, idempotencyKey: true } });
const app = express();
app.get('/orders/:id', (req, res) => {
  res.json({ id: req.params.id, left: req.deadline.remainingMs(), aborted: req.prazoSignal.aborted });
});
`;
}

/** A per-call option misspelt: must not compile (TS2561, tsc's "did you mean"). */
const TYPO = `import { request } from 'undici';
import 'prazo/http';
export const call = request('http://127.0.0.1:1/', { prazo: { dedline: 800 } });
`;

/** Plain JavaScript, no compiler: what `require('prazo')` gives a CommonJS file. */
const PLAIN_CJS = `const prazo = require('prazo');
const server = require('prazo/server');
const entries = ['prazo/calibrate', 'prazo/config', 'prazo/retry', 'prazo/rules', 'prazo/http', 'prazo/fastify', 'prazo/pg', 'prazo/testing'];
const loaded = {};
for (const e of entries) {
  try { loaded[e] = Object.keys(require(e)).length; } catch (error) { loaded[e] = { code: error.code, message: String(error.message).split('\\n')[0] }; }
}
process.stdout.write(JSON.stringify({ Deadline: typeof prazo.Deadline, middleware: typeof server.deadlineMiddleware, loaded }));
`;

const tsconfig = (o: Record<string, unknown>, include: readonly string[]): string =>
  JSON.stringify(
    {
      compilerOptions: { strict: true, skipLibCheck: false, target: 'ES2022', types: ['node'], ...o },
      include,
    },
    null,
    2,
  );

/** The resolution modes a TypeScript consumer uses, each with the files it compiles. */
const CONFIGS = {
  node16: tsconfig({ module: 'node16', moduleResolution: 'node16', outDir: 'out/node16' }, ['app.mts']),
  nodenext: tsconfig({ module: 'nodenext', moduleResolution: 'nodenext', outDir: 'out/nodenext' }, [
    'app.mts',
    'app.cts',
  ]),
  bundler: tsconfig({ module: 'preserve', moduleResolution: 'bundler', noEmit: true }, ['app.mts']),
  // Documented limitation (README): TypeScript's node16 mode refuses require() of an ES module.
  node16cjs: tsconfig({ module: 'node16', moduleResolution: 'node16', noEmit: true }, ['app.cts']),
  /** Every entry point at once (#26). */
  entries: tsconfig({ module: 'nodenext', moduleResolution: 'nodenext', noEmit: true }, ['entries.mts']),
  /** Must fail: a misspelt per-call option (#26). */
  typo: tsconfig({ module: 'nodenext', moduleResolution: 'nodenext', noEmit: true }, ['typo.mts']),
} as const;

/** The configs whose compile is expected to fail. */
const FAILING: ReadonlySet<keyof typeof CONFIGS> = new Set(['node16cjs', 'typo']);

const ALL_MODES = ['node16', 'nodenext', 'bundler'] as const;
const VARIANTS: readonly Variant[] = [
  {
    name: 'express4',
    framework: 'express',
    dependencies: ['express@^4.17.0', '@types/express@^4.17.0'],
    configs: ALL_MODES,
  },
  {
    name: 'express5',
    framework: 'express',
    dependencies: ['express@^5.0.0', '@types/express@^5.0.0', 'undici@^7.0.0'],
    configs: [...ALL_MODES, 'node16cjs', 'typo'],
  },
  // Every entry point, next to every peer its declarations name (#26).
  {
    name: 'every-entry',
    framework: 'express',
    dependencies: [
      'express@^5.0.0',
      '@types/express@^5.0.0',
      'undici@^7.0.0',
      'fastify@^5.0.0',
      '@grpc/grpc-js@^1.10.0',
      '@opentelemetry/api@^1.9.0',
      '@types/pg@^8.11.0',
      '@connectrpc/connect@^2.0.0',
    ],
    configs: ['entries'],
    typesOnly: true,
  },
  // Fastify's own types are checked in both formats (nodenext); the resolution modes are the Express ones'.
  { name: 'fastify4', framework: 'fastify', dependencies: ['fastify@^4.0.0'], configs: ['nodenext'] },
  { name: 'fastify5', framework: 'fastify', dependencies: ['fastify@^5.0.0'], configs: ['nodenext'] },
];

/**
 * Where the projects go: a RAM-backed /dev/shm when the machine has one with room and exec allowed
 * (the five projects are ~12,000 small files; on this ext4 disk their installs spent 33 s of system
 * time against 17 s in tmpfs), else the system's temporary directory.
 */
function scratch(): string {
  try {
    const options = readFileSync('/proc/mounts', 'utf8')
      .split('\n')
      .map((line) => line.split(' '))
      .find(([, mount, type]) => mount === '/dev/shm' && type === 'tmpfs')?.[3];
    const { bavail, bsize } = statfsSync('/dev/shm');
    if (options !== undefined && !options.split(',').includes('noexec') && bavail * bsize > 2 ** 31)
      return '/dev/shm';
  } catch {
    // No /proc or no /dev/shm: the system's temporary directory.
  }
  return tmpdir();
}

const root = mkdtempSync(join(scratch(), 'prazo-consumers-'));
const installed = new Map<string, Promise<{ ok: boolean; output: string }>>();
const compiled = new Map<string, Promise<Compiled>>();
/** A project's program run by a Node, by `${name}/${node}/${file}`. */
const ran = new Map<string, Promise<{ stdout: string }>>();

/**
 * Runs tasks with at most `limit` at once (tsc is CPU-bound; the machine has 2 cores), the waiting
 * one with the most `work` first (the project with the most module modes: the longest build).
 */
function limited<T>(limit: number): (work: number, task: () => Promise<T>) => Promise<T> {
  let active = 0;
  const queue: { work: number; start: () => void }[] = [];
  return async (work, task) => {
    if (active >= limit)
      await new Promise<void>((start) => {
        queue.push({ work, start });
        queue.sort((a, b) => b.work - a.work);
      });
    active += 1;
    try {
      return await task();
    } finally {
      active -= 1;
      queue.shift()?.start();
    }
  };
}

/** Starts `task` now; a failure is the awaiting test's (not an unhandled rejection meanwhile). */
function started<T>(task: Promise<T>): Promise<T> {
  task.catch(() => {});
  return task;
}

async function install(dir: string, tarball: string, v: Variant): Promise<{ ok: boolean; output: string }> {
  try {
    const { stdout, stderr } = await run(
      'npm',
      [
        'install',
        '--no-audit',
        '--no-fund',
        '--ignore-scripts',
        '--prefer-offline',
        '--loglevel=error',
        tarball,
        ...v.dependencies,
        '@types/node@^20.19.0',
      ],
      { cwd: dir, maxBuffer: 16 * 1024 * 1024 },
    );
    return { ok: true, output: stdout + stderr };
  } catch (error) {
    const e = error as { stdout?: string; stderr?: string };
    return { ok: false, output: `${e.stdout ?? ''}${e.stderr ?? ''}` };
  }
}

beforeAll(async () => {
  const { stdout } = await run('npm', ['pack', '--json', '--ignore-scripts', '--pack-destination', root], {
    cwd: REPO,
  });
  const tarball = join(root, (JSON.parse(stdout) as { filename: string }[])[0]!.filename);
  // Every project installs now; each compiles its module modes once installed, two projects at a
  // time, and runs its programs once compiled; each test awaits its own part.
  const slot = limited<Map<string, Compiled>>(2);
  for (const v of VARIANTS) {
    const dir = join(root, v.name);
    mkdirSync(dir);
    writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: `consumer-${v.name}`, private: true }));
    writeFileSync(join(dir, 'app.mts'), program(v.framework, 'esm'));
    writeFileSync(join(dir, 'app.cts'), program(v.framework, 'cjs'));
    writeFileSync(join(dir, 'plain.cjs'), PLAIN_CJS);
    writeFileSync(join(dir, 'entries.mts'), everyEntry(entryPoints().map((e) => e.specifier)));
    writeFileSync(join(dir, 'typo.mts'), TYPO);
    for (const [name, text] of Object.entries(CONFIGS))
      writeFileSync(join(dir, `tsconfig.${name}.json`), text);
    const done = install(dir, tarball, v);
    installed.set(v.name, done);
    const configs = v.configs.map((c) => `tsconfig.${c}.json`);
    const built = done.then(() => slot(configs.length, () => buildProjects(dir, configs)));
    for (const [i, config] of v.configs.entries())
      compiled.set(
        `${v.name}/${config}`,
        built.then((results) => results.get(configs[i]!)!),
      );
    if (v.typesOnly === true) continue;
    for (const node of NODES) {
      const after = (first: Promise<unknown>, file: string): void => {
        ran.set(
          `${v.name}/${node}/${file}`,
          started(first.then(() => run(node, [file], { cwd: dir, timeout: 60_000 }))),
        );
      };
      after(compiled.get(`${v.name}/nodenext`)!, join('out', 'nodenext', 'app.mjs'));
      after(compiled.get(`${v.name}/nodenext`)!, join('out', 'nodenext', 'app.cjs'));
      after(done, 'plain.cjs');
    }
  }
}, 600_000);

afterAll(() => rmSync(root, { recursive: true, force: true }));

for (const v of VARIANTS) {
  describe(`a consumer with ${v.name} (SPEC P2, P3)`, () => {
    const dir = join(root, v.name);

    it(`installs from the tarball next to ${v.dependencies[0]} with no peer conflict`, async () => {
      const result = await installed.get(v.name)!;
      expect(result.output).not.toMatch(/ERESOLVE|peer dep/i);
      expect(result.ok, result.output).toBe(true);
      const lock = JSON.parse(readFileSync(join(dir, 'package-lock.json'), 'utf8')) as {
        packages: Record<string, { version?: string }>;
      };
      expect(lock.packages['node_modules/prazo']?.version).toBe('0.1.0');
      const major = Number(/@\^(\d+)/.exec(v.dependencies[0]!)![1]);
      expect(Number(lock.packages[`node_modules/${v.framework}`]!.version!.split('.')[0])).toBe(major);
      // The Express projects do not have fastify at all: prazo/server's types must not need it.
      if (v.framework === 'express' && v.typesOnly !== true)
        expect(existsSync(join(dir, 'node_modules', 'fastify'))).toBe(false);
    }, 300_000);

    for (const config of v.configs.filter((c) => !FAILING.has(c))) {
      const files =
        config === 'nodenext' ? 'ESM and CommonJS' : config === 'entries' ? 'every entry point' : 'ESM';
      it(`compiles (${files}) with tsc, module ${config}, skipLibCheck false`, async () => {
        const result = await compiled.get(`${v.name}/${config}`)!;
        expect(result.output).toBe('');
        expect(result.code).toBe(0);
      }, 300_000);
    }

    if (v.name === 'express5') {
      it('installs the CLI: prazo --version, and prazo check on the shipped example config', async () => {
        await installed.get(v.name);
        const bin = join(dir, 'node_modules', '.bin', 'prazo');
        const version = await run(bin, ['--version'], { cwd: dir, timeout: 60_000 });
        expect(version.stdout.trim()).toBe('0.1.0');
        const example = join(dir, 'node_modules', 'prazo', 'examples', 'prazo.config.yaml');
        const check = await run(bin, ['check', example], {
          cwd: join(dir, 'node_modules', 'prazo', 'examples'),
        });
        expect(check.stdout).toContain('0 error(s)');
      }, 60_000);
    }

    if (v.configs.includes('typo')) {
      it("a misspelt per-call option of prazo/http does not compile: TS2561 with tsc's did-you-mean", async () => {
        const result = await compiled.get(`${v.name}/typo`)!;
        expect(result.code).not.toBe(0);
        expect(result.output).toContain('TS2561');
        expect(result.output).toContain("Did you mean to write 'deadline'?");
      }, 300_000);
    }

    if (v.configs.includes('node16cjs')) {
      it('CommonJS under TypeScript node16 is refused (TS1479), as the README says: nodenext is needed', async () => {
        const result = await compiled.get(`${v.name}/node16cjs`)!;
        expect(result.code).not.toBe(0);
        expect(result.output).toContain('TS1479');
      }, 300_000);
    }

    for (const node of v.typesOnly === true ? [] : NODES) {
      const label = NODES.length > 1 ? ` (${node})` : '';
      for (const [format, file] of [
        ['ESM', 'app.mjs'],
        ['CommonJS', 'app.cjs'],
      ] as const) {
        it(`runs as ${format}: a request through the middleware answers with the deadline it read${label}`, async () => {
          const { stdout } = await ran.get(`${v.name}/${node}/${join('out', 'nodenext', file)}`)!;
          const out = JSON.parse(stdout) as {
            format: string;
            core: Record<string, unknown>;
            probe: { fresh: number; expired: number; failed: number };
          };
          expect(out.format).toBe(format === 'ESM' ? 'esm' : 'cjs');
          expect(out.core).toEqual({
            remaining: 600,
            guards: true,
            responseMs: 252,
            retryable: true,
            noAmbient: true,
          });
          expect(out.probe.fresh).toBeGreaterThan(0);
          expect(out.probe.fresh).toBeLessThanOrEqual(800);
          expect(out.probe).toMatchObject({ expired: 504, failed: 504 });
        }, 120_000);
      }

      it(`require('prazo') from plain JavaScript, every subpath without a peer (prazo/http with undici)${label}`, async () => {
        const { stdout } = await ran.get(`${v.name}/${node}/plain.cjs`)!;
        const out = JSON.parse(stdout) as {
          Deadline: string;
          middleware: string;
          loaded: Record<string, number | { code: string; message: string }>;
        };
        expect(out).toMatchObject({ Deadline: 'function', middleware: 'function' });
        // undici is an optional peer: prazo/http loads where the project has undici, and where it
        // has not, fails naming it (every other subpath loads either way).
        const withUndici = v.dependencies.some((d) => d.startsWith('undici@'));
        for (const [entry, names] of Object.entries(out.loaded)) {
          if (entry === 'prazo/http' && !withUndici)
            expect(names, entry).toMatchObject({
              code: expect.stringMatching(/^(ERR_)?MODULE_NOT_FOUND$/),
              message: expect.stringContaining("'undici'"),
            });
          else expect(names, entry).toBeGreaterThan(0);
        }
      }, 60_000);
    }
  });
}
