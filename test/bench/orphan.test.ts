import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, expect, it } from 'vitest';

/**
 * A bench child whose parent dies exits by itself (bench/lib/child.mjs): a load generator orphaned by
 * a killed `npm run bench` was seen spinning at 50% CPU, re-parented to init, for an hour.
 */

const CHILD_LIB = resolve(import.meta.dirname, '../../bench/lib/child.mjs');
const dir = mkdtempSync(join(tmpdir(), 'prazo-bench-orphan-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

it('a child spinning forever exits within seconds once its parent is SIGKILLed', async () => {
  const spin = join(dir, 'spin.mjs');
  const parent = join(dir, 'parent.mjs');
  const pidFile = join(dir, 'pid');
  writeFileSync(
    spin,
    `import ${JSON.stringify(CHILD_LIB)};\nimport { writeFileSync } from 'node:fs';\nwriteFileSync(process.argv[2], String(process.pid));\nsetInterval(() => {}, 1000);\n`,
  );
  writeFileSync(
    parent,
    `import { existsSync } from 'node:fs';\nimport { runChild } from ${JSON.stringify(CHILD_LIB)};\nrunChild(${JSON.stringify(spin)}, [${JSON.stringify(pidFile)}]).catch(() => {});\nconst wait = setInterval(() => { if (existsSync(${JSON.stringify(pidFile)})) process.kill(process.pid, 'SIGKILL'); }, 20);\n`,
  );
  const ran = spawnSync(process.execPath, [parent], { timeout: 30_000 });
  expect(ran.signal).toBe('SIGKILL');
  const pid = Number(readFileSync(pidFile, 'utf8'));
  expect(pid).toBeGreaterThan(0);
  let gone = false;
  for (let i = 0; i < 100 && !gone; i += 1) {
    gone = !alive(pid);
    if (!gone) await sleep(100);
  }
  if (!gone) process.kill(pid, 'SIGKILL');
  expect(gone).toBe(true);
}, 40_000);

it('a child exits when its IPC channel closes, the parent still alive (the signal that needs no polling)', async () => {
  const spin = join(dir, 'spin-ipc.mjs');
  const parent = join(dir, 'parent-ipc.mjs');
  writeFileSync(spin, `import ${JSON.stringify(CHILD_LIB)};\nsetInterval(() => {}, 1000);\n`);
  // The parent starts the child as runChild does (stdio with 'ipc', the parent's pid in the env), then
  // only closes the channel: its pid stays the child's ppid, so the ppid check alone would never fire.
  writeFileSync(
    parent,
    [
      `import { spawn } from 'node:child_process';`,
      `const child = spawn(process.execPath, [${JSON.stringify(spin)}], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'], env: { ...process.env, PRAZO_BENCH_PARENT: String(process.pid) } });`,
      `setTimeout(() => child.disconnect(), 300);`,
      `const started = performance.now();`,
      `const deadline = setTimeout(() => { child.kill('SIGKILL'); console.log('alive'); }, 5_000);`,
      `child.on('exit', (code) => { clearTimeout(deadline); console.log(code === 70 ? 'exited ' + Math.round(performance.now() - started) : 'code ' + code); });`,
    ].join('\n'),
  );
  const ran = spawnSync(process.execPath, [parent], { timeout: 30_000, encoding: 'utf8' });
  expect(ran.stdout.trim()).toMatch(/^exited \d+$/);
});
