import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export { waitFor } from '../../src/clock/poll.test-helpers.js';

/** Helpers of the demo's end-to-end tests: the built files, and processes seen through /proc. */

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));
export const CLI = join(ROOT, 'dist', 'cli', 'main.js');
const SERVICE = join(ROOT, 'dist', 'demo', 'services', 'main.js');

function newest(dir: string): number {
  let latest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    latest = Math.max(latest, entry.isDirectory() ? newest(path) : statSync(path).mtimeMs);
  }
  return latest;
}

/**
 * The demo's services always run from `dist/` (as `prazo demo` does from the package). `npm test`
 * builds before vitest; when the build is missing or older than the demo's sources, build it here.
 */
export function ensureBuilt(): void {
  const sources = Math.max(...['demo', 'drill', 'cli'].map((d) => newest(join(ROOT, 'src', d))));
  const built =
    existsSync(SERVICE) && existsSync(CLI) ? Math.min(statSync(SERVICE).mtimeMs, statSync(CLI).mtimeMs) : 0;
  if (built >= sources) return;
  try {
    execFileSync(
      process.execPath,
      [join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.build.json'],
      {
        cwd: ROOT,
        stdio: 'ignore',
      },
    );
  } catch {
    // tsc exits non-zero on type errors elsewhere but still emits; the checks below decide.
  }
  if (!existsSync(SERVICE) || !existsSync(CLI))
    throw new Error('the build did not produce dist/demo and dist/cli');
}

interface Proc {
  readonly pid: number;
  readonly ppid: number;
  readonly cmdline: string;
}

/** Every process of the machine (Linux /proc). */
export function processes(): Proc[] {
  const out: Proc[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      const cmdline = readFileSync(`/proc/${name}/cmdline`, 'utf8').replaceAll('\0', ' ');
      out.push({ pid: Number(name), ppid, cmdline });
    } catch {
      // the process ended while we looked
    }
  }
  return out;
}

/** Demo service processes (children of `parent`, or all of them). */
export function demoServices(parent?: number): Proc[] {
  return processes().filter(
    (p) => p.cmdline.includes(SERVICE) && (parent === undefined || p.ppid === parent),
  );
}

export function alive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return !stat.slice(stat.lastIndexOf(')') + 2).startsWith('Z');
  } catch {
    return false;
  }
}
