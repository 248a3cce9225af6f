import { describe, expect, it } from 'vitest';
import { FakeClock } from '../../clock/fake.js';
import { createProgressPrinter } from './progress.js';

const ok = { route: 'checkout', sentMs: 0, latencyMs: 90, outcome: 'ok', status: 200 } as const;

describe('demo progress display', () => {
  it('outside a terminal: one line per finished step', () => {
    let out = '';
    const p = createProgressPrinter({ write: (s) => (out += s), tty: false, clock: new FakeClock() });
    p.onProgress({
      type: 'scenario',
      index: 0,
      total: 2,
      name: 'down',
      title: 'Supplier down',
      description: 'gone',
    });
    p.onProgress({ type: 'phase', phase: 'load', stack: 'prazo', loadMs: 3_000 });
    p.onProgress({ type: 'user', stack: 'prazo', result: ok });
    p.onProgress({ type: 'user', stack: 'prazo', result: { ...ok, route: 'catalog' } });
    p.onProgress({ type: 'drained', stack: 'prazo', waitedMs: 2_500, cutOff: true });
    p.finish();
    expect(out).toBe(
      '\n[1/2] Supplier down: gone\n' +
        '    prazo     0 ms / 3.0 s  checkout 1 ok, 0 failed, 0 gave up  ·  catalog 1/1 ok  (still working 2.5 s later: cut off)\n',
    );
  });

  it('on a terminal: the line is redrawn in place, at most every 100 ms', () => {
    const clock = new FakeClock();
    const writes: string[] = [];
    const p = createProgressPrinter({ write: (s) => writes.push(s), tty: true, clock });
    p.onProgress({ type: 'phase', phase: 'load', stack: 'naive', loadMs: 1_000 });
    for (let i = 0; i < 10; i += 1) p.onProgress({ type: 'user', stack: 'naive', result: ok });
    clock.advance(150);
    p.onProgress({ type: 'user', stack: 'naive', result: { ...ok, outcome: 'timeout' } });
    expect(writes).toHaveLength(2);
    expect(
      writes[1]!.startsWith('\r\u001b[2K    naive     150 ms / 1.0 s  checkout 10 ok, 0 failed, 1 gave up'),
    ).toBe(true);
    p.finish();
    expect(writes[2]).toBe('\n');
  });
});
