import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { alive, CLI, demoServices, ensureBuilt, waitFor } from './helpers.js';

/**
 * Every process the demo starts dies with it (SPEC X1): on Ctrl-C, when the demo itself is killed
 * (SIGKILL: no handler runs, the services see their IPC channel close), and when one service
 * crashes. Each case starts the real CLI, waits until its services run, and checks their pids.
 */
function startDemo(): { proc: ChildProcess; exited: Promise<number | null> } {
  const cwd = mkdtempSync(join(tmpdir(), 'prazo-demo-'));
  const proc = spawn(process.execPath, [CLI, 'demo', '--quick', '--no-report'], {
    cwd,
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  proc.stderr?.resume();
  const exited = new Promise<number | null>((resolve) =>
    proc.once('exit', (code, signal) => resolve(code ?? (signal ? 128 : null))),
  );
  return { proc, exited };
}

async function servicesOf(proc: ChildProcess): Promise<number[]> {
  const ready = await waitFor(() => demoServices(proc.pid).length >= 12, 20_000, 100);
  expect(ready, 'the demo started its services').toBe(true);
  return demoServices(proc.pid).map((p) => p.pid);
}

beforeAll(() => ensureBuilt(), 120_000);

describe('demo cleanup (no process left behind)', () => {
  it('Ctrl-C (SIGINT): exits 130 and stops every service', async () => {
    const { proc, exited } = startDemo();
    const pids = await servicesOf(proc);
    proc.kill('SIGINT');
    expect(await exited).toBe(130);
    expect(pids.filter(alive)).toEqual([]);
  }, 30_000);

  it('the demo killed outright (SIGKILL): its services notice and exit', async () => {
    const { proc, exited } = startDemo();
    const pids = await servicesOf(proc);
    proc.kill('SIGKILL');
    await exited;
    // Generous: on a loaded machine a dozen processes may take seconds to be scheduled and exit.
    expect(await waitFor(() => pids.filter(alive).length === 0, 15_000)).toBe(true);
  }, 30_000);

  it('a service crashes: the demo fails and stops the others', async () => {
    const { proc, exited } = startDemo();
    const pids = await servicesOf(proc);
    process.kill(pids[0]!, 'SIGKILL');
    expect(await exited).not.toBe(0);
    expect(pids.filter(alive)).toEqual([]);
  }, 30_000);
});
