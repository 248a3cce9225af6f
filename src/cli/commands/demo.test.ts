import { describe, expect, it } from 'vitest';
import { SCENARIOS } from '../../demo/scenarios.js';
import { run } from '../main.js';

/** The demo's CLI on bad input: exit 2 with every problem, before any process is started. */
describe('prazo demo: bad input', () => {
  it('exits 2 and names each problem', async () => {
    let err = '';
    const code = await run(['demo', '--stacks', 'naive,magic', '--scenarios', 'meteor', '--pool', '0'], {
      stderr: (s) => (err += s),
      stdout: () => {},
    });
    expect(code).toBe(2);
    expect(err).toContain('unknown stack "magic"');
    expect(err).toContain('unknown meteor');
    expect(err).toContain('`poolConnections` must be an integer in [1, 10000], got 0');
  });

  it('--help lists every scenario, the ones run only when named among them (issue 23)', async () => {
    let out = '';
    await run(['demo', '--help'], { stdout: (s) => (out += s), stderr: (s) => (out += s) });
    const help = out.replace(/\s+/g, ' ');
    expect(help).toContain(`comma-separated: ${SCENARIOS.map((s) => s.name).join(',')}`);
    for (const name of ['overload-hung', 'overload-slow', 'recover']) expect(help).toContain(name);
    const named = SCENARIOS.filter((s) => s.inDefaultRun === false).map((s) => s.name);
    expect(help).toContain(`(default: all but ${named.join(', ')}, run when named)`);
  });

  it('refuses a non-number duration', async () => {
    let err = '';
    expect(await run(['demo', '--duration', 'long'], { stderr: (s) => (err += s), stdout: () => {} })).toBe(
      2,
    );
    expect(err).toContain('--duration must be a non-negative number of seconds');
  });
});
