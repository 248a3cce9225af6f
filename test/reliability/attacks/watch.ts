import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { systemClock } from '../../../src/clock/index.js';

/**
 * What the attack files share to follow a call: a promise watched without awaiting it (its rejection
 * never left unhandled), the pending promise work let run, a real-time call's outcome and duration,
 * and a run in a child `node` for an attack that could kill or freeze the test worker.
 */

/** Lets the promise reactions queued so far (and the ones they queue) run. */
export const flush = async (): Promise<void> => {
  for (let i = 0; i < 5; i += 1) await new Promise<void>((resolve) => setImmediate(resolve));
};

export interface Box<T> {
  state: 'pending' | 'ok' | 'err';
  value?: T;
  error?: unknown;
}

/** Watches a promise without ever leaving its rejection unhandled. */
export function watch<T>(p: Promise<T>): Box<T> {
  const box: Box<T> = { state: 'pending' };
  p.then(
    (value) => {
      box.state = 'ok';
      box.value = value;
    },
    (error: unknown) => {
      box.state = 'err';
      box.error = error;
    },
  );
  return box;
}

/** Awaits `p` on the real clock: its value or its error, and how long it took (ms). */
export async function outcome<T>(p: Promise<T>): Promise<{ value?: T; error?: unknown; ms: number }> {
  const t0 = systemClock.now();
  try {
    const value = await p;
    return { value, ms: systemClock.now() - t0 };
  } catch (error) {
    return { error, ms: systemClock.now() - t0 };
  }
}

/** Waits `ms` of real time. */
export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Whether `check` holds within `ms` of real time (polled every 10 ms): a socket's close event on its
 * way is not a leak. Generous by default (the machine is shared).
 */
export async function eventually(check: () => boolean, ms = 2_000): Promise<boolean> {
  const until = systemClock.now() + ms;
  while (!check()) {
    if (systemClock.now() > until) return false;
    await sleep(10);
  }
  return true;
}

const ROOT = resolve(__dirname, '../../..');

const HOOKS = `
import { readFileSync, existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { createRequire } from 'node:module';
const ts = createRequire(${JSON.stringify(`${ROOT}/package.json`)})('typescript');
export async function resolve(specifier, context, next) {
  if (specifier.endsWith('.js') && context.parentURL?.endsWith('.ts')) {
    const url = new URL(specifier, context.parentURL);
    if (!existsSync(fileURLToPath(url))) return next(url.href.replace(/\\.js$/, '.ts'), context);
  }
  return next(specifier, context);
}
export async function load(url, context, next) {
  if (!url.endsWith('.ts')) return next(url, context);
  const source = ts.transpileModule(readFileSync(fileURLToPath(url), 'utf8'), {
    compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 },
  }).outputText;
  return { format: 'module', source, shortCircuit: true };
}`;

/** Runs `script` (ESM; `@src/` is the sources) in a child node that transpiles the TypeScript it imports. */
export function child(script: string, timeoutMs = 15_000) {
  const dir = mkdtempSync(join(tmpdir(), 'prazo-child-'));
  try {
    writeFileSync(join(dir, 'hooks.mjs'), HOOKS);
    writeFileSync(
      join(dir, 'register.mjs'),
      `import { register } from 'node:module'; register(${JSON.stringify(pathToFileURL(join(dir, 'hooks.mjs')).href)});`,
    );
    writeFileSync(join(dir, 'main.mjs'), script.replaceAll('@src/', pathToFileURL(`${ROOT}/src/`).href));
    return spawnSync(
      process.execPath,
      ['--import', pathToFileURL(join(dir, 'register.mjs')).href, join(dir, 'main.mjs')],
      { encoding: 'utf8', timeout: timeoutMs },
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
