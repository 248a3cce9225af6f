import { beforeAll, describe, expect, it } from 'vitest';
import { run } from '../../src/cli/main.js';
import type { DrillReport } from '../../src/drill/report.js';
import { demoServices, ensureBuilt } from './helpers.js';

/**
 * `prazo drill` (SPEC V2) against the demo's own services, on real processes and sockets, loaded by the demo's open-loop generator:
 * it passes against the calibrated prazo stack and fails against naive clients with 30 s timeouts,
 * whose pool runs dry (SPEC C6); bad input exits 2.
 */
async function drill(args: readonly string[]): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const code = await run(['drill', ...args], { stdout: (s) => (out += s), stderr: (s) => (err += s) });
  return { code, out, err };
}

beforeAll(() => ensureBuilt(), 120_000);

describe('prazo drill against the demo services (SPEC V2, C6)', () => {
  it('passes against a calibrated service: the independent route keeps answering', async () => {
    const { code, out } = await drill(['--duration', '3', '--json']);
    const report = JSON.parse(out) as DrillReport;
    expect(report.doubleLatencyMs).toBe(350); // ceil(250 × 1.4): the supplier's configured timeout
    expect(report.doubleArrivals).toBeGreaterThan(30);
    expect(report.independent.successPct).toBeGreaterThanOrEqual(99.9);
    expect(report.little).toMatchObject({ poolSize: 15, rps: 30, maxLatencyMs: 500, ok: true });
    expect(report.pool!.meanBusy).toBeLessThan(0.75 * report.pool!.connections);
    expect(report.pass).toBe(true);
    expect(code).toBe(0);
    expect(demoServices(process.pid)).toEqual([]);
  }, 30_000);

  it('fails against naive 30 s timeouts: the pool runs dry and the independent route with it', async () => {
    const { code, out } = await drill(['--duration', '3', '--demo-stack', 'naive']);
    expect(out).toContain('answering at 30000 ms');
    expect(out).toMatch(
      /Little's law: 15 connections at 30 req\/s tolerate 500 ms per call.*the pool runs dry/,
    );
    expect(out).toMatch(/measured pool: [\d.]+ busy on average, 15 at most, of 15/);
    expect(out).toMatch(/^FAIL: independent routes: [\d.]+% succeeded, below 99.9%/m);
    expect(code).toBe(1);
    expect(demoServices(process.pid)).toEqual([]);
  }, 30_000);

  it('exits 2 on bad input, naming the problem, before starting anything', async () => {
    const unknown = await drill(['--dependency', 'nope']);
    expect(unknown.code).toBe(2);
    expect(unknown.err).toMatch(/"nope" is not in .*\(orders, inventory, supplier\)/);
    const target = await drill(['--target', 'ftp://127.0.0.1:1']);
    expect(target.code).toBe(2);
    expect(target.err).toContain('`target` must be an http(s) URL');
    expect(target.err).toContain('`independent` routes are required');
    expect((await drill(['--rate', 'fast'])).code).toBe(2);
    expect((await drill(['--config', 'no-such-file.yaml'])).code).toBe(2);
  });
});
