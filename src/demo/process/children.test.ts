import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { FakeClock } from '../../clock/fake.js';
import { systemClock } from '../../clock/system.js';
import { ProcessGroup } from './children.js';

/** The parent side of the demo's processes, on real child processes running tiny scripts. */
const dir = mkdtempSync(join(tmpdir(), 'prazo-children-'));
function script(name: string, body: string): string {
  const path = join(dir, name);
  writeFileSync(path, body);
  return path;
}
const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

describe('ProcessGroup', () => {
  it('reports a child that dies while booting, with what it wrote on stderr', async () => {
    const group = new ProcessGroup({
      entry: script('crash.mjs', "process.stderr.write('boom: no config\\n'); process.exit(3);"),
      clock: systemClock,
      timeoutMs: 10_000,
      killGraceMs: 500,
    });
    await expect(group.spawn('crasher')).rejects.toThrow(
      /crasher \(pid \d+\) exited during boot \(code 3\):\nboom: no config/,
    );
    await group.close();
  });

  it('gives up on a child that never boots, and kills it on close', async () => {
    const clock = new FakeClock();
    const group = new ProcessGroup({
      entry: script('mute.mjs', 'setInterval(() => {}, 1000);'),
      clock,
      timeoutMs: 5_000,
      killGraceMs: 500,
    });
    const spawning = group.spawn('mute');
    const [pid] = group.pids();
    expect(pid).toBeGreaterThan(0);
    clock.advance(5_000);
    await expect(spawning).rejects.toThrow(/did not boot within 5000 ms/);
    await group.close();
    expect(group.pids()).toEqual([]);
    expect(alive(pid!)).toBe(false);
  });

  it('a child that ignores SIGTERM is killed after the grace period', async () => {
    const group = new ProcessGroup({
      entry: script(
        'stubborn.mjs',
        "process.on('SIGTERM', () => {}); process.on('disconnect', () => {}); process.send({ type: 'booted' }); setInterval(() => {}, 1000);",
      ),
      clock: systemClock,
      timeoutMs: 10_000,
      killGraceMs: 200,
    });
    const child = await group.spawn('stubborn');
    const t0 = performance.now();
    await group.close();
    expect(performance.now() - t0).toBeGreaterThanOrEqual(150);
    expect(alive(child.pid)).toBe(false);
  });
});
